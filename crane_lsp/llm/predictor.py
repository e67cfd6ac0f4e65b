"""The LLM layer of the pipeline: prompt, samples, majority vote, cache, one ``Prediction`` out.

    predictor = LLMPredictor(settings)            # raises MissingKeyError / ConfigError, clearly worded
    prediction = await predictor.predict(Ask(src, executed=[...], snapshot=snap))
    predictor.last_exchange(src)                  # prompt + raw answers, for the editor's "show prompt"

Runtime failures (429s past the retries, a dead server, garbled answers) never raise: they come
back as a ``certainty="none"`` prediction whose notes say what went wrong, because "no answer"
must never read as "safe" nor crash the server. ``raise_errors=True`` (the benchmark) raises them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache, TTLCache

from crane_lsp.layers import Ask, LayerName
from crane_lsp.llm.errors import LLMError, ProviderError
from crane_lsp.llm.prompt import (
    PROMPT_VERSION,
    LLMAnswer,
    MalformedAnswer,
    Message,
    build_messages,
    parse_answer,
)
from crane_lsp.llm.providers import Completion, Provider, make_provider
from crane_lsp.prediction import Evidence, Fix, Prediction, Source
from crane_lsp.render import render_snapshot
from crane_lsp.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Sample:
    """One vote: every raw text it took (a garbled answer is asked again) and the answer, if any."""

    raw: list[str] = field(default_factory=list)
    answer: LLMAnswer | None = None
    error: str | None = None
    completions: list[Completion] = field(default_factory=list)


@dataclass
class Exchange:
    """What was sent and what came back, for "show prompt" and for debugging a verdict."""

    messages: list[Message]
    samples: list[Sample]
    provider: str
    model: str
    cached: bool = False

    @property
    def raw_answers(self) -> list[str]:
        return [text for s in self.samples for text in s.raw]

    def prompt_text(self) -> str:
        return "\n\n".join(f"# {m.role}\n{m.content}" for m in self.messages)

    def answers_text(self) -> str:
        parts = []
        for i, s in enumerate(self.samples, 1):
            body = "\n---\n".join(s.raw) if s.raw else f"(no answer: {s.error})"
            label = f"{self.provider}/{self.model}" + (", cached" if self.cached else "")
            parts.append(f"# answer {i} ({label})\n{body}")
        return "\n\n".join(parts)

    def render(self) -> str:
        return self.prompt_text() + "\n\n" + self.answers_text()

    def __iter__(self) -> Iterator[str]:
        """``prompt, answer = exchange``: the pair the editor's "show prompt" command displays."""
        return iter((self.prompt_text(), self.answers_text()))


