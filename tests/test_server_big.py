"""A big cell never makes the server deaf: its checks run in a worker process, and a newer edit
stops the pass for the older text instead of queueing another full one (failure 1 of issue 13).

A long cell (past ``analysis.parse.MAX_LINES``) gets its diagnostic wherever its crash is (issue 24):
the verdict on its first part is published at once, the worker then reads every line, and the dry
run runs on it like on any other cell; hovers are answered meanwhile, and an edit during the long
read never shows the older text's result.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from crane_lsp.server.presentation import STALE_PREFIX
from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, end_session, start, wait_for, wait_status

pytestmark = pytest.mark.timeout(240)

LINES = 3000  # the size that kept the server deaf for 4.2 s when the checks ran on its event loop


def big_cell(name: str) -> str:
    """``LINES`` lines in ONE top-level ``with`` statement: the checks read a statement that starts within
    their budget whole (``analysis.parse.MAX_LINES``), so this cell costs a full pass of every line."""
    body = "\n".join(f"    v{i} = v{i - 1} + math.sqrt({i})" for i in range(1, LINES))
    head = "import math\nimport warnings\nwith warnings.catch_warnings():\n    v0 = 1\n"
    return f"{head}{body}\n    print({name})\n"


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_requests_are_answered_while_a_big_cell_is_checked(
    client: LanguageClient, kernel: TestKernel
) -> None:
    statuses = await start(client, {"debounce": 0, "dryRun": "off"})
    kernel.run("import math")
    nb = Notebook(client, [("import math", 1), ("", None), ("x = (", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_for(client, nb.cell_uris[2], lambda ds: len(ds) == 1)  # the small cell: a SyntaxError
    await wait_status(statuses, lambda s: s["kernel"] == "attached" and not s["checking"])
    for i in range(4):  # a newer text supersedes the pass in flight: no queue of full passes
        nb.edit(1, big_cell(f"srv_big_{i}"))
        time.sleep(0.3)
    slowest, hovers = 0.0, 0
    began = time.monotonic()
    deadline = began + 120
    while not any("srv_big_3" in d.message for d in client.diagnostics.get(nb.cell_uris[1], ())):
        assert time.monotonic() < deadline, "the big cell's diagnostic never came"
        started = time.monotonic()  # while the big cell is checked, hovers are answered at once
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[2]),
                position=types.Position(line=0, character=4),
            )
        )
        slowest, hovers = max(slowest, time.monotonic() - started), hovers + 1
    whole = time.monotonic() - began
    assert hovers > 3 and answered_throughout(slowest, whole), (hovers, slowest, whole)
    diags = client.diagnostics[nb.cell_uris[1]]
    assert diags[0].range.start.line == LINES + 3 and not diags[0].message.startswith("(stale)")


LONG = 6000
LONG_SETUP = "import pandas as pd\nlong_df = pd.DataFrame({'a': [1, 2]})"


def long_cell(last: str, lines: int = LONG) -> str:
    """``lines - 1`` lines the checks prove harmless, then ``last``: past the first read's budget."""
    body = "\n".join(f"w{i} = len(long_df) + {i}" for i in range(lines - 1))
    return f"{body}\n{last}\n"


def record_publishes(client: LanguageClient, uri: str) -> list[list[types.Diagnostic]]:
    """Every publish of ``uri``'s diagnostics from now on, in order."""
    published: list[list[types.Diagnostic]] = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        if params.uri == uri:
            published.append(list(params.diagnostics))
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    return published


