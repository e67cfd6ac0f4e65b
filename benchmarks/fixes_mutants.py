"""Verified fixes on every crash the mutant benchmark injects: the original cell is the reference fix.

The replay corpus (benchmarks/fixes.py) has 29 crashes and human fixes; this one is systematic. For every
notebook of the mutant benchmark's corpora (``examples/*``, ``benchmarks/audit_notebooks/*``, the fixed
replay notebooks: ``benchmarks/mutants.py``), a fresh kernel runs the cells in order. Before each cell
runs, every bug class proposes its mutants of the cell and each is run for real in a forked copy of the
kernel (a cell that crashes as it is has no reference fix: its mutants are skipped). For each mutant
that really crashes:

1. crane predicts it (the checks, then the dry run with its budget) and ``offer_fixes`` dry-runs up to
   6 candidates (a pair of changes where the first gets further);
2. the top verified fix is applied to the mutant and REALLY run in a forked copy: it must not raise;
3. what it leaves bound (the names either cell binds: type, shape, columns, text columns, length,
   fitted features) is compared with what the ORIGINAL cell leaves in another forked copy: the inverse
   of the injected bug is the reference fix.

Reported per bug class: crashes, predicted, with a verified fix, with only a gets-further fix,
verified fixes that raise when really run (must be 0), verified fixes whose state agrees with the
original's, and the time from the verdict to the first verified fix.

    python benchmarks/fixes_mutants.py [--only NAME,...] [--per-class K] [--max-mutants N] [--json F] [-v]

``CRANE_ROOT=/path/to/checkout`` measures the fixes of another checkout (a ``git worktree`` of an older
commit), as benchmarks/mutants.py does for the checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "benchmarks"))

import mutants as corpus  # noqa: E402  (benchmarks/mutants.py: the corpora, bug classes, forked runs)
import nbformat  # noqa: E402

import crane_lsp  # noqa: E402
from crane_lsp.analysis.parse import analyze  # noqa: E402
from crane_lsp.dryrun import DryRunner  # noqa: E402
from crane_lsp.fixes import offer_fixes  # noqa: E402
from crane_lsp.fixes.edit import apply  # noqa: E402
from crane_lsp.kernel.link import KernelLink  # noqa: E402
from crane_lsp.pipeline import Pipeline  # noqa: E402
from crane_lsp.settings import Settings  # noqa: E402


@dataclass
class Row:
    notebook: str
    cell: int
    cls: str
    what: str
    truth: str  # the exception the mutant really raised
    predicted: str | None = None  # the exception crane predicted (None: no crash predicted)
    offered: int = 0
    outcome: str = ""  # of the top offered fix
    title: str = ""
    verified: bool = False
    verify_s: float | None = None
    real_after_fix: str = ""  # the exception the fixed mutant really raised ("": clean)
    agree: bool | None = None  # the fixed mutant's state == the original cell's
    differences: list[str] = field(default_factory=list)
    note: str = ""
    message: str = ""  # crane's verdict, in its words


def bound(*sources: str) -> list[str]:
    return sorted({a.name for s in sources for a in analyze(s).defines})


async def fix_one(
    link: KernelLink, kernel: Any, settings: Settings, original: str, mutant: str, row: Row, timeout: float
) -> None:
    """Predict ``mutant``, verify its fixes, and judge the top verified one against ``original``."""
    runner = DryRunner(link, settings)
    prediction = (
        await Pipeline(settings, link=link, dryrun=runner).predict(mutant, layers={"checks", "dryrun"})
    ).prediction
    row.predicted = prediction.exception if prediction.crash else None
    row.message = prediction.message[:200]
    if not prediction.crash:
        return
    started = time.perf_counter()
    fixed = await offer_fixes(runner, mutant, prediction, limit=6)
    row.note = next((n for n in fixed.notes if n.startswith("fixes:")), "")
    row.offered = len(fixed.fixes)
    if not fixed.fixes:
        return
    top = fixed.fixes[0]
    row.outcome = top.verification.outcome if top.verification else ""
    row.title = top.title
    row.verified = top.verified()
    if not row.verified:
        return
    row.verify_s = time.perf_counter() - started
    edited = apply(mutant, top)
    assert edited is not None
    names = bound(original, edited)
    mine = kernel.fork_run(edited, timeout=timeout, names=names)
    row.real_after_fix = mine.get("ename") or ""
    if row.real_after_fix:
        return
    theirs = kernel.fork_run(original, timeout=timeout, names=names)
    if theirs.get("ename"):  # the original cell itself fails in a copy: nothing to compare with
        row.note += f"; the original raised {theirs['ename']} in a copy"
        return
    a, b = mine.get("state", {}), theirs.get("state", {})
    row.differences = [f"{n}: fix {a.get(n)} vs original {b.get(n)}" for n in names if a.get(n) != b.get(n)]
    row.agree = not row.differences


async def walk(
    name: str, path: Path, args: argparse.Namespace, budget: dict[str, int], skipped: dict[str, int]
) -> list[Row]:
    """One notebook: its cells in order, each cell's crashing mutants fixed before the cell runs."""
    nb = nbformat.read(path, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    kernel = corpus.Kernel(path.parent)
    settings = Settings(dry_run="on", dry_run_budget_s=args.budget)
    rows: list[Row] = []
    try:
        async with await KernelLink.connect(kernel.km.connection_file) as link:
            for i, src in enumerate(cells):
                names = sorted(set(corpus._NAME.findall(src)))
                info = kernel.info(names) if names else {}
                proposed = corpus.mutants(src, info, args.per_class) if budget["left"] > 0 else []
                if proposed and kernel.fork_run(src, timeout=args.timeout)["ename"] is not None:
                    proposed = []  # the cell crashes as it is: no reference fix for its mutants
                    skipped["cells"] += 1
                for m in proposed:
                    if budget["left"] <= 0:
                        break
                    budget["left"] -= 1
                    truth = kernel.fork_run(m.source, timeout=args.timeout)
                    if truth["ename"] in (None, "<timeout>"):
                        continue
                    row = Row(name, i, m.cls, m.what, truth["ename"])
                    try:
                        await fix_one(link, kernel, settings, src, m.source, row, args.timeout)
                    except Exception as exc:  # one mutant's failure must not end the walk
                        row.note = f"error: {exc!r}"[:200]
                    rows.append(row)
                    if args.verbose:
                        shown = row.title if row.offered else "-"
                        print(
                            f"  {name}[{i}] {m.cls:<22} {row.truth:<14} -> {row.predicted or '-':<14} "
                            f"{row.outcome or '-':<12} {shown[:50]:<50} agree={row.agree}"
                        )
                        for d in row.differences[:3]:
                            print(f"      {d[:200]}")
                        if not row.verified:
                            print(f"      {m.what[:80]} | {row.message[:150]} | {row.note[:120]}")
                kernel.run(src)
    finally:
        kernel.close()
    return rows


def _share(n: int, d: int) -> str:
    return f"{n}/{d} ({n / d:.0%})" if d else "0/0"


def report(rows: list[Row]) -> None:
    by: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by[r.cls].append(r)
    print(f"\n{'class':<24} {'crashes':>7} {'predicted':>9} {'verified':>9} {'further':>8} {'agree':>6}")
    for cls in [*sorted(by), "ALL"]:
        rs = rows if cls == "ALL" else by[cls]
        verified = [r for r in rs if r.verified]
        print(
            f"{cls:<24} {len(rs):>7} {sum(r.predicted is not None for r in rs):>9} {len(verified):>9} "
            f"{sum(r.outcome == 'gets-further' for r in rs):>8} {sum(bool(r.agree) for r in verified):>6}"
        )
    verified = [r for r in rows if r.verified]
    predicted = [r for r in rows if r.predicted is not None]
    print(f"\ncrashing mutants: {len(rows)}; predicted: {_share(len(predicted), len(rows))}")
    of_predicted = f"{len(verified)}/{len(predicted)}"
    print(f"with a verified fix: {_share(len(verified), len(rows))} (of the predicted: {of_predicted})")
    print(f"with only a gets-further fix: {sum(r.outcome == 'gets-further' for r in rows)}")
    raised = [r for r in verified if r.real_after_fix]
    print(f"verified fixes that raise when really run (must be 0): {len(raised)}")
    for r in raised:
        print(f"  {r.notebook}[{r.cell}] {r.cls}: {r.title} -> {r.real_after_fix}")
    judged = [r for r in verified if r.agree is not None]
    agreeing = _share(sum(bool(r.agree) for r in judged), len(judged))
    print(f"verified fixes whose state agrees with the original cell's: {agreeing}")
    times = sorted(r.verify_s for r in verified if r.verify_s is not None)
    if times:
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"verdict to first verified fix: median {statistics.median(times):.2f} s, p95 {p95:.2f} s")
    errors = [r for r in rows if r.note.startswith("error")]
    if errors:
        print(f"mutants whose run failed in the benchmark: {len(errors)} (first: {errors[0].note})")


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated substrings of notebook paths")
    ap.add_argument("--limit", type=int, default=0, help="stop after this many notebooks (0: all)")
    ap.add_argument("--per-class", type=int, default=2, help="mutants per bug class per cell")
    ap.add_argument("--max-mutants", type=int, default=2000)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a forked run may take")
    ap.add_argument("--budget", type=float, default=3.0, help="the dry run's budget (s)")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    print(f"fixes from {Path(crane_lsp.__file__).parent}")  # CRANE_ROOT=<checkout> measures another
    books = corpus.corpora(set(args.only.split(",")) if args.only else None)
    if args.limit:
        books = books[: args.limit]
    started = time.perf_counter()
    budget = {"left": args.max_mutants}
    skipped = {"cells": 0}
    rows: list[Row] = []
    for name, path in books:
        t0 = time.perf_counter()
        found = await walk(name, path, args, budget, skipped)
        rows += found
        verified = sum(r.verified for r in found)
        took = time.perf_counter() - t0
        print(f"{name}: {len(found)} crashing mutants, {verified} verified fixes ({took:.0f} s)", flush=True)
    report(rows)
    print(f"cells that crash as they are (their mutants not scored): {skipped['cells']}")
    print(f"wall: {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0 if not any(r.verified and r.real_after_fix for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
