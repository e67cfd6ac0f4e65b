"""The LLM's part of ``crane/status`` (llm/status.py): provider and model, reachable or not, the last
error on one line, the server kind and dialect the probe found; through the real pipeline against a
small HTTP server on 127.0.0.1 (answering, garbled, gone)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_llm_servers import Answer, Error, FakeLLMServer, crash_answer

from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.status import llm_status, one_line
from crane_lsp.settings import Settings
from tests.ports import free_port

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "df['b'].sum()"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(kind="llama-cpp-python") as fake:
        yield fake
    dialects.forget()


def test_off_and_disabled_say_so_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert llm_status(Settings(), None)["state"] == "off"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings(provider="openai", model="gpt-5-mini")
    try:
        LLMPredictor(settings)
    except Exception as exc:  # the server keeps this text when it cannot build the LLM
        error = f"{exc}\n(second line)"
    status = llm_status(settings, None, error)
    assert status["state"] == "disabled" and status["provider"] == "openai"
    assert "OPENAI_API_KEY" in status["lastError"] and "\n" not in status["lastError"]


async def test_answering_then_garbled_then_gone(server: FakeLLMServer) -> None:
    settings = Settings(provider="openai-compatible", model="smollm2", base_url=server.openai_url, retries=0)
    llm = LLMPredictor(settings)
    status = llm_status(settings, llm)
    assert (status["state"], status["reachable"], status["lastError"]) == ("idle", None, None)

    server.push(Answer(crash_answer()))
    await llm.predict(Ask(TARGET, EXECUTED))
    status = llm_status(settings, llm)
    assert (status["state"], status["reachable"], status["lastError"]) == ("answering", True, None)
    assert (status["server"], status["dialect"], status["baseUrl"]) == (
        "llama-cpp-python",
        "json_object",
        server.openai_url,
    )

    server.push(Answer("not json at all"), Answer("still not json"))
    await llm.predict(Ask("y = 1\n" + TARGET, EXECUTED))
    status = llm_status(settings, llm)
    assert (status["state"], status["reachable"]) == ("failing", True)
    assert status["lastError"].startswith("the LLM's answers could not be parsed")

    server.push(Error(503, "loading model"))  # the server answered: reachable, and failing
    await llm.predict(Ask("z = 2\n" + TARGET, EXECUTED))
    status = llm_status(settings, llm)
    assert (status["state"], status["reachable"]) == ("failing", True) and "503" in status["lastError"]

    dead = f"http://127.0.0.1:{free_port()}/v1"
    gone_settings = settings.model_copy(update={"base_url": dead})
    gone = LLMPredictor(gone_settings)
    await gone.predict(Ask(TARGET, EXECUTED))
    status = llm_status(gone_settings, gone)
    assert (status["state"], status["reachable"]) == ("failing", False)
    assert dead in status["lastError"] and len(status["lastError"]) <= 200
    json.dumps(status)  # goes on the wire as it is


def test_one_line() -> None:
    assert one_line(None) is None and one_line("") is None
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x" * 300, 10) == "x" * 9 + "…"
