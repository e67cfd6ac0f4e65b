"""Slow twins of every crash the dry run observes in a fast cell: still observed when the cell is slow?

The corpora: the JunoBench replay corpus (each buggy target, with its fixed target as the clean
twin) and the cells of ``benchmarks/audit_notebooks`` and ``examples/`` that crash when walked in
order. Per cell:

1. in a fresh kernel holding the cell's state (setup cells replayed, or the cells above it run), the
   plain cell is dry-run (the fast verdict); a crash cell is kept when that verdict is an observed
   crash with the exception and line its real run then raises;
2. its slow twins (``slow_twins_make.py``), and those of its fixed version, are dry-run through the
   real link and pipeline (the dry-run layer alone) at the typing budget:
   ``loop`` and ``training`` (prefixes binding only fresh names: the truth is the plain cell's real
   run in the same state) and ``scaled`` (the data it reads repeated to 100,000 rows or more, in a
   second kernel, with a row-wise step first: the truth is the plain cell's real run on that state;
   a twin whose truth differs from the fast cell's is dropped, and counted);
3. the verdicts are compared with the truth: observed (right exception and line), another crash, a
   clean verdict, or withheld (no verdict: the headline says why); on clean twins, false alarms.

    python benchmarks/slow_twins.py [--kinds loop,scaled,training] [--limit N] [--cases SUBSTRING]
                                    [--budget 3] [--corpora replay,audit,examples] [--json FILE]

To measure another checkout's crane with this file, put that checkout first on ``PYTHONPATH`` (the
first lines printed say which crane was imported, and where the kernel-side agent comes from).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import crane_lsp
from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel import probe_install
from crane_lsp.kernel.link import ExecutionResult, KernelLink
from crane_lsp.kernel.replay import sanitize, start_and_replay
from crane_lsp.notebook import Notebook, read_notebook
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

sys.path.insert(1, str(Path(__file__).resolve().parent))  # after the crane being measured

from slow_twins_make import Prefixes, calibrate, scale, twin
from slow_twins_report import Twin, dropped_twin, report

REPO = Path(__file__).resolve().parents[1]
KINDS = ("loop", "scaled", "training")
REAL_TIMEOUT = 300.0


@dataclass(frozen=True)
class CellRef:
    """A target cell: its notebook, its index among the code cells, how its state is rebuilt."""

    name: str  # e.g. replay/NBspecific_1/buggy
    path: Path
    target: int
    walk: bool  # True: run the cells above it in order; False: the replay corpus's replay order
    fixed: CellRef | None = None  # the clean version (replay corpus)


@dataclass
class Site:
    """What one target cell gave: its fast verdict, its truth, its twins, or why it was left out."""

    name: str
    role: str  # crash | clean | left out
    fast: str = ""
    fast_s: float = 0.0
    truth: str = ""
    why_left_out: str = ""
    twins: list[Twin] = field(default_factory=list)


def _said(p: Prediction) -> str:
    if p.crash:
        return f"{p.exception} at line {(p.line or 0) + 1}"
    return "clean" if "ran clean" in p.message else "no verdict"


def _truth(r: ExecutionResult) -> str:
    if r.status == "timeout":
        return "timeout"
    if r.ok:
        return "clean"
    return f"{r.ename} at line {(r.line or 0) + 1}"


def _shift(truth: str, lines: int) -> tuple[str | None, int | None]:
    """The exception and 0-based line of ``truth`` in a twin whose prefix adds ``lines``."""
    if truth in ("clean", "timeout"):
        return None, None
    ename, _, line = truth.partition(" at line ")
    return ename, int(line) - 1 + lines


async def _state(ref: CellRef) -> KernelLink:
    """A fresh kernel holding the state ``ref``'s cell meets (the caller closes it)."""
    nb = read_notebook(ref.path)
    if not ref.walk:
        link, _report = await start_and_replay(nb, ref.target, cell_timeout=REAL_TIMEOUT)
        return link
    link = await KernelLink.start(ref.path.parent, quiet=True)
    try:
        for cell in nb.code_cells[: ref.target]:
            await link.execute(sanitize(cell.source), timeout=REAL_TIMEOUT)
    except BaseException:
        await link.close()
        raise
    return link


async def _dry(pipeline: Pipeline, cell: str) -> tuple[Prediction, float]:
    started = time.perf_counter()
    prediction = (await pipeline.predict(cell, layers={"dryrun"})).prediction
    return prediction, time.perf_counter() - started


