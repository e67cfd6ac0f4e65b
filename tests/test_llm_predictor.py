"""Votes, the cache, garbled answers and the exchange record (real openai SDK, fake server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, FakeLLMServer, RecordedRequest, Reply, crash_answer

from crane_lsp.layers import Ask
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.providers import ScriptedProvider
from crane_lsp.settings import Settings

EXECUTED = ["import numpy as np", "a = np.zeros((2, 3))"]
TARGET = "b = np.ones((4, 5))\nc = a @ b"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "0" * 24)


def make(server: FakeLLMServer, **extra: Any) -> LLMPredictor:
    settings = Settings(provider="openai", model="gpt-4o-mini", base_url=server.openai_url, **extra)
    return LLMPredictor(settings, backoff_s=0.01)


async def test_three_votes_two_say_crash_means_crash(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(
        Answer(crash_answer(line=2, exception="ValueError")),
        Answer(crash_answer(crash=False)),
        Answer(
            crash_answer(line=2, exception="ValueError", reasoning="Shapes (2, 3) and (4, 5) do not align.")
        ),
    )
    p = await make(fake_llm, votes=3).predict(Ask(TARGET, EXECUTED))
    assert len(fake_llm.requests) == 3
    assert sorted(p.source.votes or []) == [False, True, True]
    assert (p.crash, p.certainty, p.exception, p.line) == (True, "predicted", "ValueError", 1)
    assert "2 of 3 samples predict a crash" in p.notes
    assert p.source.prompt_tokens == 360  # three requests' usage, summed


async def test_one_crash_vote_of_three_is_no_crash(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(
        Answer(crash_answer()), Answer(crash_answer(crash=False)), Answer(crash_answer(crash=False))
    )
    p = await make(fake_llm, votes=3).predict(Ask(TARGET, EXECUTED))
    assert (p.crash, p.certainty, p.line) == (False, "none", None)


async def test_a_tie_counts_as_no_crash(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer()), Answer(crash_answer(crash=False)))
    p = await make(fake_llm, votes=2).predict(Ask(TARGET, EXECUTED))
    assert not p.crash and sorted(p.source.votes or []) == [False, True]


async def test_votes_are_sent_concurrently(fake_llm: FakeLLMServer) -> None:
    in_flight = 0
    peak = 0

    def handler(req: RecordedRequest) -> Reply:  # runs in the server's threads
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        time.sleep(0.3)
        in_flight -= 1
        return Answer(crash_answer())

    fake_llm.handler = handler
    p = await make(fake_llm, votes=3).predict(Ask(TARGET, EXECUTED))
    assert p.crash and peak >= 2


async def test_a_cache_hit_sends_no_request(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer(line=2)), Answer(crash_answer(crash=False)), Answer(crash_answer()))
    llm = make(fake_llm)
    first = await llm.predict(Ask(TARGET, EXECUTED))
    again = await llm.predict(Ask(TARGET, EXECUTED))
    assert len(fake_llm.requests) == 1
    assert again.source.cached and not first.source.cached
    assert (again.crash, again.line) == (first.crash, first.line) and again.id != first.id
    assert llm.usage.cache_hits == 1
    # a different kernel state is a different request
    await llm.predict(Ask(TARGET, EXECUTED, runtime_text="a: ndarray | shape (2, 3)"))
    assert len(fake_llm.requests) == 2
    # "Re-check" bypasses the cache and refreshes it
    fresh = await llm.predict(Ask(TARGET, EXECUTED, explicit=True))
    assert len(fake_llm.requests) == 3 and not fresh.source.cached


async def test_identical_requests_in_flight_share_one_call(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer(crash_answer()))
    llm = make(fake_llm)
    a, b = await asyncio.gather(llm.predict(Ask(TARGET, EXECUTED)), llm.predict(Ask(TARGET, EXECUTED)))
    assert len(fake_llm.requests) == 1 and a.crash and b.crash


async def test_a_garbled_answer_is_asked_again(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer("The cell will crash, I am sure."), Answer(crash_answer(line=2)))
    llm = make(fake_llm)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert len(fake_llm.requests) == 2 and p.crash and p.line == 1
    exchange = llm.last_exchange(TARGET)
    assert exchange is not None and exchange.raw_answers[0] == "The cell will crash, I am sure."


async def test_answers_garbled_twice_are_reported_never_trusted_nor_cached(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Answer('{"crash": "certainly"}'), Answer("```json\n{crash: true}\n```"))
    llm = make(fake_llm)
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert (p.crash, p.certainty, p.source.votes) == (False, "none", [])
    assert "could not be parsed" in p.message and any("malformed" in n for n in p.notes)
    fake_llm.push(Answer(crash_answer()))
    assert (await llm.predict(Ask(TARGET, EXECUTED))).crash  # not served from the cache
    assert len(fake_llm.requests) == 3


async def test_a_line_outside_the_cell_is_dropped_with_a_note() -> None:
    answer = '{"reasoning": "r", "crash": true, "line": 40, "exception": "ValueError", "evidence": []}'
    llm = LLMPredictor(Settings(provider="openai"), provider=ScriptedProvider(lambda m, n: answer))
    p = await llm.predict(Ask(TARGET, EXECUTED))
    assert p.crash and p.line is None and any("line 40" in n for n in p.notes)


async def test_show_prompt_gets_the_prompt_and_the_raw_answers() -> None:
    texts = ['{"reasoning": "fine", "crash": false}']
    llm = LLMPredictor(Settings(provider="openai"), provider=ScriptedProvider(lambda m, n: texts[0]))
    await llm.predict(Ask(TARGET, EXECUTED))
    exchange = llm.last_exchange(TARGET)
    assert exchange is not None and llm.last_exchange() is exchange
    prompt, answer = exchange  # the pair the server's showPrompt command unpacks
    assert "# Target Cell:\n1 b = np.ones((4, 5))\n2 c = a @ b" in prompt
    assert '"reasoning": "fine"' in answer
    assert llm.last_exchange("some other cell") is None


async def test_concurrent_calls_each_get_their_own_exchange() -> None:
    def answer(messages: object, n: int) -> str:
        return f'{{"reasoning": "call {n}", "crash": {"true" if n % 2 else "false"}}}'

    llm = LLMPredictor(Settings(provider="openai", votes=1), provider=ScriptedProvider(answer))
    pairs = await asyncio.gather(
        *(llm.predict_exchange(Ask(TARGET, EXECUTED, explicit=True)) for _ in range(4))
    )
    seen = set()
    for prediction, exchange in pairs:
        (raw,) = exchange.raw_answers
        assert ('"crash": true' in raw) == prediction.crash and prediction.diagnosis in raw
        seen.add(raw)
    assert len(seen) == 4
