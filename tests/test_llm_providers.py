"""The real ``openai`` and ``google-genai`` SDKs against fake servers on 127.0.0.1: what goes on the
wire (schema, temperature, runtime info, where the key goes) and how failures are handled."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, Error, FakeLLMServer, Slow, crash_answer

from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.errors import MissingKeyError, ProviderError
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.prompt import ANSWER_SCHEMA
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ColumnSummary, ObjectSummary, Snapshot, ValueStats

KEY = "sk-test-" + "Zq8Xw7Vu6Ts5Rq4Po3Nm"
GKEY = "AIza" + "SyTestKey0123456789abcdefghijklmnopq"
EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "x = 1\ndf['b'].sum()"

PROVIDERS = ["openai", "openai-compatible", "gemini"]


def settings_for(provider: str, server: FakeLLMServer, **extra: Any) -> Settings:
    base = server.gemini_url if provider == "gemini" else server.openai_url
    values: dict[str, Any] = {"provider": provider, "base_url": base, "retries": 2, "request_timeout_s": 5}
    values["model"] = {
        "openai": "gpt-4o-mini",
        "openai-compatible": "qwen2.5-coder",
        "gemini": "gemini-2.5-flash",
    }[provider]
    values.update(extra)
    return Settings(**values)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server
    dialects.forget()  # what a server took is remembered per URL: a reused port starts afresh


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GKEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def predictor(settings: Settings) -> LLMPredictor:
    return LLMPredictor(settings, backoff_s=0.01)


def body_text(server: FakeLLMServer, i: int = -1) -> str:
    return server.requests[i].body.decode()


async def test_openai_uses_the_responses_api_with_a_strict_schema(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer(line=2, exception="KeyError", evidence=["df.columns = ['a']"])))
    llm = predictor(settings_for("openai", fake_llm))
    p = await llm.predict(Ask(TARGET, EXECUTED, runtime_text="df: DataFrame | columns ['a']"))
    req = fake_llm.requests[-1]
    assert req.path == "/v1/responses"
    body = req.json
    fmt = body["text"]["format"]
    assert (fmt["type"], fmt["strict"], fmt["schema"]) == ("json_schema", True, ANSWER_SCHEMA)
    assert body["temperature"] == 0.01
    assert "Will the target Jupyter cell crash?" in body["instructions"]
    assert "# Runtime information:\ndf: DataFrame" in body["input"]
    assert "2 df['b'].sum()" in body["input"]
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in req.body.decode()
    assert (p.crash, p.certainty, p.exception, p.line, p.col, p.end_col) == (
        True,
        "predicted",
        "KeyError",
        1,
        0,
        13,
    )
    assert p.evidence[0].fact == "df.columns" and p.evidence[0].value == "['a']"
    assert (p.source.layer, p.source.provider, p.source.model) == ("llm", "openai", "gpt-4o-mini")
    assert (p.source.prompt_tokens, p.source.completion_tokens, p.source.votes) == (120, 30, [True])
    assert p.source.latency_ms is not None and p.source.latency_ms > 0
    await llm.aclose()


async def test_reasoning_models_get_no_temperature(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer(crash=False)))
    llm = predictor(settings_for("openai", fake_llm, model="gpt-5-mini"))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert "temperature" not in fake_llm.requests[-1].json
    assert (p.crash, p.certainty) == (False, "none")


async def test_a_model_that_rejects_temperature_is_asked_again_without(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Error(400, "Unsupported parameter: 'temperature' is not supported with this model."))
    fake_llm.push(Answer(crash_answer()))
    llm = predictor(settings_for("openai", fake_llm, model="some-new-model"))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert [("temperature" in r.json) for r in fake_llm.requests] == [True, False]
    assert p.crash
    await llm.predict(Ask(TARGET + "\n", EXECUTED, explicit=True))  # remembered
    assert "temperature" not in fake_llm.requests[-1].json


async def test_runtime_info_off_sends_no_runtime_section(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer()), Answer(crash_answer()))
    snapshot = Snapshot(variables={"df": ObjectSummary(kind="dataframe", type="DataFrame", shape=[2, 1])})
    await predictor(settings_for("openai", fake_llm, runtime_info=False)).predict(
        Ask(TARGET, EXECUTED, snapshot=snapshot)
    )
    assert "Runtime" not in body_text(fake_llm)
    await predictor(settings_for("openai", fake_llm)).predict(Ask(TARGET, EXECUTED, snapshot=snapshot))
    assert "# Runtime information:\ndf: DataFrame | shape (2, 1)" in fake_llm.requests[-1].json["input"]


async def test_privacy_mode_sends_structure_but_no_values(fake_llm: FakeLLMServer) -> None:
    stats = ValueStats(value_kind="text", distinct=2, examples=["'alice@example.com'"])
    snapshot = Snapshot(
        variables={
            "token": ObjectSummary(kind="str", type="str", value="hunter2-password"),
            "users": ObjectSummary(
                kind="dataframe",
                type="DataFrame",
                shape=[2, 1],
                columns=[ColumnSummary(name="email", dtype="object", stats=stats)],
            ),
        }
    )
    fake_llm.push(Answer(crash_answer()), Answer(crash_answer()))
    await predictor(settings_for("openai", fake_llm)).predict(Ask(TARGET, EXECUTED, snapshot=snapshot))
    assert "alice@example.com" in body_text(fake_llm) and "hunter2-password" in body_text(fake_llm)
    await predictor(settings_for("openai", fake_llm, privacy=True)).predict(
        Ask(TARGET, EXECUTED, snapshot=snapshot)
    )
    private = body_text(fake_llm)
    assert "alice@example.com" not in private and "hunter2-password" not in private
    assert "'email': object" in private and "shape (2, 1)" in private


async def test_openai_compatible_uses_chat_completions_and_needs_no_key_locally(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    fake_llm.push(Answer(crash_answer(line=2)))
    p = await predictor(settings_for("openai-compatible", fake_llm)).predict(Ask(TARGET, EXECUTED))
    req = fake_llm.requests[-1]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer not-needed"
    body = req.json
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["temperature"] == 0.01
    assert p.crash and p.line == 1


async def test_a_server_without_response_format_gets_instructions_and_tolerant_parsing(
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.push(Error(400, "Unrecognized request argument supplied: response_format"))
    fake_llm.push(
        Answer(
            'Sure.\n```json\n{"reasoning": "no column b", "crash": true, "line": 2, '
            '"exception": "KeyError", "evidence": [], "fix": "use a"}\n```'
        )
    )
    p = await predictor(settings_for("openai-compatible", fake_llm)).predict(Ask(TARGET, EXECUTED))
    first, second = (r.json for r in fake_llm.requests)
    assert "response_format" in first and "response_format" not in second
    assert "Answer with one JSON object" in second["messages"][0]["content"]
    assert (p.crash, p.line, p.exception, p.fix and p.fix.description) == (True, 1, "KeyError", "use a")


async def test_gemini_sends_a_response_schema_and_the_key_in_a_header(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer(line=2, exception="KeyError"), prompt_tokens=90, completion_tokens=12))
    p = await predictor(settings_for("gemini", fake_llm)).predict(
        Ask(TARGET, EXECUTED, runtime_text="df: DataFrame")
    )
    req = fake_llm.requests[-1]
    assert req.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert req.headers["x-goog-api-key"] == GKEY
    assert GKEY not in req.body.decode() and GKEY not in req.path
    body = req.json
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["temperature"] == 0.01
    schema = config["responseSchema"]
    assert schema["type"] == "OBJECT" and schema["properties"]["line"]["nullable"] is True
    assert set(schema["required"]) == set(ANSWER_SCHEMA["required"])
    assert "Will the target" in body["systemInstruction"]["parts"][0]["text"]
    assert "# Runtime information:\ndf: DataFrame" in body["contents"][0]["parts"][0]["text"]
    assert (p.crash, p.line, p.source.provider, p.source.prompt_tokens, p.source.completion_tokens) == (
        True,
        1,
        "gemini",
        90,
        12,
    )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_then_success(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.push(Error(429, "Rate limit reached"), Answer(crash_answer()))
    llm = predictor(settings_for(provider, fake_llm))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert len(fake_llm.requests) == 2
    assert p.crash and p.certainty == "predicted"
    assert llm.usage.requests == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_errors_past_the_retries_are_reported_not_trusted(
    fake_llm: FakeLLMServer, provider: str
) -> None:
    fake_llm.push(*[Error(503, "overloaded")] * 6)
    llm = predictor(settings_for(provider, fake_llm, retries=2))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert len(fake_llm.requests) == 3  # one try + two retries
    assert (p.crash, p.certainty, p.source.votes) == (False, "none", [])
    assert "could not be reached" in p.message and "503" in " ".join(p.notes)
    with pytest.raises(ProviderError, match="503"):
        await llm.predict(Ask(TARGET, EXECUTED), raise_errors=True)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_timeout_is_retried_against_a_remote_server(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.push(Slow(10, Answer(crash_answer(crash=False))), Answer(crash_answer()))
    llm = predictor(settings_for(provider, fake_llm, request_timeout_s=0.5))
    llm.provider.local = False  # the fake is on 127.0.0.1; a local server's timeout is not retried
    started = time.monotonic()
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert time.monotonic() - started < 5
    assert len(fake_llm.requests) == 2 and p.crash


async def test_errors_never_echo_the_key(fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    fake_llm.push(Error(401, f"Incorrect API key provided: {KEY[:5]}****{KEY[-4:]} or {KEY}"))
    llm = predictor(settings_for("openai", fake_llm))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    exchange = llm.last_exchange(TARGET)
    assert exchange is not None
    everything = " ".join(
        [*p.notes, p.message, exchange.render(), caplog.text, repr(llm.provider.signature())]
    )
    assert "401" in everything
    assert KEY not in everything and KEY[-4:] not in everything


def test_missing_keys_say_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        LLMPredictor(Settings(provider="openai"))
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        LLMPredictor(Settings(provider="gemini"))
    with pytest.raises(MissingKeyError, match="MY_TEAM_KEY"):
        LLMPredictor(Settings(provider="openai", api_key_env="MY_TEAM_KEY"))
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):  # a remote compatible server needs one
        LLMPredictor(Settings(provider="openai-compatible", model="m", base_url="https://api.example.com/v1"))
    monkeypatch.setenv("MY_TEAM_KEY", "sk-team-key-value-000000")
    assert LLMPredictor(Settings(provider="openai", api_key_env="MY_TEAM_KEY")).provider.model == "gpt-5-mini"


async def test_retry_after_is_honoured(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Error(429, "slow down", retry_after_s=0.4), Answer(crash_answer()))
    started = time.monotonic()
    p = await predictor(settings_for("openai", fake_llm)).predict(Ask(TARGET, EXECUTED))
    assert p.crash and len(fake_llm.requests) == 2
    assert time.monotonic() - started >= 0.4  # the backoff alone would have waited 0.01 s
