"""``crane-lsp serve`` end to end: a real pytest-lsp client, a real kernel, notebooks and scripts.

The kernel is attached exactly as the VS Code client does it (``crane/attachKernel`` with the
kernel's connection file); the server runs as its own process over stdio.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.ports import free_port
from tests.server_client import (
    CONFIG,
    SERVER_COMMAND,
    SERVER_ENV,
    Notebook,
    action_command,
    end_session,
    has,
    open_script,
    start,
    wait_for,
    wait_status,
)

pytestmark = pytest.mark.timeout(120)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    lsp_client.statuses = await start(lsp_client, {"debounce": 150})  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


async def test_syntax_error_lands_on_its_cell_and_line(client: LanguageClient) -> None:
    nb = Notebook(client, [("a = 1", 1), ("", None)])
    nb.open()
    nb.edit(1, "x = 1\ny = (\n")
    diags = await wait_for(client, nb.cell_uris[1], has("SyntaxError"))
    assert diags[0].source == "crane" and diags[0].severity == types.DiagnosticSeverity.Error
    assert nb.cell_uris[0] not in client.diagnostics or not client.diagnostics[nb.cell_uris[0]]
    nb.edit(1, "x = 1\ny = (2)\n")
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)


async def test_attach_notification_then_crash_diagnostic_hover_actions(
    client: LanguageClient, kernel: TestKernel
) -> None:
    kernel.run("import pandas as pd\nsrv_df = pd.DataFrame({'a': [1, 2]})")
    nb = Notebook(client, [("import pandas as pd\nsrv_df = pd.DataFrame({'a': [1, 2]})", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    statuses = client.statuses  # type: ignore[attr-defined]
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    nb.edit(1, "total = 0\nprint(srv_never_defined)\n")
    diags = await wait_for(client, nb.cell_uris[1], has("NameError", line=1))
    diag = next(d for d in diags if d.code == "NameError")
    assert diag.range.start.character == 6 and diag.range.end.character == 6 + len("srv_never_defined")
    assert isinstance(diag.data, dict) and diag.data["predictionId"]
    status = await wait_status(statuses, lambda s: s.get("lastLatencyMs") is not None and not s["checking"])
    assert status["kernel"] in ("attached", "busy")

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]),
            position=types.Position(line=1, character=8),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "NameError" in hover.contents.value and "*Source:* check:" in hover.contents.value
    assert (
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]),
                position=types.Position(line=0, character=1),
            )
        )
        is None
    )

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions]
    assert "crane: Re-check cell" in titles and "crane: Ignore this finding" in titles

    rechecked = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.recheckCell", arguments=[nb.cell_uris[1]])
    )
    assert rechecked["checked"] and rechecked["prediction"]["exception"] == "NameError"
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.showPrompt", arguments=[nb.cell_uris[1]])
    )
    assert shown is None  # no LLM configured: there is no prompt to show

    command, arguments = action_command(next(a for a in actions if a.title.endswith("Ignore this finding")))
    assert command == "crane.ignoreFinding" and diag.data["predictionId"] in arguments
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=arguments)
    )
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)

    # the fix: define the name in the cell; the diagnostic stays cleared, and a new crash shows again
    nb.edit(1, "srv_never_defined = 1\nprint(srv_never_defined)\nprint(srv_other_missing)\n")
    await wait_for(client, nb.cell_uris[1], has("NameError", line=2))
    nb.edit(1, "srv_never_defined = 1\nprint(srv_never_defined)\n")
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)


async def test_execution_refreshes_predictions(client: LanguageClient, kernel: TestKernel) -> None:
    nb = Notebook(client, [("srv_late = 5", None), ("print(srv_late + 1)", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_for(client, nb.cell_uris[1], has("NameError"))
    # the user runs the first cell: the kernel state changes, the editor sends a new execution summary
    kernel.run("srv_late = 5")
    nb.executed(0, 7)
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)


async def test_twenty_rapid_edits_make_one_probe_and_one_prediction(
    client: LanguageClient, kernel: TestKernel
) -> None:
    nb = Notebook(client, [("x = 1", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    statuses = client.statuses  # type: ignore[attr-defined]
    await wait_status(statuses, lambda s: s.get("kernel") == "attached" and not s["checking"])
    before = statuses[-1]
    for i in range(20):
        nb.edit(1, f"print(srv_typing_{i})")
        time.sleep(0.005)
    await wait_for(client, nb.cell_uris[1], has("NameError"))
    assert "srv_typing_19" in client.diagnostics[nb.cell_uris[1]][0].message
    after = await wait_status(
        statuses, lambda s: not s["checking"] and s["predictions"] > before["predictions"]
    )
    assert after["predictions"] - before["predictions"] == 1
    assert after["probes"] - before["probes"] == 1


async def test_percent_script(client: LanguageClient, kernel: TestKernel) -> None:
    kernel.run("srv_pct = 3")
    uri = "file:///tmp/crane-tests/script.py"
    text = "# %%\nsrv_pct = 3\n\n# %%\ny = srv_pct + 1\nz = srv_pct_missing * 2\n"
    open_script(client, uri, text, kernel.connection_file)
    diags = await wait_for(client, uri, has("NameError"))
    assert [d.range.start.line for d in diags] == [5]
    assert text.split("\n")[5][diags[0].range.start.character :].startswith("srv_pct_missing")
    # a new cell above shifts every line: the squiggle follows the text, then the fix clears it
    text = "# %%\nimport os\n\n" + text
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await wait_for(client, uri, lambda ds: [d.range.start.line for d in ds] == [8])
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace("_missing", ""))],
        )
    )
    await wait_for(client, uri, lambda ds: len(ds) == 0)


def test_tcp_mode_answers_initialize() -> None:
    """``--tcp HOST:PORT``: the same server on a socket (for editors that prefer one)."""
    port = free_port()
    proc = subprocess.Popen([*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"], env=SERVER_ENV)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.1)
        with conn:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
            )
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            conn.settimeout(20)
            received = b""
            while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < int(
                received.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0]
            ):
                chunk = conn.recv(65536)
                assert chunk, "connection closed before the initialize result"
                received += chunk
        result = json.loads(received.split(b"\r\n\r\n", 1)[1])["result"]
        assert result["serverInfo"]["name"] == "crane-lsp" and result["capabilities"]["hoverProvider"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