def _record(site: Site, kind: str, prediction: Prediction, took: float, truth: str, lines: int) -> Twin:
    ename, line = _shift(truth, lines)
    found = Twin(
        site=site.name,
        role=site.role,
        kind=kind,
        truth_exception=ename,
        truth_line=line,
        crash=prediction.crash,
        exception=prediction.exception,
        line=prediction.line,
        certainty=str(prediction.certainty),
        message=prediction.message,
        seconds=took,
    )
    site.twins.append(found)
    print(f"    {kind:>8}: {found.outcome:<14} {took:5.2f} s  {found.headline}", flush=True)
    return found


async def study(ref: CellRef, role: str, kinds: list[str], prefixes: Prefixes, settings: Settings) -> Site:
    """Step 1 to 3 for one target cell (``role``: crash for a buggy or walked cell, clean for a fixed one)."""
    site = Site(ref.name, role)
    source = read_notebook(ref.path).code_cells[ref.target].source
    link = await _state(ref)
    try:
        pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
        fast, site.fast_s = await _dry(pipeline, source)
        site.fast = _said(fast)
        print(f"  {ref.name}: fast dry run {site.fast} ({site.fast_s:.2f} s)", flush=True)
        if role == "crash" and not fast.crash:
            site.role, site.why_left_out = "left out", "the fast dry run observed no crash"
            return site
        slow = {}
        for kind in kinds:
            made = twin(prefixes.get(kind), source) if kind != "scaled" else None
            if made is not None:
                slow[kind] = (made, await _dry(pipeline, made[0]))
        real = await link.execute(source, timeout=REAL_TIMEOUT)
    finally:
        await link.close()
    site.truth = _truth(real)
    if site.truth == "timeout":
        site.role, site.why_left_out = "left out", "the real run did not finish"
        return site
    if site.fast != site.truth and fast.crash:
        site.role, site.why_left_out = "left out", f"fast verdict {site.fast} is not the real {site.truth}"
        return site
    if site.truth != "clean":
        if role == "clean" and not fast.crash:
            site.role, site.why_left_out = "left out", f"fixed, but really {site.truth}, not observed fast"
            return site
        site.role = "crash"
    for kind, ((_cell, lines), (prediction, took)) in slow.items():
        _record(site, kind, prediction, took, site.truth, lines)
    if "scaled" in kinds:
        try:
            await _scaled(ref, site, source, settings)
        except Exception as exc:  # its kernel died (out of memory, say): the other twins stand
            site.twins.append(dropped_twin(site, "scaled", f"the benchmark failed: {type(exc).__name__}"))
            print(f"      scaled: failed ({type(exc).__name__}: {exc})", flush=True)
    return site


async def _scaled(ref: CellRef, site: Site, source: str, settings: Settings) -> None:
    """The scaled twin, in a second kernel: its data repeated, a row step first, the truth run on it."""
    link = await _state(ref)
    try:
        scaled = await scale(link, source)
        if "error" in scaled:
            site.twins.append(dropped_twin(site, "scaled", scaled["error"]))
            print(f"      scaled: not made ({scaled['error']})", flush=True)
            return
        made = twin(scaled["step"] + "\n", source)
        if made is None:
            site.twins.append(dropped_twin(site, "scaled", "a cell magic"))
            return
        pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
        prediction, took = await _dry(pipeline, made[0])
        truth = _truth(await link.execute(source, timeout=REAL_TIMEOUT))
    finally:
        await link.close()
    if truth != site.truth:
        site.twins.append(dropped_twin(site, "scaled", f"scaled, the real run gives {truth}"))
        print(f"      scaled: dropped (its real run gives {truth}, the fast cell's {site.truth})", flush=True)
        return
    found = _record(site, "scaled", prediction, took, truth, made[1])
    found.detail = {"scaled": scaled["scaled"], "step": scaled["step"], "step_s": round(scaled["step_s"], 1)}


async def _guarded(ref: CellRef, role: str, kinds: list[str], prefixes: Prefixes, settings: Settings) -> Site:
    """``study``, with a kernel that died (out of memory, say) reported as a cell left out."""
    try:
        return await study(ref, role, kinds, prefixes, settings)
    except Exception as exc:
        print(f"    failed: {type(exc).__name__}: {exc}", flush=True)
        return Site(ref.name, "left out", why_left_out=f"the benchmark failed: {type(exc).__name__}")


