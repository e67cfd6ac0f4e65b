"""Verified fixes over LSP: a real pytest-lsp client, ``crane-lsp serve`` in its own process, a real
kernel. The squiggle comes first; the fix is dry-run after it and offered as a preferred Quick Fix
titled with the change and its status; the hover names it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, end_session, has, start, wait_for, wait_status

pytestmark = pytest.mark.timeout(120)

SETUP = "import pandas as pd\nfxs_df = pd.DataFrame({'region': ['n', 's'], 'units': [1, 2]})"


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    lsp_client.statuses = await start(lsp_client, {"debounce": 100, "dryRun": "safe"})  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


async def _actions(client: LanguageClient, uri: str, diag: types.Diagnostic) -> list[Any]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    return list(found or [])


async def test_quick_fix_verified_in_a_dry_run(client: LanguageClient, kernel: TestKernel) -> None:
    kernel.run(SETUP)
    nb = Notebook(client, [(SETUP, 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(client.statuses, lambda s: s.get("kernel") in ("attached", "busy"))  # type: ignore[attr-defined]
    nb.edit(1, "total = fxs_df.groupby('Region')['units'].sum()\nbest = total.idxmax()")
    diags = await wait_for(client, nb.cell_uris[1], has("KeyError", line=0))
    diag = next(d for d in diags if d.code == "KeyError")
    title = "Use 'region' (runs clean in a dry run)"
    deadline = time.monotonic() + 60
    while True:  # the verification runs after the squiggle: poll as an editor re-asks on cursor moves
        actions = await _actions(client, nb.cell_uris[1], diag)
        fixes = [a for a in actions if isinstance(a, types.CodeAction) and a.title == title]
        if fixes or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert fixes, [a.title for a in actions]
    (fix,) = fixes
    assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
    assert fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[nb.cell_uris[1]]
    assert edit.new_text == "total = fxs_df.groupby('region')['units'].sum()\n"
    assert (edit.range.start.line, edit.range.end.line, edit.range.end.character) == (0, 1, 0)
    assert not any(a.title.startswith("crane: Apply suggested fix") for a in actions)  # no unverified twin
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]),
            position=types.Position(line=0, character=25),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "**Verified fix:** Use 'region' (runs clean in a dry run)" in hover.contents.value
    assert "binds best, total as the original" in hover.contents.value
    # applying the fix is the editor's: the kernel's state is untouched by the verification
    assert kernel.eval("sorted(k for k in globals() if k in ('total', 'best'))") == "[]"


async def test_the_cell_below_that_reads_the_fixed_name_runs_after_the_fix(
    client: LanguageClient, kernel: TestKernel
) -> None:
    """The server hands the cells below the target to the verification: the first that reads a name
    the target binds is dry-run after the fixed target, and the hover's fix says how it went."""
    kernel.run(SETUP)
    nb = Notebook(client, [(SETUP, 1), ("", None), ("print('elsewhere')", None), ("top = total.max()", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(client.statuses, lambda s: s.get("kernel") in ("attached", "busy"))  # type: ignore[attr-defined]
    nb.edit(1, "total = fxs_df.groupby('Region')['units'].sum()")
    await wait_for(client, nb.cell_uris[1], has("KeyError", line=0))
    said = ""
    deadline = time.monotonic() + 60
    while "**Verified fix:**" not in said and time.monotonic() < deadline:
        hover = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]),
                position=types.Position(line=0, character=25),
            )
        )
        said = (
            hover.contents.value
            if hover is not None and isinstance(hover.contents, types.MarkupContent)
            else ""
        )
        await asyncio.sleep(0.2)
    assert "**Verified fix:** Use 'region' (runs clean in a dry run)" in said, said
    assert "the cell 2 below (it reads total) also runs clean after it" in said, said
    assert kernel.eval("sorted(k for k in globals() if k in ('total', 'top'))") == "[]"
