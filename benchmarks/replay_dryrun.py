"""Dry-run every JunoBench replay case: is each buggy target observed, and is no fixed target flagged?

For every case under ``crane_lsp/data/junoreplay`` (or ``--cases DIR``) and both versions (``buggy.ipynb``,
``fixed.ipynb``): a fresh kernel in the case folder replays the setup cells, the target cell (tagged
``replay-target``, else the last code cell) is dry-run in ``on`` mode with the default budget (3 s), then
really run for the truth. ``safe`` mode is the same dry run unless the static screen refuses the cell.
One kernel per notebook, sequential. Prints one row per notebook and the totals:

- buggy targets observed with the labelled exception class (``meta.json`` ``ename``);
- fixed targets flagged (must be 0: a flagged fixed target is a sandbox bug);
- the reasons for the rest (timeout, blocked, exits, unavailable, screened, ran clean).

Run by hand: ``python benchmarks/replay_dryrun.py [--cases DIR] [--only SUBSTRING] [--budget S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.analysis.parse import analyze
from crane_lsp.dryrun import DryRunner, DryRunOutcome, screen
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.notebook import read_notebook
from crane_lsp.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO / "crane_lsp" / "data" / "junoreplay"  # shipped with the package


@dataclass
class Row:
    case: str
    version: str  # buggy | fixed
    label: str  # labelled exception class (meta.json), lower case
    truth: str  # what really running the target raised ("" = ran clean)
    truth_line: int | None  # 1-based
    outcome: DryRunOutcome | None
    screened: str  # the safe-mode screen's reason, "" when the cell passes
    setup_failures: int
    replay_s: float
    real_s: float
    error: str = ""

    @property
    def on_verdict(self) -> str:
        if self.outcome is None:
            return f"error: {self.error}"
        if self.outcome.outcome == "raised":
            return f"raised {self.outcome.exception}"
        return self.outcome.outcome

    @property
    def safe_verdict(self) -> str:
        return "screened" if self.screened else self.on_verdict

    def observed(self, mode: str) -> bool:
        """A buggy target observed with the labelled exception class."""
        if mode == "safe" and self.screened:
            return False
        o = self.outcome
        return o is not None and o.outcome == "raised" and (o.exception or "").lower() == self.label

    def flagged(self, mode: str) -> bool:
        if mode == "safe" and self.screened:
            return False
        return self.outcome is not None and self.outcome.outcome == "raised"


@contextlib.contextmanager
def case_copy(case: Path) -> Iterator[Path]:
    """A temporary copy of a case folder: a notebook's real runs write where it lies (``np.savetxt``),
    and the cases are the package's data."""
    with tempfile.TemporaryDirectory(prefix="crane-case-") as work:
        copy = Path(work) / case.name
        shutil.copytree(case, copy)
        yield copy


def target_index(nb: object) -> int:
    cells = nb.code_cells  # type: ignore[attr-defined]
    tagged = [i for i, c in enumerate(cells) if "replay-target" in c.tags]
    return tagged[-1] if tagged else len(cells) - 1


async def run_notebook(case_dir: Path, version: str, budget: float) -> Row:
    meta = json.loads((case_dir / "meta.json").read_text())
    label = str(meta.get("ename", "")).lower()
    nb = read_notebook(case_dir / f"{version}.ipynb")
    target = target_index(nb)
    source = nb.code_cells[target].source
    screened = screen(analyze(source))
    t0 = time.perf_counter()
    link, report = await start_and_replay(nb, target, cell_timeout=120)
    replay_s = time.perf_counter() - t0
    try:
        runner = DryRunner(link, Settings(dry_run="on", dry_run_budget_s=budget))
        outcome: DryRunOutcome | None = None
        error = ""
        try:
            outcome = await runner.run_outcome(source)
        except Exception as exc:  # report it as a row, keep going
            error = f"{type(exc).__name__}: {exc}"
        t1 = time.perf_counter()
        real = await link.execute(source, timeout=120)
        real_s = time.perf_counter() - t1
    finally:
        await link.close()
    truth = "" if real.ok else (real.ename or real.status)
    return Row(
        case=case_dir.name,
        version=version,
        label=label,
        truth=truth,
        truth_line=None if real.line is None else real.line + 1,
        outcome=outcome,
        screened="" if screened.safe else screened.reason,
        setup_failures=len(report.failures),
        replay_s=replay_s,
        real_s=real_s,
        error=error,
    )


def reason(row: Row, mode: str) -> str:
    """Why a buggy target was not observed with its label (or why a fixed one was flagged)."""
    if mode == "safe" and row.screened:
        return "screened"
    o = row.outcome
    if o is None:
        return "error"
    if o.outcome == "raised":
        return f"raised another class ({o.exception})"
    return o.outcome if o.outcome != "completed" else "ran clean"