def replay_refs(root: Path) -> list[CellRef]:
    refs = []
    for case in sorted(p for p in root.iterdir() if (p / "meta.json").exists()):
        made = {}
        for version in ("fixed", "buggy"):
            path = case / f"{version}.ipynb"
            if path.exists():
                nb = read_notebook(path)
                made[version] = CellRef(
                    f"replay/{case.name}/{version}", path, _tagged(nb), False, made.get("fixed")
                )
        if "buggy" in made:
            refs.append(made["buggy"])
    return refs


def _tagged(nb: Notebook) -> int:
    tagged = [i for i, c in enumerate(nb.code_cells) if "replay-target" in c.tags]
    return tagged[-1] if tagged else len(nb.code_cells) - 1


async def walked_refs(groups: set[str]) -> list[CellRef]:
    """The cells of the audit and example notebooks that crash when the notebook is walked in order."""
    paths = []
    if "audit" in groups:
        paths += sorted((REPO / "benchmarks" / "audit_notebooks").glob("*.ipynb"))
    if "examples" in groups:
        paths += sorted((REPO / "examples").glob("*/*.ipynb"))
    refs = []
    for path in paths:
        nb = read_notebook(path)
        link = await KernelLink.start(path.parent, quiet=True)
        try:
            for i, cell in enumerate(nb.code_cells):
                result = await link.execute(sanitize(cell.source), timeout=REAL_TIMEOUT)
                if result.status == "error":
                    refs.append(CellRef(f"{path.parent.name}/{path.stem}/cell {i + 1}", path, i, True))
        finally:
            await link.close()
        print(
            f"walked {path.relative_to(REPO)}: {sum(r.path == path for r in refs)} crashing cells", flush=True
        )
    return refs


async def run(args: argparse.Namespace) -> list[Site]:
    kinds = [k for k in args.kinds.split(",") if k]
    groups = set(args.corpora.split(","))
    settings = Settings(dry_run="on", dry_run_budget_s=args.budget)
    prefixes = await calibrate()
    print(f"calibrated: loop of {prefixes.loop_n:,} iterations, {prefixes.epochs} epochs (~12 CPU s each)")
    refs = replay_refs(Path(args.replay)) if "replay" in groups else []
    if groups & {"audit", "examples"} and (not args.limit or len(refs) < args.limit):
        refs += await walked_refs(groups)
    refs = [r for r in refs if args.cases in r.name][: args.limit or None]
    sites = []
    started = time.perf_counter()
    for n, ref in enumerate(refs, 1):
        print(f"[{time.perf_counter() - started:5.0f} s] {n}/{len(refs)} {ref.name}", flush=True)
        site = await _guarded(ref, "crash", kinds, prefixes, settings)
        sites.append(site)
        if site.role == "left out":
            print(f"    left out: {site.why_left_out}", flush=True)
        elif ref.fixed is not None:
            sites.append(await _guarded(ref.fixed, "clean", kinds, prefixes, settings))
    return sites


def _site(saved: dict[str, Any]) -> Site:
    twins = [Twin(**t) for t in saved.pop("twins")]
    return Site(**saved, twins=twins)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help="of loop, scaled, training")
    parser.add_argument("--limit", type=int, default=0, help="at most N crash cells (0: all)")
    parser.add_argument("--cases", default="", help="only cells whose name contains this")
    parser.add_argument("--budget", type=float, default=3.0, help="the dry run's budget (s)")
    parser.add_argument("--corpora", default="replay,audit,examples")
    parser.add_argument("--replay", default=str(Path(crane_lsp.__file__).parent / "data" / "junoreplay"))
    parser.add_argument("--json", default="", help="write every twin and site here")
    parser.add_argument("--from-json", default="", help="print the tables of an earlier --json run")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        report([_site(s) for s in saved["sites"]], saved["budget"], saved["seconds"])
        return 0
    agent = Path(probe_install.__file__).parent / "agent"
    print(f"crane from {Path(crane_lsp.__file__).parent}; kernel agent from {agent}", flush=True)
    started = time.perf_counter()
    sites = asyncio.run(run(args))
    total = time.perf_counter() - started
    report(sites, args.budget, total)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"budget": args.budget, "seconds": total, "sites": [asdict(s) for s in sites]}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
