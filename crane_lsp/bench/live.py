"""Live LLM providers under the bench: each vote is one request, its raw answer kept in the SQLite cache
under a hash of the exact request, so a re-run sends nothing and an interrupted run resumes."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from crane_lsp.bench.cache import AnswerCache, request_key
from crane_lsp.bench.cases import BenchCase
from crane_lsp.bench.runner import Answer, RateLimiter, Setting, majority
from crane_lsp.commands.llm_options import budget_values
from crane_lsp.layers import Ask, LayerName
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

if TYPE_CHECKING:
    from crane_lsp.llm import LLMPredictor


def llm_settings(provider: str, args: Any) -> Settings:
    """Settings for one LLM provider from the bench's arguments (each request asks for one vote)."""
    values: dict[str, Any] = {"provider": provider, "votes": 1}
    for field, attr in (("model", "model"), ("base_url", "base_url"), ("api_key_env", "api_key_env")):
        if getattr(args, attr, None):
            values[field] = getattr(args, attr)
    if getattr(args, "temperature", None) is not None:
        values["temperature"] = args.temperature
    values.update(budget_values(args))
    return Settings(**values)


def default_llm_factory(settings: Settings) -> LLMPredictor:
    """The pipeline's own LLM predictor; raises ``LLMError`` for a missing key or a bad configuration."""
    from crane_lsp.llm import LLMPredictor

    return LLMPredictor(settings)


class CachedVotes:
    """An LLM layer that asks ``votes`` times, one request per vote, each answer cached on disk.

    A ``Layer`` like the pipeline's own LLM, so it also serves the notebook path.
    """

    name: LayerName = "llm"

    def __init__(
        self,
        settings: Settings,
        cache: AnswerCache,
        *,
        votes: int = 5,
        limiter: RateLimiter | None = None,
        factory: Callable[[Settings], LLMPredictor] = default_llm_factory,
    ) -> None:
        self.settings = settings.model_copy(update={"votes": 1})
        self.cache = cache
        self.votes = votes
        self.limiter = limiter or RateLimiter(None)
        self.inner = factory(self.settings)
        self.requests = 0  # requests actually sent (cache misses)

    def key(self, messages: list[dict[str, str]], vote: int) -> str:
        """The exact request: provider, model, temperature (as the provider sends them), server,
        prompt version, messages, and which vote this is (identical requests, distinct samples)."""
        from crane_lsp.llm.prompt import PROMPT_VERSION

        return request_key(
            provider=self.inner.provider.signature(),
            base_url=self.settings.base_url,
            prompt_version=PROMPT_VERSION,
            messages=messages,
            vote=vote,
        )

    async def _vote(self, key: str, ask: Ask, *, read_cache: bool) -> tuple[Prediction, bool]:
        """One vote: from the disk cache, or one request whose raw text and parsed verdict are stored."""
        hit = self.cache.get(key) if read_cache else None
        if hit is not None:
            return Prediction.model_validate(hit["prediction"]), True
        await self.limiter.wait()
        self.requests += 1
        prediction, exchange = await self.inner.predict_exchange(
            dataclasses.replace(ask, explicit=True), raise_errors=True
        )
        if not prediction.source.votes:  # no valid answer: report it, never cache it
            raise RuntimeError(prediction.message or "no valid answer")
        self.cache.put(key, {"raw": exchange.raw_answers, "prediction": prediction.model_dump(mode="json")})
        return prediction, False

    async def predict(self, ask: Ask) -> Prediction:
        """The ``Layer`` call: ``votes`` requests, each read from the disk cache unless ``ask.explicit``."""
        messages = [m.as_dict() for m in self.inner.messages(ask)]
        started = time.perf_counter()
        read = not ask.explicit
        if self.inner.provider.local:  # one slot: requests sent together queue there and time out
            answers = [
                await self._vote(self.key(messages, i), ask, read_cache=read) for i in range(self.votes)
            ]
        else:
            answers = await asyncio.gather(
                *(self._vote(self.key(messages, i), ask, read_cache=read) for i in range(self.votes))
            )
        wall_ms = (time.perf_counter() - started) * 1000
        votes = [p.crash for p, _ in answers]
        verdict = majority(votes)
        chosen = next(p for p, _ in answers if p.crash == verdict).model_copy(deep=True)
        src = chosen.source
        src.votes = votes
        src.prompt_tokens = _total(p.source.prompt_tokens for p, _ in answers)
        src.completion_tokens = _total(p.source.completion_tokens for p, _ in answers)
        src.cached = all(c for _, c in answers)
        src.latency_ms = _total_f(p.source.latency_ms for p, _ in answers) if src.cached else wall_ms
        return chosen


def _total(values: Any) -> int | None:
    xs = [v for v in values if v is not None]
    return sum(xs) if xs else None


def _total_f(values: Any) -> float | None:
    xs = [v for v in values if v is not None]
    return float(sum(xs)) if xs else None


def answer_from(prediction: Prediction) -> Answer:
    src = prediction.source
    return Answer(
        predicted=prediction.crash,
        votes=list(src.votes or [prediction.crash]),
        exception=prediction.exception,
        line=None if prediction.line is None else prediction.line + 1,  # 1-based in the report
        message=prediction.message,
        prompt_tokens=src.prompt_tokens,
        completion_tokens=src.completion_tokens,
        latency_ms=src.latency_ms,
        cached=src.cached,
    )


class JunoLLMPredictor:
    """An LLM provider on JunoBench: -RT sends the cells alone, +RT adds the paper's recorded runtime text."""

    def __init__(self, llm: CachedVotes) -> None:
        self.llm = llm
        self.votes = llm.votes
        self.label = f"{llm.settings.provider}/{llm.inner.provider.model}"

    async def predict(self, case: BenchCase, setting: Setting) -> Answer:
        runtime = (case.runtime_text or "") if setting == "+RT" else None
        prediction = await self.llm.predict(Ask(case.target, case.executed, runtime_text=runtime))
        return answer_from(prediction)

    async def aclose(self) -> None:
        await self.llm.inner.aclose()
