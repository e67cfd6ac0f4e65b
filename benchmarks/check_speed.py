"""How fast the built-in checks are, and how big our +RT prompts are, on the bundled examples.

For each example notebook: replay its recorded state in a fresh kernel, take ONE snapshot for the
target cell, then time ``analyze`` + ``run_checks`` (snapshot to prediction, the part that runs on
every keystroke once the probe has answered) over many repeats. Also prints the probe round trip
and the o200k token count of the +RT prompt we would send for that target.

    python3 benchmarks/check_speed.py [--repeats 200] [--big-lines 20000] [--skip-examples]

It also times one generated cell of ``--big-lines`` lines (and a tenth of it, to show the growth is
linear): ``analyze`` + ``run_checks`` against a small synthetic snapshot, CPU seconds of this process;
first as the first read analyses it (the checks read its first ``MAX_LINES`` lines: the verdict the
server publishes at once, and all the CLI's checks read), then read whole (``analyze(..., max_lines=None)``:
what the server's worker reads next, and the cost per line of the walk itself). Time to the final
diagnostic through the server, with the probe and the dry run: ``benchmarks/long_cells.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.analysis.parse import MAX_LINES, analyze
from crane_lsp.checks.runner import run_checks
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.llm.prompt import build_messages, prompt_tokens
from crane_lsp.notebook import read_notebook
from crane_lsp.pipeline import finding_to_prediction, probe_query
from crane_lsp.render import render_snapshot
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ObjectSummary, Snapshot

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


def big_cell(lines: int) -> str:
    """A long cell in the style of generated notebook code: column reads, arrays, fits, prints."""
    shapes = (
        "x{i} = df['a{m}'].mean()",
        "y = np.zeros(({i}, 3))",
        "model.fit(X, y)",
        "print(x{p})",
        "df['c{m}'] = df['a'] * 2",
        "z = X[:, {k}].sum() + {i}",
    )
    out = []
    for i in range(lines):
        out.append(shapes[(i * 7919) % len(shapes)].format(i=i, m=i % 7, p=max(i - 1, 0), k=i % 3))
    return "\n".join(out) + "\n"


def time_big_cell(lines: int, max_lines: int | None = MAX_LINES) -> tuple[float, float]:
    """CPU seconds of ``analyze`` and of ``run_checks`` on a ``lines``-line cell (``max_lines``: what
    ``analyze`` reads of it; None: all of it)."""
    snap = Snapshot(
        variables={
            "df": ObjectSummary(kind="dataframe", type="pandas.DataFrame", shape=[10, 3]),
            "np": ObjectSummary(kind="module", type="module", module="numpy"),
        }
    )
    source = big_cell(lines)
    started = time.process_time()
    facts = analyze(source, max_lines=max_lines)
    parsed = time.process_time()
    run_checks(facts, snap)
    return parsed - started, time.process_time() - parsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--big-lines", type=int, default=20000)
    parser.add_argument("--skip-examples", action="store_true")
    args = parser.parse_args()
    console = Console()
    time_big_cell(200)  # imports the check modules, outside the figures
    # the first read (the first MAX_LINES lines), then the whole read (the server's worker reads it next)
    for lines, max_lines in (
        (args.big_lines // 10, MAX_LINES),
        (args.big_lines, MAX_LINES),
        (args.big_lines // 10, None),
        (args.big_lines, None),
    ):
        parse_s, checks_s = time_big_cell(lines, max_lines)
        total = parse_s + checks_s
        read = "read whole" if max_lines is None or lines <= max_lines else f"first {max_lines} lines read"
        console.print(
            f"{lines}-line cell ({read}): analyze {parse_s:.2f} s + checks {checks_s:.2f} s"
            f" = {total:.2f} s CPU ({total / lines * 1e6:.0f} us/line)"
        )
    if args.skip_examples:
        return
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
