"""Structured output in each server's own dialect (issue 26): what the probe starts with per server kind
and version, the request body each dialect sends (checked by how the real server reads it:
``FakeLLMServer.enforced``), one retry in the next dialect when a server refuses one, and what a server
took remembered for the next provider that talks to it. The real llama-cpp-python server's own dialect is
in tests/test_llm_real_server.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, Error, FakeLLMServer, RecordedRequest, Reply, crash_answer

from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.probe import _older
from crane_lsp.llm.prompt import ANSWER_SCHEMA
from crane_lsp.llm.providers import OpenAICompatibleProvider
from crane_lsp.settings import Settings

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "df['b'].sum()"
KEYS_IN_PROMPT = "Answer with one JSON object"


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    dialects.forget()  # a port reused by a later test's server must not inherit what this one learned
    yield
    dialects.forget()


def local(server: FakeLLMServer, **extra: Any) -> LLMPredictor:
    values: dict[str, Any] = {
        "provider": "openai-compatible",
        "model": "smollm2",
        "base_url": server.openai_url,
        "retries": 0,
        "request_timeout_s": 5,
        **extra,
    }
    return LLMPredictor(Settings(**values))


def dialect(llm: LLMPredictor) -> str:
    assert isinstance(llm.provider, OpenAICompatibleProvider)
    return llm.provider.dialect


BOUNDED = dialects.bounded_schema(512)  # llama.cpp grammars: lengths that fit the 512-token cap


@pytest.mark.parametrize(
    ("kind", "version", "expected", "enforced", "keys_in_prompt"),
    [
        ("llama-cpp-python", None, "json_object", BOUNDED, False),
        ("llama.cpp", None, "json_schema", BOUNDED, False),
        ("ollama", "0.12.3", "json_schema", ANSWER_SCHEMA, False),
        ("ollama", "0.4.7", "json_mode", "json", True),  # json_schema is silently ignored before 0.5
        ("vllm", "0.11.0", "json_schema", ANSWER_SCHEMA, False),
        ("vllm", "0.8.5", "guided_json", ANSWER_SCHEMA, True),  # an unknown field is ignored: keys too
        ("vllm", None, "json_schema", ANSWER_SCHEMA, False),  # no /version: the documented OpenAI field
        ("plain", None, "json_schema", ANSWER_SCHEMA, False),
    ],
)
async def test_the_first_request_is_in_the_servers_own_dialect(
    kind: str, version: str | None, expected: str, enforced: Any, keys_in_prompt: bool
) -> None:
    with FakeLLMServer(kind=kind, context=8192, version=version) as server:
        server.push(Answer(crash_answer()))
        llm = local(server)
        p = await llm.predict(Ask(TARGET, EXECUTED))
        assert p.crash and len(server.requests) == 1 and dialect(llm) == expected
        request = server.requests[0]
        assert server.enforced(request) == enforced  # what that server constrains the answer to
        body = request.json
        assert body["max_tokens"] == 512 and body["stream"] is True
        # a dialect the server may ignore also lists the keys in the prompt; an enforced one does not
        assert (KEYS_IN_PROMPT in body["messages"][0]["content"]) == keys_in_prompt
        if expected == "guided_json":  # vLLM's own field, at the top of the body (the SDK's extra_body)
            assert body["guided_json"] == ANSWER_SCHEMA and "response_format" not in body


def test_the_bounded_schema_fits_the_cap_and_is_the_same_answer() -> None:
    """A capped answer under llama.cpp's grammar closes its JSON: its strings and lists fit the cap
    (about 3.5 characters a token), and it still parses as the answer schema."""
    for cap in (64, 256, 512, 2048):
        fields = dialects.bounded_schema(cap)["properties"]
        edit = dialects.fix_object(dialects.bounded_schema(cap))["properties"]
        chars = fields["reasoning"]["maxLength"] + edit["code"]["maxLength"] + edit["why"]["maxLength"]
        chars += fields["evidence"]["maxItems"] * fields["evidence"]["items"]["maxLength"]
        assert chars / 3.5 + 70 <= max(cap, 200), cap  # 70: keys, punctuation, an exception name, a line
        assert set(edit) == {"line", "code", "why"} and "maxLength" not in edit["line"]
        assert set(fields) == set(ANSWER_SCHEMA["properties"])
    assert "maxLength" not in ANSWER_SCHEMA["properties"]["reasoning"]  # the shared schema is untouched
    assert "maxLength" not in dialects.fix_object(ANSWER_SCHEMA)["properties"]["code"]


@pytest.mark.parametrize(
    ("kind", "refusal", "then"),
    [
        ("llama.cpp", Error(400, "json_schema: unsupported schema keyword"), "json_object"),
        ("ollama", Error(500, "invalid JSON schema in format"), "json_mode"),
        ("vllm", Error(400, "response_format.type: Input should be 'text' or 'json_object'"), "guided_json"),
        ("plain", Error(400, "Unrecognized request argument supplied: response_format"), "instructions"),
    ],
)
async def test_a_refused_dialect_gets_one_retry_in_the_next_and_the_server_is_remembered(
    kind: str, refusal: Error, then: str
) -> None:
    with FakeLLMServer(kind=kind, context=8192) as server:
        server.push(refusal, Answer(crash_answer()), Answer(crash_answer()))
        first = local(server)
        assert (await first.predict(Ask(TARGET, EXECUTED))).crash
        assert dialect(first) == then and len(server.requests) == 2  # the refusal, then one retry
        assert "response_format" in server.requests[0].json
        # a new provider for the same server (settings changed, the bench's next run) starts there
        second = local(server)
        assert (await second.predict(Ask("y = 1\n" + TARGET, EXECUTED))).crash
        assert len(server.requests) == 3 and dialect(second) == then
        assert server.requests[2].json.get("response_format") == server.requests[1].json.get(
            "response_format"
        )
        # another model on the same server learns for itself
        assert (
            dialects.learned(server.openai_url, "other-model", kind if kind != "plain" else "unknown") is None
        )


async def test_requests_refused_together_step_down_once() -> None:
    def reply(request: RecordedRequest) -> Reply:
        if request.json["response_format"]["type"] == "json_schema":
            return Error(400, "json_schema: unsupported")
        return Answer(crash_answer())

    with FakeLLMServer(reply, kind="llama.cpp", context=8192) as server:
        llm = local(server)
        both = await asyncio.gather(
            llm.predict(Ask(TARGET, EXECUTED)), llm.predict(Ask("z = 3\n" + TARGET, EXECUTED))
        )
        assert all(p.crash for p in both)
        assert dialect(llm) == "json_object"  # not two steps (to instructions) for one refusal
        kinds = [r.json["response_format"]["type"] for r in server.requests]
        assert kinds.count("json_object") == 2 and set(kinds) == {"json_schema", "json_object"}


async def test_a_context_error_naming_tokens_never_steps_down() -> None:
    with FakeLLMServer(kind="ollama", context=8192, version="0.12.3") as server:
        server.push(Error(400, "the input length exceeds the context length"), Answer(crash_answer()))
        llm = local(server)
        p = await llm.predict(Ask(TARGET, EXECUTED))
        assert p.certainty == "none" and dialect(llm) == "json_schema"
        assert dialects.learned(server.openai_url, "smollm2", "ollama") is None


def test_versions_compare_by_number() -> None:
    assert _older("0.4.7", (0, 5)) and not _older("0.5.0", (0, 5)) and not _older("0.12.3", (0, 5))
    assert _older("0.10.1rc1", (0, 10, 2)) and not _older("v0.10.2", (0, 10, 2))
    assert not _older(None, (0, 5)) and not _older("main", (0, 5))


def test_every_kind_steps_down_to_instructions_and_stops() -> None:
    for kind, order in dialects.CHAINS.items():
        assert order[-1] == "instructions"
        seen = [order[0]]
        while seen[-1] != "instructions":
            seen.append(dialects.step_down(kind, seen[-1], "schema refused"))
        assert tuple(seen) == order, kind
