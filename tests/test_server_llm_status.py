"""An LLM that gives no answer, through the server: the cell's hover says "no verdict" (never reads as
safe) and the editor gets one message when the LLM starts failing and one when it answers again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import TestKernel
from tests.fake_llm_servers import Answer, FakeLLMServer, crash_answer
from tests.server_client import SERVER_COMMAND, SERVER_ENV, Notebook, end_session, has, start, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV))
async def client(lsp_client: LanguageClient, fake_llm: FakeLLMServer) -> Any:
    options = {
        "provider": "openai-compatible",
        "baseUrl": fake_llm.openai_url,
        "model": "fake-model",
        "debounce": 100,
        "dryRun": "off",
        "retries": 0,
    }
    await start(lsp_client, options)
    yield
    await end_session(lsp_client)


def _said(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.messages if text in m.message]


async def _hover(client: LanguageClient, uri: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line=0, character=2))
        )
        if found is not None and isinstance(found.contents, types.MarkupContent):
            return found.contents.value
        await asyncio.sleep(0.1)
    raise AssertionError("no hover on the cell")


async def test_no_answer_is_a_no_verdict_hover_and_one_message_per_change(
    client: LanguageClient, kernel: TestKernel, fake_llm: FakeLLMServer
) -> None:
    kernel.run("import pandas as pd\nstatus_df = pd.DataFrame({'a': [1.0, 2.0]})")
    fake_llm.push(*[Answer("I cannot tell.")] * 4)  # garbled, and garbled again after the corrective turn
    nb = Notebook(client, [("status_df = pd.DataFrame({'a': [1.0, 2.0]})", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await asyncio.sleep(0.3)
    nb.edit(1, "x = status_df['a'].sum()\n")
    text = await _hover(client, nb.cell_uris[1])
    assert "no verdict: the LLM's answers could not be parsed" in text
    nb.edit(1, "x = status_df['a'].sum() + 1\n")  # fails again: no second message
    await asyncio.sleep(2.0)
    assert len(_said(client, "the LLM gives no answer")) == 1
    fake_llm.push(Answer(crash_answer(line=1, exception="ValueError")))
    nb.edit(1, "y = status_df['a'].mean() * 3\n")  # nothing the checks judge: the LLM is asked
    await wait_for(client, nb.cell_uris[1], has("ValueError"))
    deadline = time.monotonic() + 10
    while not _said(client, "the LLM answers again") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(_said(client, "the LLM answers again")) == 1