def print_report(rows: list[Row], console: Console, budget: float) -> None:
    table = Table(title=f"dry run of JunoBench replay targets (budget {budget:g} s)")
    for col in (
        "case",
        "ver",
        "label",
        "truth (line)",
        "on: dry run (line)",
        "safe",
        "dry ms",
        "real s",
        "replay s",
    ):
        table.add_column(col)
    for r in rows:
        o = r.outcome
        on = r.on_verdict + (f" ({o.line})" if o and o.line else "")
        if o and o.outcome in ("blocked", "timeout", "exits", "unavailable") and o.message:
            on += f": {o.message[:40]}"
        truth = (r.truth or "clean") + (f" ({r.truth_line})" if r.truth_line else "")
        ms = f"{(o.round_trip_s or 0) * 1000:.0f}" if o else "-"
        safe = "screened" if r.screened else "="
        table.add_row(r.case, r.version, r.label, truth, on, safe, ms, f"{r.real_s:.1f}", f"{r.replay_s:.1f}")
    console.print(table)
    buggy = [r for r in rows if r.version == "buggy"]
    fixed = [r for r in rows if r.version == "fixed"]
    for mode in ("on", "safe"):
        observed = [r for r in buggy if r.observed(mode)]
        flagged = [r for r in fixed if r.flagged(mode)]
        false_flags = [r for r in flagged if not r.truth]  # the real run is clean: a sandbox bug
        rest = Counter(reason(r, mode) for r in buggy if not r.observed(mode))
        line_ok = sum(1 for r in observed if r.outcome and r.outcome.line == r.truth_line)
        reproducible = [r for r in buggy if r.truth.lower() == r.label]
        seen_of_reproducible = sum(1 for r in reproducible if r.observed(mode))
        console.print(
            f"[bold]{mode:>4}[/bold]: buggy targets observed with the labelled class "
            f"{len(observed)}/{len(buggy)} ({seen_of_reproducible}/{len(reproducible)} of "
            f"those whose real run raises it here; same line as the real run: {line_ok}/{len(observed)})"
        )
        console.print(
            f"      fixed targets flagged while their real run is clean: {len(false_flags)}/{len(fixed)}"
            + (f" [red]({', '.join(r.case for r in false_flags)})[/red]" if false_flags else "")
            + f"; flagged and the real run raises the same here too: {len(flagged) - len(false_flags)}"
            + (f" ({', '.join(f'{r.case}: {r.truth}' for r in flagged if r.truth)})" if flagged else "")
        )
        if rest:
            console.print(f"      rest of the buggy targets: {dict(rest)}")
        fixed_rest = Counter(reason(r, mode) for r in fixed if not r.flagged(mode))
        console.print(f"      fixed targets not flagged: {dict(fixed_rest)}")
    agree = sum(
        1
        for r in rows
        if r.outcome
        and (
            (r.outcome.outcome == "raised" and r.outcome.exception == r.truth)
            or (r.outcome.outcome == "completed" and not r.truth)
        )
    )
    decided = sum(1 for r in rows if r.outcome and r.outcome.outcome in ("raised", "completed"))
    console.print(f"dry run agrees with the real run: {agree}/{decided} decided ({len(rows)} notebooks)")
    truth_agrees = sum(1 for r in buggy if r.truth.lower() == r.label) + sum(1 for r in fixed if not r.truth)
    console.print(f"real runs behaving as labelled: {truth_agrees}/{len(rows)}")
    times = [r.outcome.round_trip_s for r in rows if r.outcome and r.outcome.round_trip_s is not None]
    if times:
        console.print(
            f"dry-run round trip: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms; replaying the setup cells in a fresh kernel: median "
            f"{statistics.median(r.replay_s for r in rows):.1f} s"
        )


async def main_async(args: argparse.Namespace) -> list[Row]:
    console = Console(stderr=True)
    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "meta.json").exists())
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    rows: list[Row] = []
    started = time.perf_counter()
    for case in cases:
        for version in ("buggy", "fixed"):
            if not (case / f"{version}.ipynb").exists():
                continue
            with case_copy(case) as copy:
                row = await run_notebook(copy, version, args.budget)
            rows.append(row)
            console.print(
                f"[{time.perf_counter() - started:5.0f} s] {case.name}/{version}: on={row.on_verdict} "
                f"truth={row.truth or 'clean'}",
                highlight=False,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=str(DEFAULT_CASES), help="the junoreplay folder")
    parser.add_argument("--only", default=None, help="only cases whose name contains this")
    parser.add_argument("--budget", type=float, default=Settings().dry_run_budget_s, help="seconds")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = asyncio.run(main_async(args))
    console = Console(width=160)
    print_report(rows, console, args.budget)
    console.print(f"total {time.perf_counter() - t0:.0f} s for {len(rows)} notebooks")
    false_flags = [r for r in rows if r.version == "fixed" and r.flagged("on") and not r.truth]
    return 1 if false_flags else 0


if __name__ == "__main__":
    sys.exit(main())
