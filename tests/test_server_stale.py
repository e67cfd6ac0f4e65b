"""No flicker (failure 9 of issue 13): an edit keeps the cell's squiggle, marked stale, until the
result for the new text replaces it; nothing is withdrawn and brought back later.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from crane_lsp.server.presentation import STALE_PREFIX
from tests.conftest import TestKernel
from tests.server_client import CONFIG, end_session, has, open_script, start, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_edit_keeps_the_squiggle_until_the_new_result(
    client: LanguageClient, kernel: TestKernel
) -> None:
    await start(client, {"debounce": 300})
    uri = "file:///tmp/crane-tests/stale.py"
    text = "# %%\nx = 1\n\n# %%\ny = srv_stale_first + 1\n"
    open_script(client, uri, text, kernel.connection_file)
    await wait_for(client, uri, has("NameError", line=4))
    published: list[list[types.Diagnostic]] = []

    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        if params.uri == uri:
            published.append(list(params.diagnostics))
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record  # every publish, in order
    for version, name in enumerate(["srv_stale_s", "srv_stale_se", "srv_stale_second"], start=2):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=text.replace("srv_stale_first", name))
                ],
            )
        )
        await asyncio.sleep(0.05)  # typing
    await wait_for(client, uri, lambda ds: any("srv_stale_second" in d.message for d in ds))
    assert published and all(len(ds) == 1 for ds in published), published  # never withdrawn meanwhile
    assert any(ds[0].message.startswith(STALE_PREFIX) for ds in published[:-1])  # shown stale while typing
    final = published[-1][0]
    assert not final.message.startswith(STALE_PREFIX) and final.range.start.line == 4
