"""One budget setting (``maxTokens`` / ``--max-tokens``) caps every provider's answer, through the REAL
SDKs against a small HTTP server on 127.0.0.1: Chat Completions' ``max_tokens``, the Responses API's
``max_output_tokens``, Gemini's ``maxOutputTokens``. A model that reasons first (o-series, gpt-5,
Gemini 2.5+) counts its reasoning in that cap, so it gets room to reason on top; an answer cut at the
cap is said to be, with the cap it was cut at."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, FakeLLMServer

from crane_lsp.layers import Ask
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.providers import REASONING_ALLOWANCE, thinks
from crane_lsp.settings import Settings

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "df['b'].sum()"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "cap0123456789")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza" + "SyCapTest0123456789")


def llm_for(provider: str, model: str, server: FakeLLMServer, **extra: Any) -> LLMPredictor:
    base = server.gemini_url if provider == "gemini" else server.openai_url
    values = {"provider": provider, "model": model, "base_url": base, "retries": 0, **extra}
    return LLMPredictor(Settings(**values))


def sent_cap(provider: str, body: dict[str, Any]) -> Any:
    if provider == "gemini":
        return body["generationConfig"]["maxOutputTokens"]
    return body["max_output_tokens"] if provider == "openai" else body["max_tokens"]


@pytest.mark.parametrize(
    ("provider", "model", "reasons"),
    [
        ("openai", "gpt-4.1-mini", False),
        ("openai", "gpt-5-mini", True),
        ("openai", "gpt-5-chat-latest", False),
        ("openai", "o4-mini", True),
        ("gemini", "gemini-2.0-flash", False),
        ("gemini", "gemini-2.5-flash", True),
        ("gemini", "gemini-3-pro-preview", True),
        ("openai-compatible", "qwen2.5-coder", False),
    ],
)
async def test_the_budget_setting_caps_every_provider(
    fake_llm: FakeLLMServer, provider: str, model: str, reasons: bool
) -> None:
    fake_llm.push(
        Answer(
            {"reasoning": "r", "crash": False, "line": None, "exception": None, "evidence": [], "fix": None}
        )
    )
    llm = llm_for(provider, model, fake_llm, max_tokens=300)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert p.source.votes == [False]
    assert thinks(provider, model) == reasons
    expected = 300 + (REASONING_ALLOWANCE if reasons else 0)
    assert sent_cap(provider, fake_llm.requests[-1].json) == expected == llm.provider.output_cap


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-4.1-mini"), ("gemini", "gemini-2.5-flash")])
async def test_an_answer_cut_at_the_cap_says_so(fake_llm: FakeLLMServer, provider: str, model: str) -> None:
    cut = '{"reasoning": "The column b is not in'
    fake_llm.push(Answer(cut, finish_reason="length"), Answer(cut, finish_reason="length"))
    llm = llm_for(provider, model, fake_llm, max_tokens=64)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert p.certainty == "none"
    cap = llm.provider.output_cap
    assert any(f"cut off at the {cap}-token cap" in n for n in p.notes), p.notes
    assert len(fake_llm.requests) == 2  # the corrective turn, then no more