async def open_with_kernel(client: LanguageClient, kernel: TestKernel, options: dict[str, Any]) -> Notebook:
    """A notebook of the executed setup, an empty cell (1) and a SyntaxError (2), its kernel attached."""
    statuses = await start(client, {"debounce": 0, **options})
    kernel.run(LONG_SETUP)
    nb = Notebook(client, [(LONG_SETUP, 1), ("", None), ("x = (", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_for(client, nb.cell_uris[2], lambda ds: len(ds) == 1)
    await wait_status(statuses, lambda s: s["kernel"] == "attached" and not s["checking"])
    return nb


def answered_throughout(slowest_s: float, whole_s: float) -> bool:
    """Hovers were answered while the long work ran: each within a second, or within a quarter of the
    whole work (a loaded machine slows both alike). A loop the work blocked waits about all of it."""
    return slowest_s < max(1.0, whole_s / 4)


async def hover_until(
    client: LanguageClient, nb: Notebook, done: Any, timeout: float
) -> tuple[types.Diagnostic, float, int, float]:
    """Hover cell 2 until ``done(diagnostic)`` holds for one of cell 1's: (it, seconds, hovers, slowest)."""
    started = time.monotonic()
    slowest, hovers = 0.0, 0
    while True:
        found = [d for d in client.diagnostics.get(nb.cell_uris[1], ()) if done(d)]
        if found:
            return found[0], time.monotonic() - started, hovers, slowest
        assert time.monotonic() - started < timeout, "the long cell's diagnostic never came"
        asked = time.monotonic()
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[2]),
                position=types.Position(line=0, character=4),
            )
        )
        slowest, hovers = max(slowest, time.monotonic() - asked), hovers + 1
        await asyncio.sleep(0.05)  # a user's pace, not a loop that takes the CPU from the worker


@pytest.mark.parametrize(
    ("last", "exception"),
    [("y = long_undefined_name + 1", "NameError"), ("y = long_df['missing']", "KeyError")],
)
async def test_the_last_line_of_a_6000_line_cell_gets_its_certain_diagnostic(
    client: LanguageClient, kernel: TestKernel, last: str, exception: str
) -> None:
    nb = await open_with_kernel(client, kernel, {"dryRun": "off"})  # the checks alone
    published = record_publishes(client, nb.cell_uris[1])
    nb.edit(1, long_cell(last))

    def final(d: types.Diagnostic) -> bool:
        fresh = not d.message.startswith(STALE_PREFIX)
        return d.code == exception and d.range.start.line == LONG - 1 and fresh

    diag, seconds, hovers, slowest = await hover_until(client, nb, final, timeout=90)
    assert diag.severity == types.DiagnosticSeverity.Error  # certain, not "if reached"
    assert hovers > 3 and answered_throughout(slowest, seconds), (hovers, slowest, seconds)
    assert published[0] == [] and published[-1] == [diag]  # the first part's verdict (nothing) came first
    print(f"{exception} on line {LONG} in {seconds:.1f} s; {hovers} hovers, slowest {slowest * 1000:.0f} ms")
    real = kernel.run(nb.texts[1], allow_error=True)
    assert real["status"] == "error" and real["ename"] == exception  # the cell really raises


async def test_a_long_cell_is_dry_run_like_any_other(client: LanguageClient, kernel: TestKernel) -> None:
    """Only running the cell shows this crash: the dry run (safe mode, screened in the worker) does."""
    nb = await open_with_kernel(client, kernel, {"dryRun": "safe", "dryRunBudget": 30})  # a loaded CI machine
    nb.edit(1, long_cell("raise RuntimeError(f'long dry run {w5998}')"))

    def observed(d: types.Diagnostic) -> bool:
        return d.code == "RuntimeError" and d.range.start.line == LONG - 1

    diag, seconds, hovers, slowest = await hover_until(client, nb, observed, timeout=90)
    assert "long dry run 6000" in diag.message  # the value only running the cell computes
    assert hovers > 0 and answered_throughout(slowest, seconds), (hovers, slowest, seconds)


async def test_an_edit_during_the_long_read_never_shows_the_older_texts_result(
    client: LanguageClient, kernel: TestKernel
) -> None:
    nb = await open_with_kernel(client, kernel, {"dryRun": "off"})
    published = record_publishes(client, nb.cell_uris[1])
    nb.edit(1, long_cell("y = long_stale_first + 1", 20000))
    deadline = time.monotonic() + 60
    while not published:  # the first part's verdict (nothing found) is out: the rest is being read
        assert time.monotonic() < deadline, "the first part's verdict never came"
        await asyncio.sleep(0.02)
    assert all(ds == [] for ds in published)
    edited_at = len(published)
    nb.edit(1, long_cell("y = long_stale_second + 1", 20000))  # while the first text's rest is read

    def final(d: types.Diagnostic) -> bool:
        return "long_stale_second" in d.message and not d.message.startswith(STALE_PREFIX)

    diag, *_ = await hover_until(client, nb, final, timeout=120)
    assert diag.range.start.line == 19999
    after = [d.message for ds in published[edited_at:] for d in ds]
    assert not any("long_stale_first" in m for m in after), after  # never the older text's verdict
