"""Lines as the editor counts them: only \\n, \\r\\n and \\r end a line (LSP), never \\f, \\v, \\x85 or
U+2028; and every line the server names (hover, origins) is the editor's line.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from crane_lsp.notebook import split_lines
from tests.conftest import TestKernel
from tests.server_client import CONFIG, end_session, has, open_script, start, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


@pytest.mark.parametrize("odd", ["\f", "\v", "\x85", "\u2028", "\r"])
async def test_squiggle_line_after_odd_characters(
    client: LanguageClient, kernel: TestKernel, odd: str
) -> None:
    """Failure 7: after a form feed, \\v, \\x85 or U+2028 the squiggle stays on its line (\\r is a
    real line end and moves it one down, as in the editor)."""
    await start(client, {"debounce": 50})
    kernel.run("srv_lines_ok = 1")
    uri = f"file:///tmp/crane-tests/odd{ord(odd)}.py"
    text = f"# %%\nsrv_lines_ok = 1\n\n# %%\n# page{odd}# break\nz = srv_lines_missing * 2\n"
    open_script(client, uri, text, kernel.connection_file)
    line = next(i for i, t in enumerate(split_lines(text)) if "srv_lines_missing" in t)
    assert line == (6 if odd == "\r" else 5)
    diags = await wait_for(client, uri, has("NameError"))
    assert [d.range.start.line for d in diags] == [line]
    assert split_lines(text)[line][diags[0].range.start.character :].startswith("srv_lines_missing")


async def test_incremental_edits_after_a_form_feed(client: LanguageClient, kernel: TestKernel) -> None:
    """Failure 7: the server's copy of the text follows incremental edits below a form feed."""
    await start(client, {"debounce": 50})
    uri = "file:///tmp/crane-tests/formfeed-edits.py"
    text = "# %%\n\f\nx = 1\f # page\ny = srv_ff_first\n"
    open_script(client, uri, text, kernel.connection_file)
    await wait_for(
        client, uri, lambda ds: [d.range.start.line for d in ds] == [3] and "srv_ff_first" in ds[0].message
    )
    start_col = split_lines(text)[3].index("srv_ff_first")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=3, character=start_col),
                        end=types.Position(line=3, character=start_col + len("srv_ff_first")),
                    ),
                    text="srv_ff_second",
                )
            ],
        )
    )
    diags = await wait_for(client, uri, lambda ds: len(ds) == 1 and "srv_ff_second" in ds[0].message)
    assert diags[0].range.start.line == 3 and "(stale)" not in diags[0].message


async def test_hover_and_origin_name_the_files_lines(client: LanguageClient, kernel: TestKernel) -> None:
    """Failure 7: in a script, hover names the file's line and the origin's file line."""
    await start(client, {"debounce": 50})
    setup = "import pandas as pd\nsrv_lines_df = pd.DataFrame({'a': [1, 2]})"
    kernel.run(setup)
    uri = "file:///tmp/crane-tests/origin-lines.py"
    text = f"# %%\n{setup}\n\n# %%\nx = 1\nv = srv_lines_df['nope']\n"
    open_script(client, uri, text, kernel.connection_file)
    diags = await wait_for(client, uri, has("KeyError"))
    assert diags[0].range.start.line == 6
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=6, character=diags[0].range.start.character),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    md = hover.contents.value
    assert "on line 7" in md, md  # the editor's line 7 (1-based), not the cell's line 2
    assert "`srv_lines_df` ← line 3" in md, md  # assigned on the file's line 3, not the cell's 2
