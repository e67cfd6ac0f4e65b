"""The facts at the failing line on the JunoBench replay corpus: the diagnosis a user reads, before and
after, and what the facts cost the dry run.

For every crashing (``buggy``) target under ``crane_lsp/data/junoreplay`` (or ``--cases DIR``): a fresh
kernel replays the setup cells, the built-in checks look at the target (a certain finding decides the
case before any dry run: the table says so), then the target is dry-run ``--repeat`` times with the
facts and as many times without them, alternately. Prints, per case, the message a user reads without
the facts (the raw exception) and with them (the cause, where the facts make it plain), the evidence
rows and origins the facts add, and the dry run's round trip with and without them (medians), then
the totals. ``--markdown FILE`` also writes the table as Markdown (for a note).

Run by hand: ``python benchmarks/failure_facts.py [--cases DIR] [--only SUBSTRING] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from crane_lsp.dryrun import DryRunOutcome, outcome_to_prediction
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.notebook import read_notebook
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO / "crane_lsp" / "data" / "junoreplay"


@dataclass
class Case:
    case: str
    label: str  # the labelled exception class
    truth: str  # the human diagnosis (meta.json)
    checks: str = ""  # a certain check's message, when the checks decide the case first
    source: str = ""
    executed: list[str] = field(default_factory=list)
    raw_with: list[dict] = field(default_factory=list)  # the kernel's answers, with the facts
    raw_without: list[dict] = field(default_factory=list)
    error: str = ""

    def _last(self, raw: list[dict]) -> Prediction | None:
        if not raw:
            return None
        return outcome_to_prediction(DryRunOutcome.model_validate(raw[-1]), self.source, self.executed)

    @property
    def before(self) -> Prediction | None:
        return self._last(self.raw_without)

    @property
    def after(self) -> Prediction | None:
        return self._last(self.raw_with)

    @property
    def with_s(self) -> list[float]:
        return [r.get("round_trip_s") or 0 for r in self.raw_with]

    @property
    def without_s(self) -> list[float]:
        return [r.get("round_trip_s") or 0 for r in self.raw_without]

    @property
    def facts_ms(self) -> list[float]:
        return [f["elapsed_ms"] for r in self.raw_with if (f := r.get("facts")) and "elapsed_ms" in f]


def target_index(nb: object) -> int:
    cells = nb.code_cells  # type: ignore[attr-defined]
    tagged = [i for i, c in enumerate(cells) if "replay-target" in c.tags]
    return tagged[-1] if tagged else len(cells) - 1


async def run_case(case_dir: Path, repeat: int, budget: float) -> Case:
    meta = json.loads((case_dir / "meta.json").read_text())
    row = Case(case_dir.name, str(meta.get("ename", "")), str(meta.get("diagnosis", "")))
    nb = read_notebook(case_dir / "buggy.ipynb")
    target = target_index(nb)
    source = nb.code_cells[target].source
    link, report = await start_and_replay(nb, target, cell_timeout=120)
    executed = [nb.code_cells[i].source for i in report.order]
    row.source, row.executed = source, executed
    try:
        settings = Settings(dry_run="on", dry_run_budget_s=budget)
        checked = (
            await Pipeline.from_settings(settings, link).predict(source, executed, {"checks"})
        ).prediction
        if checked.crash and checked.certainty == "certain":
            row.checks = checked.message
        for _ in range(repeat):
            for facts in (False, True):
                payload = {"source": source, "budget_s": budget, "memory_mb": settings.dry_run_memory_mb}
                payload["facts"] = facts
                raw = await link.call("dry_run", payload, timeout=budget + 10)
                (row.raw_with if facts else row.raw_without).append(raw)
    except Exception as exc:  # a row that says so, and on to the next case
        row.error = f"{type(exc).__name__}: {exc}"
    finally:
        await link.close()
    return row


def _shown(p: Prediction | None) -> str:
    if p is None:
        return "-"
    return p.message if p.crash else f"({p.message})"


def _added(p: Prediction | None) -> str:
    if p is None or not p.crash:
        return ""
    bits = [f"{e.fact} = {e.value}" for e in p.evidence[:3]]
    origins = [f"{o.variable} <- cell {o.cell + 1}" for o in p.origin if o.cell is not None]
    return "; ".join(bits) + (f" | origin: {', '.join(origins[:3])}" if origins else "")


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f}" if values else "-"


def print_report(rows: list[Case], console: Console, markdown: Path | None) -> None:
    table = Table(
        title="the diagnosis a user reads for each crashing JunoBench replay target", show_lines=True
    )
    for col in (
        "case",
        "decided by",
        "before (raw exception)",
        "after (with the facts)",
        "facts add",
        "ms w/o",
        "ms with",
    ):
        table.add_column(col, overflow="fold")
    md = [
        "| case | decided by | before (raw exception) | after (with the facts) | facts add | ms without "
        "| ms with |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        decided = "checks" if r.checks else ("dry run" if r.after is not None and r.after.crash else "-")
        cells = [
            r.case,
            decided,
            _shown(r.before),
            _shown(r.after),
            _added(r.after),
            _ms(r.without_s),
            _ms(r.with_s),
        ]
        if r.error:
            cells[3] = f"error: {r.error}"
        table.add_row(*(Text(c) for c in cells))  # ``labels[i]`` is no markup
        md.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    console.print(table)
    crashed = [r for r in rows if r.after is not None and r.after.crash]
    caused = [
        r
        for r in crashed
        if r.before is not None and r.after is not None and r.after.message != r.before.message
    ]
    with_evidence = [r for r in crashed if r.after is not None and r.after.evidence]
    with_origin = [r for r in crashed if r.after is not None and r.after.origin]
    dry = [r for r in crashed if not r.checks]
    lines = [
        f"crashing targets observed by the dry run: {len(crashed)}/{len(rows)} "
        f"({len(dry)} not decided by the checks first)",
        f"a one-line cause replaces the raw message: {len(caused)}/{len(crashed)} "
        f"({sum(1 for r in caused if not r.checks)}/{len(dry)} of those the dry run decides)",
        f"with evidence rows: {len(with_evidence)}/{len(crashed)}; "
        f"with origins: {len(with_origin)}/{len(crashed)}",
    ]
    pairs = [
        (statistics.median(r.without_s), statistics.median(r.with_s))
        for r in crashed
        if r.with_s and r.without_s
    ]
    if pairs:
        without = statistics.median(p[0] for p in pairs) * 1000
        with_ = statistics.median(p[1] for p in pairs) * 1000
        extra = statistics.median((p[1] - p[0]) * 1000 for p in pairs)
        worst = max((p[1] - p[0]) * 1000 for p in pairs)
        facts = [ms for r in crashed for ms in r.facts_ms]
        lines.append(
            f"dry-run verdict time (median of per-case medians): {without:.0f} ms without the facts, "
            f"{with_:.0f} ms with them (median difference {extra:+.0f} ms, largest {worst:+.0f} ms); "
            f"the child's time on the facts: median {statistics.median(facts):.0f} ms, "
            f"max {max(facts):.0f} ms"
            if facts
            else ""
        )
    for line in lines:
        console.print(line, markup=False)
    if markdown is not None:
        markdown.write_text("\n".join([*md, "", *(f"- {line}" for line in lines if line)]) + "\n")


async def main_async(args: argparse.Namespace) -> list[Case]:
    console = Console(stderr=True)
    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "buggy.ipynb").exists())
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    rows: list[Case] = []
    started = time.perf_counter()
    for case in cases:
        row = await run_case(case, args.repeat, args.budget)
        rows.append(row)
        console.print(
            f"[{time.perf_counter() - started:5.0f} s] {case.name}: {_shown(row.after)}{row.error}",
            highlight=False,
            markup=False,
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=str(DEFAULT_CASES), help="the junoreplay folder")
    parser.add_argument("--only", default=None, help="only cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=3, help="dry runs with and without the facts, each")
    parser.add_argument("--budget", type=float, default=Settings().dry_run_budget_s, help="seconds")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    parser.add_argument("--save", type=Path, default=None, help="write the kernel's answers here (JSON)")
    parser.add_argument("--load", type=Path, default=None, help="print the report of answers saved before")
    args = parser.parse_args(argv)
    if args.load is not None:
        rows = [Case(**data) for data in json.loads(args.load.read_text())]
    else:
        rows = asyncio.run(main_async(args))
    if args.save is not None:
        args.save.write_text(json.dumps([dataclasses.asdict(r) for r in rows], default=str))
    print_report(rows, Console(width=200), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
