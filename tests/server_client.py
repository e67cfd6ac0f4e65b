"""A pytest-lsp client for ``crane-lsp serve``: notebook sync capabilities, status capture, helpers.

Shared by the ``test_server_*`` end-to-end tests and ``benchmarks/server_latency.py``. The server runs
in its own process with private Jupyter runtime directories, so discovery never finds another
test's kernel; kernels are attached explicitly (``connectionFile`` or ``crane/attachKernel``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from crane_lsp.server.config import plain

_RUNTIME = Path(tempfile.mkdtemp(prefix="crane-lsp-test-runtime-"))
SERVER_COMMAND = [sys.executable, "-m", "crane_lsp.cli", "serve"]
if os.environ.get("CRANE_TEST_SERVER_LOG"):  # debugging: every server's stderr appended to this file
    SERVER_COMMAND = ["sh", "-c", 'exec "$@" 2>>"$CRANE_TEST_SERVER_LOG"', "sh", *SERVER_COMMAND]
SERVER_ENV = {
    **os.environ,
    "JUPYTER_RUNTIME_DIR": str(_RUNTIME / "jupyter"),
    "XDG_RUNTIME_DIR": str(_RUNTIME / "xdg"),
    "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    ),
}
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV)
_counter = itertools.count()


def capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities plus notebook synchronisation with execution summaries."""
    caps = client_capabilities("visual-studio-code")
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
    )
    return caps


async def start(client: LanguageClient, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Initialise the session; returns the list every ``crane/status`` notification is appended to."""
    statuses: list[dict[str, Any]] = []

    def on_status(params: Any) -> None:
        statuses.append(plain(params))

    client.feature("crane/status")(on_status)
    await client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), initialization_options=options or {})
    )
    return statuses


class Notebook:
    """An LSP notebook the test edits like an editor would (full-text cell edits, execution summaries)."""

    def __init__(
        self, client: LanguageClient, cells: Sequence[tuple[str, int | None]], name: str = "nb"
    ) -> None:
        n = next(_counter)
        self.client = client
        self.uri = f"file:///tmp/crane-tests/{name}{n}.ipynb"
        self.cell_uris = [
            f"vscode-notebook-cell:/tmp/crane-tests/{name}{n}.ipynb#C{i}" for i in range(len(cells))
        ]
        self.texts = [text for text, _ in cells]
        self.orders = [order for _, order in cells]
        self.versions = [1] * len(cells)
        self.version = 1

    def _cell(self, i: int) -> types.NotebookCell:
        order = self.orders[i]
        return types.NotebookCell(
            kind=types.NotebookCellKind.Code,
            document=self.cell_uris[i],
            execution_summary=types.ExecutionSummary(execution_order=order, success=True) if order else None,
        )

    def open(self) -> None:
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=self.version,
                    cells=[self._cell(i) for i in range(len(self.texts))],
                ),
                cell_text_documents=[
                    types.TextDocumentItem(uri=u, language_id="python", version=1, text=t)
                    for u, t in zip(self.cell_uris, self.texts, strict=True)
                ],
            )
        )

    def _change(self, change: types.NotebookDocumentChangeEvent) -> None:
        self.version += 1
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(
                    version=self.version, uri=self.uri
                ),
                change=change,
            )
        )

    def edit(self, i: int, text: str) -> None:
        self.texts[i] = text
        self.versions[i] += 1
        self._change(
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(
                                uri=self.cell_uris[i], version=self.versions[i]
                            ),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            )
        )

    def executed(self, i: int, order: int) -> None:
        self.orders[i] = order
        self._change(
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    data=[self._cell(i)],
                )
            )
        )

    def attach(self, connection_file: str) -> None:
        """Attach a kernel as the VS Code client does (the ``crane/attachKernel`` notification)."""
        attach_kernel(self.client, self.uri, connection_file)

    def close(self) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in self.cell_uris],
            )
        )


def attach_kernel(client: LanguageClient, uri: str, connection_file: str) -> None:
    """``crane/attachKernel`` for the notebook or ``# %%`` script at ``uri``, as VS Code sends it."""
    client.protocol.notify("crane/attachKernel", {"notebookUri": uri, "connectionFile": connection_file})


def open_script(client: LanguageClient, uri: str, text: str, connection_file: str | None = None) -> None:
    """Open a ``# %%`` script as an editor does; attach the kernel at ``connection_file`` if given."""
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    if connection_file is not None:
        attach_kernel(client, uri, connection_file)


Diags = Sequence[types.Diagnostic]


async def wait_for(
    client: LanguageClient, uri: str, predicate: Callable[[Diags], bool], timeout: float = 20.0
) -> Diags:
    """Poll the diagnostics the client holds for ``uri`` until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        diags = client.diagnostics.get(uri)
        if diags is not None and predicate(diags):
            return diags
        if time.monotonic() > deadline:
            raise AssertionError(f"diagnostics for {uri} never matched; last: {diags!r}")
        await asyncio.sleep(0.02)


async def wait_status(
    statuses: list[dict[str, Any]], predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        for status in reversed(statuses):
            if predicate(status):
                return status
        if time.monotonic() > deadline:
            raise AssertionError(f"no matching crane/status; last: {statuses[-1:]!r}")
        await asyncio.sleep(0.02)


def has(exception: str, line: int | None = None) -> Callable[[Diags], bool]:
    return lambda ds: any(d.code == exception and (line is None or d.range.start.line == line) for d in ds)


def action_command(action: types.CodeAction | types.Command) -> tuple[str, list[Any]]:
    """(command, arguments) of a code action as the client received it.

    lsprotocol's client-side hook structures every code action that carries a ``command`` as a
    ``Command`` (with the nested command object's repr as its name), so both shapes are read here.
    """
    import ast

    if isinstance(action, types.CodeAction):
        assert action.command is not None
        return action.command.command, list(action.command.arguments or [])
    if action.command.startswith("{"):
        nested = ast.literal_eval(action.command)
        return nested["command"], list(nested.get("arguments") or [])
    return action.command, list(action.arguments or [])


async def end_session(client: LanguageClient, limit_s: float = 60.0) -> None:
    """``shutdown`` and ``exit``, then make sure the server process is gone.

    pytest-lsp's teardown (``client.stop()``) waits for the server process with no time limit, and
    ``shutdown_session`` sends nothing once the client has recorded an error: a server left running
    then holds the test (and a CI worker) forever. What did not exit within ``limit_s`` is killed.
    """
    try:
        await asyncio.wait_for(client.shutdown_session(), limit_s)
    finally:
        server = client._server  # pygls's handle on the server process: no public accessor
        if server is not None and server.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                server.kill()
            await asyncio.wait_for(server.wait(), 10)
