"""The openai-compatible provider as local servers (llama.cpp, Ollama, vLLM) need it, against the fake
server taught their behaviour: token caps, streaming cut-off, no blind retries, structured-output
dialects, corrective follow-ups and errors that name the server. The same pipeline meets a REAL
llama.cpp server in tests/test_llm_real_server.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, Error, FakeLLMServer, RecordedRequest, Reply, Trickle, crash_answer

from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.prompt import ANSWER_SCHEMA, parse_answer
from crane_lsp.llm.providers import OpenAICompatibleProvider
from crane_lsp.settings import Settings
from tests.ports import free_port

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "x = 1\ndf['b'].sum()"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server
    dialects.forget()  # what a server took is remembered per URL: a reused port starts afresh


def local(server: FakeLLMServer, **extra: Any) -> LLMPredictor:
    values: dict[str, Any] = {
        "provider": "openai-compatible",
        "model": "smollm2",
        "base_url": server.openai_url,
        "retries": 2,
        "request_timeout_s": 5,
        **extra,
    }
    return LLMPredictor(Settings(**values), backoff_s=0.01)


def dialect(llm: LLMPredictor) -> str:
    assert isinstance(llm.provider, OpenAICompatibleProvider)
    return llm.provider.dialect


async def test_every_request_is_streamed_and_capped(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer(line=2), completion_tokens=41))
    llm = local(fake_llm, max_tokens=300)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    body = fake_llm.requests[-1].json
    assert (body["max_tokens"], body["stream"]) == (300, True)
    assert p.crash and p.line == 1 and p.source.completion_tokens == 41


async def test_giving_up_on_a_local_server_stops_its_generation_and_is_not_retried(
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.push(Trickle("x" * 500, every_s=0.1, pieces=100), Answer(crash_answer()))
    llm = local(fake_llm, request_timeout_s=0.5)
    started = time.monotonic()
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert time.monotonic() - started < 7
    assert len(fake_llm.requests) == 1  # no second request queued behind the first on a one-slot server
    deadline = time.monotonic() + 3
    while fake_llm.hangups == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_llm.hangups == 1  # the connection was closed: the server stops generating
    assert p.certainty == "none" and not p.crash
    assert any(fake_llm.openai_url in note and "0.5 s" in note for note in p.notes), p.notes


async def test_a_malformed_answer_gets_a_corrective_turn_not_an_identical_retry(
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.push(Answer("I think it will crash."), Answer(crash_answer(line=2)))
    llm = local(fake_llm)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    first, second = (r.json["messages"] for r in fake_llm.requests)
    assert second[: len(first)] == first and len(second) == len(first) + 2
    assert second[-2] == {"role": "assistant", "content": "I think it will crash."}
    assert second[-1]["role"] == "user" and "could not be used" in second[-1]["content"]
    assert p.crash


async def test_an_answer_cut_at_the_cap_says_so(fake_llm: FakeLLMServer) -> None:
    cut = '{"reasoning": "The frame has one column, a, so selecting b'
    fake_llm.push(Answer(cut, finish_reason="length"), Answer(cut, finish_reason="length"))
    p = await local(fake_llm, max_tokens=64).predict(Ask(TARGET, EXECUTED))
    assert p.certainty == "none" and "could not be parsed" in p.message
    assert any("cut off at the 64-token cap" in n for n in p.notes), p.notes
    assert "two sentences" in fake_llm.requests[-1].json["messages"][-1]["content"]


async def test_llama_cpp_json_schema_crash_switches_to_its_own_dialect_once(fake_llm: FakeLLMServer) -> None:
    # llama-cpp-python answers OpenAI's json_schema with a 500 that names it; it takes json_object+schema
    fake_llm.push(Error(500, "'json_schema'"), Answer(crash_answer()), Answer(crash_answer()))
    llm = local(fake_llm)
    await llm.predict(Ask(TARGET, EXECUTED))
    await llm.predict(Ask("y = 2\n" + TARGET, EXECUTED))
    formats = [r.json.get("response_format") for r in fake_llm.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1] == formats[2] == {"type": "json_object", "schema": ANSWER_SCHEMA}
    assert dialect(llm) == "json_object"


async def test_a_context_length_error_keeps_structured_output_and_teaches_the_context(
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.push(
        Error(400, "Requested tokens (3100) exceed context window of 2048"), Error(400, "context length")
    )
    llm = local(fake_llm)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert p.certainty == "none" and any("context" in n for n in p.notes)
    # the context the error named is learned: the prompt, fitted to it, is asked once more (no more)
    assert await llm.provider.prompt_limit() == 2048 - 512 and len(fake_llm.requests) == 2
    assert dialect(llm) == "json_schema"
    fake_llm.push(Answer(crash_answer()))
    await llm.predict(Ask("y = 2\n" + TARGET, EXECUTED))
    assert fake_llm.requests[-1].json["response_format"]["type"] == "json_schema"


async def test_a_server_that_names_its_context_only_in_errors_gets_fitted_prompts() -> None:
    """llama-cpp-python says its context nowhere but in the error to an over-long prompt: the same
    question is then shortened (oldest executed cells first) and asked once more."""
    with FakeLLMServer(kind="llama-cpp-python", context=700) as server:
        server.push(Answer(crash_answer()))
        llm = local(server, max_tokens=200)
        executed = [f"df['c{i}'] = df['a'] * {i}  # " + "padding " * 40 for i in range(20)]
        p = await llm.predict(Ask(TARGET, [*EXECUTED, *executed]))
        assert p.crash, p.notes
        assert any("prompt shortened to fit the model's context of 700 tokens" in n for n in p.notes), p.notes
        sent = [len(" ".join(m["content"] for m in r.json["messages"]).split()) for r in server.requests]
        assert len(sent) == 3 and sent[-1] + 200 <= 700  # streamed, unstreamed (the error), fitted


async def test_an_unrelated_400_keeps_structured_output(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Error(400, "model 'smollm2' not found"), Answer(crash_answer()))
    llm = local(fake_llm)
    await llm.predict(Ask(TARGET, EXECUTED))
    assert dialect(llm) == "json_schema"


async def test_errors_name_the_server_and_hint_at_v1(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Error(404, "Not Found"))
    p = await local(fake_llm, base_url=fake_llm.url).predict(Ask(TARGET, EXECUTED))
    note = " ".join(p.notes)
    assert f"HTTP 404 at {fake_llm.url}" in note and "/v1" in note
    port = free_port()
    dead = f"http://127.0.0.1:{port}/v1"
    p = await local(fake_llm, base_url=dead, retries=0).predict(Ask(TARGET, EXECUTED))
    assert p.certainty == "none" and f"cannot reach the server at {dead}" in " ".join(p.notes)


def test_raw_newlines_inside_json_strings_parse() -> None:
    text = '{"reasoning": "line one\nline two", "crash": false, "line": null, "exception": null, ' + (
        '"evidence": [], "fix": null}'
    )
    assert parse_answer(text).reasoning == "line one\nline two"


def cells(n: int, words: int) -> list[str]:
    return [f"cell_{i} = 0  # " + " ".join(f"w{i}" for _ in range(words)) for i in range(n)]


async def test_llama_cpp_prompts_are_counted_by_its_tokenizer_and_shortened_oldest_first() -> None:
    with FakeLLMServer(kind="llama.cpp", context=400) as server:
        server.push(Answer(crash_answer()))
        executed = cells(10, 40)
        target = "print(" + ", ".join(f"cell_{i}" for i in range(10)) + ")"  # every cell is relevant
        p = await local(server, max_tokens=100).predict(Ask(target, executed))
        sent = " ".join(m["content"] for m in server.requests[-1].json["messages"])
        assert "cell_9 = 0" in sent and "cell_0 = 0" not in sent  # the newest kept, the oldest dropped
        assert any(r.path == "/tokenize" for r in server.probes)
        assert any("shortened to fit the model's context of 400 tokens" in n for n in p.notes), p.notes


async def test_a_prompt_that_cannot_fit_is_not_sent_and_says_why() -> None:
    with FakeLLMServer(kind="llama.cpp", context=200) as server:
        p = await local(server, max_tokens=100).predict(Ask(" ".join(["x"] * 300), []))
        assert server.requests == []
        assert p.certainty == "none" and p.message.startswith("no verdict: prompt of ")
        assert (p.verdict, p.no_verdict) == ("no-verdict", "too-long"), p
        assert "exceeds the model's context of 200" in p.message


@pytest.mark.parametrize(("kind", "expected"), [("llama-cpp-python", "json_object"), ("vllm", "json_schema")])
async def test_the_probe_picks_the_servers_dialect_before_the_first_question(
    kind: str, expected: str
) -> None:
    with FakeLLMServer(kind=kind, context=4096) as server:
        server.push(Answer(crash_answer()))
        llm = local(server)
        p = await llm.predict(Ask(TARGET, EXECUTED))
        assert len(server.requests) == 1 and p.crash  # no 500 to learn from: the first request was right
        assert server.requests[0].json["response_format"]["type"] == expected == dialect(llm)
        assert await llm.provider.prompt_limit() == 4096 - 512 or kind != "vllm"


async def test_a_failing_llm_reads_as_no_verdict_and_is_said_once_per_change(fake_llm: FakeLLMServer) -> None:
    said: list[str | None] = []
    llm = local(fake_llm, retries=0)
    llm.on_state = said.append
    fake_llm.push(Error(503, "loading model"), Error(503, "loading model"), Answer(crash_answer()))
    first = await llm.predict(Ask(TARGET, EXECUTED))
    await llm.predict(Ask("a = 1\n" + TARGET, EXECUTED))
    await llm.predict(Ask("b = 2\n" + TARGET, EXECUTED))
    assert first.message.startswith("no verdict: the LLM could not be reached") and not first.crash
    assert len(said) == 2 and said[1] is None  # failing (once, not per cell), then answering again
    assert said[0] is not None and "503" in said[0] and fake_llm.openai_url in said[0]


def test_bench_fails_fast_on_a_dead_server(capsys: pytest.CaptureFixture[str]) -> None:
    from crane_lsp.cli import main

    dead = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    code = main(["bench", "junobench", "--provider", "openai-compatible", "--base-url", dead, "--model", "m"])
    assert code == 2 and time.monotonic() - started < 15
    assert f"cannot reach the server at {dead}" in capsys.readouterr().err


def test_scores_over_zero_answers_read_n_a() -> None:
    from crane_lsp.bench.metrics import Scores
    from crane_lsp.bench.report import _scores_cells

    assert _scores_cells(Scores(failed=4))[-4:] == ["n/a"] * 4
    assert _scores_cells(Scores(n=2, tp=1, tn=1))[-4:] == ["1.0000"] * 4


async def test_an_empty_stream_is_asked_again_unstreamed_for_the_servers_own_error() -> None:
    """llama-cpp-python 0.3.36 streams a prompt over its context as an empty 200 event stream; only
    the same request, not streamed, says why (a 400 naming the context), and that is what the user reads."""
    with FakeLLMServer(kind="llama-cpp-python", context=50) as server:
        llm = local(server)
        p = await llm.predict(Ask("x = 1\n" + "y = x + 1  # padding words " * 20, []))
        assert p.certainty == "none"
        # the server's error named its context: the prompt, counted against it, is not sent again
        assert "exceeds the model's context of 50" in p.message, p.message
        streamed = [r.json.get("stream") for r in server.requests]
        assert streamed == [True, None], streamed


def test_bench_asks_a_local_server_one_request_at_a_time() -> None:
    """A local server has one slot: the bench's instances and votes, sent together, would queue there
    and time out; against a local URL it sends them one by one unless --concurrency says otherwise."""
    import threading

    from crane_lsp.cli import main

    active, most, lock = [0], [0], threading.Lock()

    def reply(request: RecordedRequest) -> Reply:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return Answer(crash_answer())

    with FakeLLMServer(reply, kind="llama-cpp-python") as server:
        args = ["bench", "junobench", "--provider", "openai-compatible", "--base-url", server.openai_url]
        code = main([*args, "--model", "smollm2", "--limit", "2", "--votes", "3", "--no-cache", "--quiet"])
        assert code == 0 and len(server.requests) == 2 * 2 * 3  # instances x settings x votes
        assert most[0] == 1