@dataclass
class Usage:
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def request_key(messages: Sequence[Message], signature: dict[str, Any], votes: int) -> str:
    """Hash of everything that shapes the answer: prompt, provider, model, temperature, votes. No key."""
    material = {
        "v": PROMPT_VERSION,
        "messages": [m.as_dict() for m in messages],
        "provider": signature,
        "votes": votes,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


def corrective_turn(text: str, why: str, truncated: bool) -> list[Message]:
    """The follow-up to a malformed answer: the answer itself (shortened) and what to do instead."""
    shorter = " Keep the reasoning to two sentences." if truncated else ""
    return [
        Message("assistant", text[-1500:] if text else "(empty)"),
        Message(
            "user",
            f"That answer could not be used: {why}. Reply again with only the JSON object "
            f"(keys reasoning, crash, line, exception, evidence, fix) and nothing else.{shorter}",
        ),
    ]


def _evidence(items: Sequence[str]) -> list[Evidence]:
    out = []
    for item in items:
        m = re.match(r"\s*(.+?)\s*(?:==?|:)\s+(.+)", item)
        out.append(
            Evidence(fact=m.group(1), value=m.group(2)) if m else Evidence(fact=item.strip(), value="")
        )
    return out


def _sum(values: Iterator[int | None]) -> int | None:
    """The total of the counts a server reported; None when it reported none (not 0: unknown)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _first_sentence(text: str, limit: int = 160) -> str:
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


class LLMPredictor:
    """Votes, cache and bookkeeping around one ``Provider``: the pipeline's ``llm`` layer."""

    name: LayerName = "llm"

    def __init__(
        self,
        settings: Settings,
        provider: Provider | None = None,
        *,
        cache_size: int = 256,
        cache_ttl_s: float = 3600.0,
        malformed_retries: int = 1,
        **policy: Any,
    ) -> None:
        self.settings = settings
        self.provider = provider if provider is not None else make_provider(settings, **policy)
        self.malformed_retries = malformed_retries
        self.usage = Usage()
        self._cache: TTLCache[str, tuple[Prediction, Exchange]] = TTLCache(
            maxsize=cache_size, ttl=cache_ttl_s
        )
        self._exchanges: LRUCache[str, Exchange] = LRUCache(maxsize=64)
        self._inflight: dict[str, asyncio.Task[tuple[Prediction, Exchange]]] = {}
        self._last: Exchange | None = None
        #: called with why the LLM gives no answer, or None once it answers again: on changes only
        self.on_state: Callable[[str | None], None] | None = None
        self._failing: bool = False
        #: how the latest question went, for the editor's status (status.py): None before any
        self.answered: bool | None = None
        self.reached: bool | None = None  # the server answered at all (a garbled answer is an answer)
        self.last_error: str | None = None

    def _report(self, failure: str | None, *, reached: bool = True) -> None:
        self.answered, self.reached = failure is None, reached
        if failure is not None:
            self.last_error = failure
        if (failure is not None) == self._failing:
            return
        self._failing = failure is not None
        if self.on_state is not None:
            self.on_state(failure)

    # -- public ----------------------------------------------------------------------------------
    def messages(self, ask: Ask) -> list[Message]:
        """The exact prompt ``predict`` would send (runtime omitted when ``runtimeInfo`` is off)."""
        runtime: str | None = None
        if self.settings.runtime_info:
            if ask.runtime_text is not None:
                runtime = ask.runtime_text
            elif ask.snapshot is not None:
                runtime = render_snapshot(
                    ask.snapshot, privacy=self.settings.privacy, max_columns=self.settings.max_columns
                )
        return build_messages(list(ask.executed), ask.target, runtime, ask.known)

    async def predict(self, ask: Ask, *, raise_errors: bool = False) -> Prediction:
        """The ``Layer`` call: one verdict (``ask.explicit`` bypasses the cache)."""
        prediction, _ = await self.predict_exchange(ask, raise_errors=raise_errors)
        return prediction

    async def predict_exchange(self, ask: Ask, *, raise_errors: bool = False) -> tuple[Prediction, Exchange]:
        """``predict``, also returning this call's own exchange (concurrent callers each get theirs).

        A server that says nothing of its context up front (llama-cpp-python) names it in its error
        to an over-long prompt: the prompt is then fitted to it and asked once more."""
        started = time.perf_counter()
        blind = await self._prompt_limit() is None
        try:
            result, exchange = await self._predict_once(ask, started, raise_errors=raise_errors)
        except ProviderError:
            if not blind or await self._prompt_limit() is None:
                raise
            return await self._predict_once(ask, started, raise_errors=raise_errors)
        if blind and not result.source.votes and await self._prompt_limit() is not None:
            return await self._predict_once(ask, started, raise_errors=raise_errors)
        return result, exchange

    async def _prompt_limit(self) -> int | None:
        try:
            return await self.provider.prompt_limit()
        except Exception:  # a probe that fails leaves the prompt as it is: the server will say
            return None

    async def _predict_once(
        self, ask: Ask, started: float, *, raise_errors: bool
    ) -> tuple[Prediction, Exchange]:
        target, bypass_cache = ask.target, ask.explicit
        messages, fit_notes, too_long = await self._fitted(ask)
        if too_long is not None:
            if raise_errors:
                raise ProviderError(too_long)
            source = Source(layer="llm", provider=self.provider.name, model=self.provider.model)
            failed = Prediction.unanswered("too-long", f"no verdict: {too_long}")
            failed.source = source
            return failed, Exchange(
                messages, [Sample(error=too_long)], self.provider.name, self.provider.model
            )
        key = request_key(messages, self.provider.signature(), self.settings.votes)
        hit = None if bypass_cache else self._cache.get(key)
        if hit is not None:
            self.usage.cache_hits += 1
            prediction, exchange = hit
            exchange = Exchange(
                exchange.messages, exchange.samples, exchange.provider, exchange.model, cached=True
            )
            result = prediction.model_copy(deep=True, update={"id": uuid.uuid4().hex[:12]})
            result.source.cached = True
            result.source.latency_ms = (time.perf_counter() - started) * 1000
        else:
            if bypass_cache:  # shared with no one: cancelling the caller cancels the request
                prediction, exchange = await self._run(messages, target)
            else:
                task = self._inflight.get(key)
                if task is None:
                    task = asyncio.ensure_future(self._run(messages, target))
                    self._inflight[key] = task
                    task.add_done_callback(lambda _t: self._inflight.pop(key, None))
                prediction, exchange = await asyncio.shield(task)
            result = prediction.model_copy(deep=True)
            if prediction.source.votes:  # at least one valid answer: worth keeping
                self._cache[key] = (prediction, exchange)
            elif raise_errors:
                errors = [s.error for s in exchange.samples if s.error]
                raise ProviderError("; ".join(dict.fromkeys(errors)) or "no valid answer")
        result.notes[:0] = fit_notes
        self._exchanges[target] = exchange
        self._last = exchange
        return result, exchange

    async def _fitted(self, ask: Ask) -> tuple[list[Message], list[str], str | None]:
        """The prompt, its executed cells shortened oldest-first to fit the model's context (counted
        with the server's tokenizer where it has one); the note saying so; or why it cannot fit."""
        messages = self.messages(ask)
        limit = await self._prompt_limit()
        if limit is None:
            return messages, [], None
        context = limit + self.provider.policy.max_tokens
        executed = list(ask.executed)
        while True:
            text = "\n".join(m.content for m in messages)
            counted = await self.provider.count_tokens(text)
            tokens = (
                counted if counted is not None else len(text) // 3
            )  # cautious: code runs 3-4 chars a token
            if tokens <= limit:
                break
            if not executed:
                return (
                    messages,
                    [],
                    (
                        f"prompt of {tokens} tokens exceeds the model's context of {context} "
                        f"(with {self.provider.policy.max_tokens} kept for the answer)"
                    ),
                )
            executed = executed[1:]
            messages = self.messages(dataclasses.replace(ask, executed=executed))
        dropped = len(ask.executed) - len(executed)
        if not dropped:
            return messages, [], None
        cells = "cell was" if dropped == 1 else f"{dropped} cells were"
        note = f"prompt shortened to fit the model's context of {context} tokens: "
        note += f"the oldest executed {cells} left out"
        return messages, [note], None

    def last_exchange(self, target: str | None = None) -> Exchange | None:
        """The latest exchange for ``target`` (its source text), or the latest of all."""
        return self._last if target is None else self._exchanges.get(target)

    def clear_cache(self) -> None:
        self._cache.clear()

    async def aclose(self) -> None:
        await self.provider.aclose()

    # -- internals -------------------------------------------------------------------------------
    async def _run(self, messages: list[Message], target: str) -> tuple[Prediction, Exchange]:
        started = time.perf_counter()
        samples = await asyncio.gather(*(self._sample(messages) for _ in range(self.settings.votes)))
        exchange = Exchange(messages, list(samples), self.provider.name, self.provider.model)
        prediction = self._combine(samples, target)
        prediction.source.latency_ms = (time.perf_counter() - started) * 1000
        return prediction, exchange

    async def _sample(self, messages: list[Message]) -> Sample:
        """One vote. A malformed answer is not asked again byte for byte (a prefix-caching server would
        repeat it): the follow-up turn shows the model its answer and says what was wrong with it."""
        sample = Sample()
        for _ in range(self.malformed_retries + 1):
            try:
                completion = await self.provider.complete(messages)
            except LLMError as exc:
                sample.error = str(exc)
                return sample
            self.usage.requests += completion.attempts
            self.usage.prompt_tokens += completion.prompt_tokens or 0
            self.usage.completion_tokens += completion.completion_tokens or 0
            sample.completions.append(completion)
            sample.raw.append(completion.text)
            try:
                sample.answer = parse_answer(completion.text)
                sample.error = None
                return sample
            except MalformedAnswer as exc:
                why = str(exc)
                if completion.truncated:
                    why = f"the answer was cut off at the {self.provider.output_cap}-token cap"
                sample.error = f"malformed answer ({why})"
                log.info("malformed answer from %s/%s; asking again", self.provider.name, self.provider.model)
                messages = [*messages, *corrective_turn(completion.text, why, completion.truncated)]
        return sample

    def _combine(self, samples: Sequence[Sample], target: str) -> Prediction:
        answers = [s.answer for s in samples if s.answer is not None]
        completions = [c for s in samples for c in s.completions]
        source = Source(
            layer="llm",
            provider=self.provider.name,
            model=completions[0].model if completions else self.provider.model,
            votes=[a.crash for a in answers],
            prompt_tokens=_sum(c.prompt_tokens for c in completions),  # None: the server said nothing
            completion_tokens=_sum(c.completion_tokens for c in completions),
        )
        notes = [
            f"LLM sample {i}: {s.error}" for i, s in enumerate(samples, 1) if s.answer is None and s.error
        ]
        if not answers:
            failed = "garbled" if any(s.raw for s in samples) else "unavailable"
            reason = (
                "the LLM's answers could not be parsed, so they were not trusted"
                if failed == "garbled"
                else "the LLM could not be reached"
            )
            why = next((s.error for s in samples if s.error), None)
            gone = all("cannot reach" in (s.error or "") for s in samples)  # else the server said something
            self._report(f"{reason} ({why})" if why else reason, reached=not gone)
            message = f"no verdict: {reason}"  # the editor shows it as a no-verdict, never as safe
            unanswered = Prediction.unanswered("llm-failed", message)
            unanswered.source, unanswered.notes = source, notes
            return unanswered
        self._report(None)
        crashing = [a for a in answers if a.crash]
        n = len(samples)
        crash = len(crashing) * 2 > n  # of the votes asked for: ties and failures count as "no crash"
        if n > 1:
            notes.append(f"{len(crashing)} of {n} samples predict a crash")
        if not crash:
            calm = next((a for a in answers if not a.crash), answers[0])
            return Prediction(
                crash=False,
                certainty="none",
                message="the LLM predicts no crash",
                diagnosis=calm.reasoning,
                source=source,
                notes=notes,
            )
        lines = Counter(a.line for a in crashing if a.line is not None)
        line = lines.most_common(1)[0][0] if lines else None
        agreeing = [a for a in crashing if a.line == line] or crashing
        exception = Counter(a.exception for a in agreeing if a.exception).most_common(1)
        best = next((a for a in agreeing if exception and a.exception == exception[0][0]), agreeing[0])
        prediction = Prediction(
            crash=True,
            certainty="predicted",
            exception=exception[0][0] if exception else None,
            message=f"{best.exception or 'a crash'} predicted: {_first_sentence(best.reasoning)}",
            diagnosis=best.reasoning,
            evidence=_evidence(best.evidence),
            fix=self._fix(best, target, notes),
            source=source,
            notes=notes,
        )
        self._place(prediction, line, target)
        return prediction

    @staticmethod
    def _fix(answer: LLMAnswer, target: str, notes: list[str]) -> Fix | None:
        """The answer's fix as a ``Fix``: an edit of one line of the cell (0-based, end exclusive, as
        every candidate; ``code`` may be several lines), which crane_lsp.fixes dry-runs before it is
        offered. An old-style string is a description with no edit; an edit that does not fit the
        cell is dropped, and the notes say why."""
        if answer.fix_dropped is not None:
            notes.append(f"the LLM's fix was dropped: not an edit ({answer.fix_dropped})")
        fix = answer.fix
        if fix is None:
            return None
        if isinstance(fix, str):
            return Fix(description=fix, layer="llm")
        rows = target.split("\n")
        if not 1 <= fix.line <= len(rows):
            lines = "line" if len(rows) == 1 else f"{len(rows)} lines"
            notes.append(f"the LLM's fix was dropped: it edits line {fix.line}, outside this cell's {lines}")
            return None
        code = fix.code
        row = rows[fix.line - 1]
        indent = row[: len(row) - len(row.lstrip())]
        if indent and not code[:1].isspace():  # the model wrote the code flush left
            code = "\n".join(indent + part if part.strip() else part for part in code.split("\n"))
        first = code.strip().split("\n")[0]
        return Fix(
            description=fix.why or f"replace line {fix.line}",
            start_line=fix.line - 1,
            end_line=fix.line,
            new_text=code,
            title=f"Use {first}" if len(first) <= 60 else f"Use {first[:57]}...",
            layer="llm",
        )

    @staticmethod
    def _place(prediction: Prediction, line: int | None, target: str) -> None:
        """1-based model line -> 0-based span over the line's code; a line outside the cell is dropped."""
        rows = target.split("\n")
        if line is None:
            return
        if not 1 <= line <= len(rows) or not rows[line - 1].strip():
            prediction.notes.append(f"the model named line {line}, which holds no code in this cell")
            return
        text = rows[line - 1].rstrip()
        prediction.line = prediction.end_line = line - 1
        prediction.col = len(text) - len(text.lstrip())
        prediction.end_col = len(text)
