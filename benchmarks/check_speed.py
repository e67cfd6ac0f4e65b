"""How fast the built-in checks are, and how big our +RT prompts are, on the bundled examples.

For each example notebook: replay its recorded state in a fresh kernel, take ONE snapshot for the
target cell, then time ``analyze`` + ``run_checks`` (snapshot to prediction, the part that runs on
every keystroke once the probe has answered) over many repeats. Also prints the probe round trip
and the o200k token count of the +RT prompt we would send for that target.

    python3 benchmarks/check_speed.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.cellcode import analyze
from crane_lsp.checks.runner import run_checks
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.llm.prompt import build_messages, prompt_tokens
from crane_lsp.notebook import read_notebook
from crane_lsp.predict import finding_to_prediction, probe_query
from crane_lsp.runtime import render_snapshot
from crane_lsp.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


async def measure(path: Path, repeats: int) -> dict[str, object]:
    notebook = read_notebook(path)
    target = len(notebook.code_cells) - 1
    source = notebook.code_cells[target].source
    settings = Settings()
    link, report = await start_and_replay(notebook, target)
    try:
        facts = analyze(source)
        started = time.perf_counter()
        snapshot = await link.snapshot(probe_query(facts, settings))
        probe_ms = (time.perf_counter() - started) * 1000
    finally:
        await link.close()
    executed = [notebook.code_cells[run.index].source for run in report.runs if run.result.ok]
    timings = []
    verdict = "no finding"
    for _ in range(repeats):
        started = time.perf_counter()
        findings = run_checks(analyze(source), snapshot)
        prediction = finding_to_prediction(findings[0], executed, source) if findings else None
        timings.append((time.perf_counter() - started) * 1000)
        if prediction is not None:
            verdict = f"{prediction.exception} line {(prediction.line or 0) + 1}"
    timings.sort()
    runtime_text = render_snapshot(snapshot)
    return {
        "notebook": f"{path.parent.name}/{path.name}",
        "verdict": verdict,
        "probe_ms": probe_ms,
        "median_ms": statistics.median(timings),
        "p95_ms": timings[int(0.95 * (len(timings) - 1))],
        "rt_tokens": prompt_tokens(build_messages(executed, source, runtime_text)),
        "nort_tokens": prompt_tokens(build_messages(executed, source, None)),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    console = Console()
    table = Table(title="checks: snapshot -> prediction (analyze + run_checks), and prompt sizes")
    columns = ("example", "verdict", "probe round trip", "checks median", "checks p95", "-RT tok", "+RT tok")
    for column in columns:
        table.add_column(column, justify="left" if column in ("example", "verdict") else "right")
    for path in sorted(EXAMPLES.glob("*/*.ipynb")):
        with console.status(f"replaying {path.parent.name}"):
            row = await measure(path, args.repeats)
        table.add_row(
            str(row["notebook"]),
            str(row["verdict"]),
            f"{row['probe_ms']:.1f} ms",
            f"{row['median_ms']:.2f} ms",
            f"{row['p95_ms']:.2f} ms",
            str(row["nort_tokens"]),
            str(row["rt_tokens"]),
        )
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
