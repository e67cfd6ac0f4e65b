"""Long cells through ``crane-lsp serve``: time to the final diagnostic, and hovers meanwhile.

Run by hand: ``python3 benchmarks/long_cells.py [--lines 6000 20000] [--repeats 3] [--budget 3]``.
Starts a real kernel holding a small DataFrame, the server over stdio (debounce 0, dry run "safe"),
attaches the kernel the way the VS Code client does, then for each cell size edits one cell to a
generated cell whose LAST line crashes, and prints (medians over ``--repeats`` edits, each a new text):

- ``checks``: the last line reads an undefined name. Time to the first publish (the verdict on the
  first ``analysis.parse.MAX_LINES`` lines: nothing) and to the final, certain NameError (the
  server's worker reads every line);
- ``dry run``: the last line raises what only running the cell shows. Time to the observed crash;
- hovers on a small cell at 20 a second all the while: how many, median and slowest answer.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from tests.conftest import start_test_kernel, stop_test_kernel
from tests.server_client import SERVER_COMMAND, SERVER_ENV, Notebook, start

SETUP = "import pandas as pd\nlong_df = pd.DataFrame({'a': [1, 2]})"
LAST = {
    "checks": ("y = long_missing_{n} + 1", "NameError"),
    "dry run": ("raise RuntimeError(f'long cell {{w0}} {n}')", "RuntimeError"),
}
_texts = itertools.count()


def long_cell(lines: int, last: str) -> str:
    """``lines - 1`` lines of generated column arithmetic, then ``last``."""
    body = "\n".join(f"w{i} = len(long_df) + {i}" for i in range(lines - 1))
    return f"{body}\n{last}\n"


async def one_edit(
    client: LanguageClient, nb: Notebook, lines: int, case: str
) -> tuple[float | None, float, list[float]]:
    """(s to the first publish, s to the final diagnostic, hover answers in s) for one new text."""
    template, exception = LAST[case]
    n = next(_texts)
    text = long_cell(lines, template.format(n=n))
    uri = nb.cell_uris[1]
    publishes: list[tuple[float, list[types.Diagnostic]]] = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> object:
        if params.uri == uri:
            publishes.append((time.perf_counter(), list(params.diagnostics)))
        return original(params)

    def final(ds: list[types.Diagnostic]) -> bool:
        return any(d.code == exception and d.range.start.line == lines - 1 for d in ds)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    hovers: list[float] = []
    started = time.perf_counter()
    nb.edit(1, text)
    try:
        while not any(final(ds) for _, ds in publishes):
            if time.perf_counter() - started > 300:
                raise TimeoutError(f"{lines} lines, {case}: no diagnostic in 300 s; got {publishes[-1:]}")
            asked = time.perf_counter()
            await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[2]),
                    position=types.Position(line=0, character=4),
                )
            )
            hovers.append(time.perf_counter() - asked)
            await asyncio.sleep(0.05)
    finally:
        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = original
    done = next(t for t, ds in publishes if final(ds))
    first = publishes[0][0] - started if publishes and publishes[0][0] < done else None
    return first, done - started, hovers


def _median(values: list[float], fmt: Callable[[float], str]) -> str:
    return fmt(statistics.median(values)) if values else "-"


async def main(sizes: list[int], repeats: int, budget: float) -> None:
    kernel = start_test_kernel()
    client = make_test_lsp_client()
    try:
        kernel.run(SETUP)
        await client.start_io(*SERVER_COMMAND, env=SERVER_ENV)
        await start(client, {"debounce": 0, "dryRun": "safe", "dryRunBudget": budget})
        nb = Notebook(client, [(SETUP, 1), ("", None), ("x = (", None)])
        nb.open()
        client.protocol.notify(
            "crane/attachKernel", {"notebookUri": nb.uri, "connectionFile": kernel.connection_file}
        )
        await asyncio.sleep(2.0)
        await one_edit(client, nb, 1200, "checks")  # warm up: the worker's imports, the probe
        heads = ("cell", 12), ("case", 8), ("first part", 11), ("final", 8), ("hovers", 7), ("median", 8)
        print(" ".join(f"{h:>{w}}" for h, w in heads), f"{'slowest':>8}")
        for lines in sizes:
            for case in LAST:
                firsts: list[float] = []
                finals: list[float] = []
                answers: list[float] = []
                for _ in range(repeats):
                    first, done, hovers = await one_edit(client, nb, lines, case)
                    if first is not None:
                        firsts.append(first)
                    finals.append(done)
                    answers.extend(hovers)
                print(
                    f"{lines:>7} lines {case:>8} {_median(firsts, lambda v: f'{v:.2f} s'):>11}"
                    f" {_median(finals, lambda v: f'{v:.2f} s'):>8} {len(answers):>7}"
                    f" {_median(answers, lambda v: f'{v * 1000:.0f} ms'):>8}"
                    f" {f'{max(answers) * 1000:.0f} ms' if answers else '-':>8}"
                )
        await client.shutdown_session()
    finally:
        await client.stop()
        stop_test_kernel(kernel)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[6000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=3.0, help="dry-run budget, s (editor default 3)")
    args = parser.parse_args()
    asyncio.run(main(args.lines, args.repeats, args.budget))
