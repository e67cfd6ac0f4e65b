"""Through the real server (pytest-lsp) and a real kernel: an edit has the kernel prepare a jailed
child, and the dry run that follows the edit runs in it (its hover says so); the first dry run,
with no edit before it, forked cold."""

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

PREPARED_NOTE = "a copy prepared while you typed"


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def _hover(client: LanguageClient, uri: str) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 3))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def _settled(statuses: list[dict[str, Any]], quiet_s: float = 0.5, timeout: float = 30.0) -> None:
    """The server's latest status says nothing is being checked, and stays so for ``quiet_s``."""
    deadline = time.monotonic() + timeout
    since = time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, statuses[-1:]
        if not statuses or statuses[-1]["checking"]:
            since = time.monotonic()
        await asyncio.sleep(0.02)


def _fresh(exception: str) -> Any:
    """A diagnostic for ``exception`` that is not an outdated one shown stale."""
    return lambda ds: (
        has(exception)(ds) and not any(isinstance(d.data, dict) and d.data.get("stale") for d in ds)
    )


async def test_an_edit_prepares_the_child_the_next_dry_run_uses(
    client: LanguageClient, kernel: TestKernel
) -> None:
    # a method the checks cannot see into (no source): only the dry run observes the crash
    body = (
        "class _P:\\n    def run(self):\\n        raise LookupError('srv cold')\\n"
        "    def again(self):\\n        raise ArithmeticError('srv prepared')"
    )
    kernel.run(f'exec("{body}")\nsrv_prep = _P()')
    statuses = await start(client, {"debounce": 300, "dryRun": "on"})
    nb = Notebook(client, [("srv_prep.run()", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    await wait_for(client, nb.cell_uris[0], _fresh("LookupError"), timeout=60)
    first = await _hover(client, nb.cell_uris[0])
    assert "observed in a sandboxed copy" in first and PREPARED_NOTE not in first, first
    await _settled(statuses)  # no check in flight: the edit may prepare
    nb.edit(0, "srv_prep.again()")  # didChange: the server asks the kernel to prepare
    await wait_for(client, nb.cell_uris[0], _fresh("ArithmeticError"), timeout=60)
    second = await _hover(client, nb.cell_uris[0])
    assert PREPARED_NOTE in second, second
