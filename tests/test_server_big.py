"""A big cell never makes the server deaf: its checks run in a worker thread, and a newer edit
stops the pass for the older text instead of queueing another full one (failure 1 of issue 13).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, start, wait_for, wait_status

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
    await lsp_client.shutdown_session()


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
    deadline = time.monotonic() + 120
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
    assert hovers > 3 and slowest < 1.0, (hovers, slowest)  # seconds when the checks blocked the loop
    diags = client.diagnostics[nb.cell_uris[1]]
    assert diags[0].range.start.line == LINES + 3 and not diags[0].message.startswith("(stale)")
