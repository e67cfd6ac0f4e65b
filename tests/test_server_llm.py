"""The LLM layer through the server: the real OpenAI SDK against a fake OpenAI-compatible server.

A prediction arrives as a Warning after the built-in checks found nothing, with ``$/progress``
while it runs and ``crane.showPrompt`` showing the exact exchange; an answer that arrives after the
cell changed is never shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import TestKernel
from tests.fake_llm_servers import Answer, FakeLLMServer, Slow, crash_answer
from tests.server_client import SERVER_COMMAND, SERVER_ENV, Notebook, end_session, has, start, wait_for

pytestmark = pytest.mark.timeout(120)
KEY_VAR = "CRANE_TEST_LLM_KEY"


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER_COMMAND, server_env={**SERVER_ENV, KEY_VAR: "sk-test-not-a-secret"}
    )
)
async def client(lsp_client: LanguageClient, fake_llm: FakeLLMServer) -> Any:
    options = {
        "provider": "openai-compatible",
        "baseUrl": fake_llm.openai_url,
        "apiKeyEnv": KEY_VAR,
        "model": "fake-model",
        "debounce": 100,
        "dryRun": "off",
        "retries": 0,
    }
    lsp_client.statuses = await start(lsp_client, options)  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


async def test_llm_prediction_is_a_warning_with_progress_and_prompt(
    client: LanguageClient, kernel: TestKernel, fake_llm: FakeLLMServer
) -> None:
    kernel.run("import pandas as pd\nllm_df = pd.DataFrame({'a': [1.0, 2.0]})")
    fake_llm.push(Answer(crash_answer(line=2, exception="ValueError", reasoning="The shapes differ.")))
    nb = Notebook(client, [("llm_df = pd.DataFrame({'a': [1.0, 2.0]})", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await asyncio.sleep(0.3)
    nb.edit(1, "x = llm_df['a']\ny = x * 2\nz = y.sum()\n")
    diags = await wait_for(client, nb.cell_uris[1], has("ValueError", line=1))
    assert diags[0].severity == types.DiagnosticSeverity.Warning
    sent = fake_llm.requests[-1].json
    assert "llm_df" in str(sent)  # the runtime information went into the prompt
    assert "sk-test-not-a-secret" not in str(sent)
    ends = [
        v
        for reports in client.progress_reports.values()
        for v in reports
        if isinstance(v, types.WorkDoneProgressEnd)
    ]
    assert ends, "no $/progress while the LLM ran"
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.showPrompt", arguments=[nb.cell_uris[1]])
    )
    assert shown is not None and "z = y.sum()" in shown["prompt"]
    assert "The shapes differ." in shown["answer"]


async def test_slow_answer_for_an_outdated_cell_is_never_shown(
    client: LanguageClient, kernel: TestKernel, fake_llm: FakeLLMServer
) -> None:
    kernel.run("import pandas as pd\nllm_df2 = pd.DataFrame({'a': [1.0, 2.0]})")
    # first text: the model answers slowly with a crash; second text: it answers at once, no crash
    fake_llm.push(
        Slow(2.5, Answer(crash_answer(line=0, exception="IndexError"))),
        Answer(crash_answer(crash=False)),
    )
    before = len(fake_llm.requests)
    nb = Notebook(client, [("llm_df2 = pd.DataFrame({'a': [1.0, 2.0]})", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await asyncio.sleep(0.3)
    nb.edit(1, "v = float(llm_df2['a'].mean()) + 1\n")
    while len(fake_llm.requests) == before:  # the slow request is in flight
        await asyncio.sleep(0.02)
    nb.edit(1, "v = float(llm_df2['a'].mean()) + 2\n")
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)
    await asyncio.sleep(3.0)  # well past the moment the slow answer arrives
    assert not client.diagnostics[nb.cell_uris[1]]
    assert len(fake_llm.requests) - before == 2
