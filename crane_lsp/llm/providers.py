"""LLM providers behind one small async interface, each through its REAL SDK.

- ``openai``: the Responses API with a strict JSON schema (``text.format``).
- ``openai-compatible``: any server with Chat Completions at ``base_url`` (vLLM, Ollama, llama.cpp,
  LM Studio), streamed and capped at ``max_tokens``, in the server's own structured-output dialect
  (dialects.py: OpenAI's json_schema, llama.cpp's json_object + schema, Ollama's JSON mode, vLLM's
  guided_json, plain instructions), stepping down only when the server names the format in an error.
- ``gemini``: ``google-genai`` with ``response_schema`` (``http_options.base_url`` for a local server).

Retries (429, 5xx, timeouts, dropped connections) use exponential backoff via tenacity; the SDKs' own
retries are off so there is one policy, configured and tested here. Keys live only inside the SDK
client: never in a signature, a log line or an error message.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from crane_lsp.llm import dialects
from crane_lsp.llm.errors import ConfigError, MissingKeyError, ProviderError
from crane_lsp.llm.probe import ServerInfo, count_tokens, probe_server
from crane_lsp.llm.prompt import (
    ANSWER_SCHEMA,
    ANSWER_SCHEMA_NAME,
    FIX_SCHEMA,
    JSON_INSTRUCTIONS,
    Message,
    redact_secrets,
)
from crane_lsp.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_MODELS = {"openai": "gpt-5-mini", "gemini": "gemini-2.5-flash"}
KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY",),
    "openai-compatible": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
#: What a local server that wants no key is given (the SDKs insist on some string).
NO_KEY = "not-needed"
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal"}


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3  # extra attempts after the first
    backoff_s: float = 1.0  # first wait; doubles each time
    max_backoff_s: float = 30.0
    timeout_s: float = 60.0  # per request
    max_tokens: int = 512  # a verdict needs a few hundred; a local server otherwise fills its context

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> RetryPolicy:
        values = {
            "retries": settings.retries,
            "timeout_s": settings.request_timeout_s,
            "max_tokens": settings.max_tokens,
        }
        return cls(**{**values, **overrides})

    def wait(self, state: RetryCallState) -> float:
        """Exponential backoff, never shorter than a server's ``Retry-After`` (capped)."""
        exp = self.backoff_s * 2 ** (state.attempt_number - 1)
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after_s", None) or 0.0
        return min(max(exp, after), self.max_backoff_s)


@dataclass
class Completion:
    """One raw answer and what it cost."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    attempts: int = 1
    truncated: bool = False  # the server stopped at the max_tokens cap (finish_reason "length")


def accepts_temperature(model: str) -> bool:
    """Reasoning models (o1/o3/o4, gpt-5 except its chat variant) reject ``temperature``."""
    name = model.lower().rsplit("/", 1)[-1]
    return not (re.match(r"(o\d|gpt-5)", name) and "chat" not in name)


#: Tokens a reasoning model may think before its answer. OpenAI's ``max_output_tokens`` and Gemini's
#: ``max_output_tokens`` count reasoning/thinking tokens too, so a reasoning model's cap is the answer's
#: (``max_tokens``) plus this (Gemini 2.5 Pro's largest thinking budget): a net against a runaway
#: answer, not a squeeze on the model's thinking (a cap inside it leaves an empty answer).
REASONING_ALLOWANCE = 32768


def thinks(provider: str, model: str) -> bool:
    """Whether ``model`` spends output tokens on reasoning before its answer: OpenAI's o-series and
    gpt-5 (not its chat variant), Gemini 2.5 and later (thinking on by default)."""
    name = model.lower().rsplit("/", 1)[-1]
    if provider == "openai":
        return not accepts_temperature(name)
    if provider == "gemini":
        found = re.match(r"gemini-(\d+)(?:\.(\d+))?", name)
        version = (int(found.group(1)), int(found.group(2) or 0)) if found else (0, 0)
        return version >= (2, 5) or "thinking" in name
    return False


def is_local(base_url: str | None) -> bool:
    return bool(base_url) and (urlparse(base_url).hostname or "") in _LOCAL_HOSTS


def resolve_key(settings: Settings) -> str:
    """The API key from the environment; a local OpenAI-compatible server may need none."""
    names = (settings.api_key_env,) if settings.api_key_env else KEY_VARIABLES.get(settings.provider, ())
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    if settings.provider == "openai-compatible" and is_local(settings.base_url):
        return NO_KEY
    raise MissingKeyError(settings.provider, names)


def _scrub(text: str, key: str) -> str:
    """Error text from a service can echo (part of) the key: drop both forms before anyone sees it."""
    if key and key != NO_KEY:
        text = text.replace(key, "[REDACTED]")
        if len(key) > 8:  # "Incorrect API key provided: sk-ab****wxyz"
            text = text.replace(key[-4:], "****")
    return redact_secrets(text)


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.transient


class Provider(ABC):
    """One model behind one SDK. ``complete`` is safe to call concurrently."""

    name: str = "provider"
    #: a server on this machine: one slot, so a timed-out request is not sent again (it would queue
    #: behind the generation still running for it) and the stream is cut when we give up
    local: bool = False

    def __init__(self, model: str, *, temperature: float | None, policy: RetryPolicy) -> None:
        self.model = model
        self.temperature = temperature if temperature is not None and accepts_temperature(model) else None
        self.policy = policy

    def signature(self) -> dict[str, Any]:
        """What makes two requests different besides the messages (cache key material; no key)."""
        return {"provider": self.name, "model": self.model, "temperature": self.temperature}

    async def complete(self, messages: Sequence[Message]) -> Completion:
        """One answer, retried on transient failures; raises ``ProviderError`` when out of attempts."""
        started = time.perf_counter()
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.retries + 1),
            wait=self.policy.wait,
            retry=retry_if_exception(_is_transient),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                attempts += 1
                try:
                    # a net under the SDK's own timeout (a server that trickles bytes forever)
                    completion = await asyncio.wait_for(self._request(messages), self.policy.timeout_s + 5)
                except (TimeoutError, asyncio.TimeoutError) as exc:
                    raise ProviderError(
                        f"{self.name}: no answer within {self.policy.timeout_s:g} s{self._where()}",
                        transient=not self.local,
                    ) from exc
                except ProviderError as exc:
                    if exc.transient:
                        log.info("%s attempt %d failed: %s", self.name, attempts, exc)
                    raise
        completion.attempts = attempts
        completion.latency_ms = (time.perf_counter() - started) * 1000
        return completion

    def _where(self) -> str:
        return ""

    @property
    def output_cap(self) -> int:
        """The tokens one request may produce: the answer's cap, plus room to reason for a model that
        reasons first (what an answer "cut off at the cap" was cut at)."""
        allowance = REASONING_ALLOWANCE if thinks(self.name, self.model) else 0
        return self.policy.max_tokens + allowance

    async def prompt_limit(self) -> int | None:
        """Tokens a prompt may have (the model's context less the answer's cap), when the server says."""
        return None

    async def count_tokens(self, text: str) -> int | None:
        """``text``'s length in the server's own tokens, when it offers a tokenizer."""
        return None

    @abstractmethod
    async def _request(self, messages: Sequence[Message]) -> Completion: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


class _Remote(Provider):
    """A provider behind a web API: its key, its server, and the SDK client built from both."""

    def __init__(
        self, model: str, *, key: str, base_url: str | None, temperature: float | None, policy: RetryPolicy
    ) -> None:
        super().__init__(model, temperature=temperature, policy=policy)
        self.base_url = base_url
        self.local = is_local(base_url)
        self._key = key
        self._client = self._connect()

    @abstractmethod
    def _connect(self) -> Any:
        """The SDK's client for ``self._key`` at ``self.base_url`` (its own retries off: ours run)."""

    def signature(self) -> dict[str, Any]:
        return {**super().signature(), "base_url": self.base_url, "max_tokens": self.policy.max_tokens}

    def _where(self) -> str:
        return f" from {self.base_url}" if self.base_url else ""


class _OpenAIBase(_Remote):
    def _connect(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=self._key, base_url=self.base_url, timeout=self.policy.timeout_s, max_retries=0
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _error(self, exc: Exception) -> ProviderError:
        import openai

        where = f" at {self.base_url}" if self.base_url else ""
        if isinstance(exc, openai.APITimeoutError):
            return ProviderError(
                f"{self.name}: request timed out after {self.policy.timeout_s:g} s{self._where()}",
                transient=not self.local,
            )
        if isinstance(exc, openai.APIConnectionError):
            return ProviderError(
                f"{self.name}: cannot reach the server{where} ({type(exc).__name__})", transient=True
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            after = exc.response.headers.get("retry-after")
            try:
                retry_after = float(after) if after else None
            except ValueError:
                retry_after = None
            detail = _scrub(str(getattr(exc, "message", exc)), self._key)
            transient = status in (408, 409, 429) or status >= 500
            if status == 404 and self.base_url and not urlparse(self.base_url).path.rstrip("/"):
                detail += f" (the base URL {self.base_url} has no path: OpenAI-compatible servers "
                detail += "usually serve under /v1, e.g. http://localhost:8080/v1)"
            return ProviderError(
                f"{self.name}: HTTP {status}{where}: {detail}",
                status=status,
                transient=transient,
                retry_after_s=retry_after,
            )
        return ProviderError(f"{self.name}: {type(exc).__name__}: {_scrub(str(exc), self._key)}")

    async def _call(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await fn()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._error(exc) from None


def _rejects(err: ProviderError, word: str) -> bool:
    return err.status in (400, 422) and word in str(err).lower()


_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "format", "guided")


def is_context_error(err: ProviderError) -> bool:
    """The prompt is longer than the model's context: a fact about this prompt, not about the format."""
    text = str(err).lower()
    return "context" in text and any(w in text for w in ("length", "exceed", "window", "token", "size"))


_CONTEXT_NUMBER = re.compile(
    r"maximum context length is (\d+)|context (?:window|length|size) of (\d+)|n_ctx\W{0,4}(\d+)", re.I
)


def context_in(err: ProviderError) -> int | None:
    """The model's context a context-length error names (llama-cpp-python, vLLM and OpenAI: "maximum
    context length is N tokens"; llama.cpp's n_ctx), else None."""
    found = _CONTEXT_NUMBER.search(str(err)) if is_context_error(err) else None
    return int(next(g for g in found.groups() if g)) if found else None


def _rejects_format(err: ProviderError) -> bool:
    """An error that NAMES the structured-output format (unknown field, unsupported schema, a crash on
    it); any other 400 (a context-length error above all) leaves the format alone."""
    said = any(w in str(err).lower() for w in _FORMAT_WORDS)
    return err.status in (400, 422, 500, 501) and said and not is_context_error(err)


class OpenAIResponsesProvider(_OpenAIBase):
    """OpenAI's Responses API with a strict JSON schema."""

    name = "openai"

    async def _request(self, messages: Sequence[Message]) -> Completion:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        user = "\n\n".join(m.content for m in messages if m.role != "system")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "instructions": system,
            "input": user,
            "store": False,
            "max_output_tokens": self.output_cap,
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": ANSWER_SCHEMA_NAME,
                    "schema": ANSWER_SCHEMA,
                    "strict": True,
                }
            },
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        try:
            resp = await self._call(lambda: self._client.responses.create(**kwargs))
        except ProviderError as err:
            if self.temperature is None or not _rejects(err, "temperature"):
                raise
            log.info("%s rejects temperature; sending none from now on", self.model)
            self.temperature = None
            kwargs.pop("temperature")
            resp = await self._call(lambda: self._client.responses.create(**kwargs))
        usage = resp.usage
        incomplete = getattr(resp, "incomplete_details", None)
        return Completion(
            text=resp.output_text or "",
            model=resp.model or self.model,
            prompt_tokens=getattr(usage, "input_tokens", None),
            completion_tokens=getattr(usage, "output_tokens", None),
            truncated=getattr(incomplete, "reason", None) == "max_output_tokens",
        )


class OpenAICompatibleProvider(_OpenAIBase):
    """Chat Completions on any OpenAI-compatible server, streamed (giving up closes the connection, which
    stops a local server's generation) and capped at ``max_tokens``; the structured-output dialect
    steps down only when the server names the format in an error."""

    name = "openai-compatible"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dialect = dialects.DIALECTS[0]
        self._chosen = False  # a dialect set from outside (tests, benchmarks): the probe leaves it
        self.server: ServerInfo | None = None  # what the probe found, once
        self._probe_lock = asyncio.Lock()

    @property
    def dialect(self) -> str:
        """The structured-output dialect the next request is sent in (see dialects.py)."""
        return self._dialect

    @dialect.setter
    def dialect(self, value: str) -> None:
        self._dialect, self._chosen = value, True

    async def _probed(self) -> ServerInfo:
        async with self._probe_lock:  # one probe, however many requests start at once
            if self.server is None and self.base_url:
                import httpx

                headers = {"authorization": f"Bearer {self._key}"} if self._key != NO_KEY else {}
                async with httpx.AsyncClient(timeout=5, headers=headers) as client:
                    server = await probe_server(self.base_url, self.model, client)
                if not self._chosen:  # what this server was found to take, else what the probe says
                    known = dialects.learned(self.base_url, self.model, server.kind)
                    self._dialect = known or server.dialect
                self.server = server
        return self.server or ServerInfo()

    async def prompt_limit(self) -> int | None:
        context = (await self._probed()).context
        return None if context is None else context - self.policy.max_tokens

    async def count_tokens(self, text: str) -> int | None:
        info = await self._probed()
        if info.tokenize_url is None:
            return None
        import httpx

        async with httpx.AsyncClient(timeout=10) as client:
            return await count_tokens(client, info, text)

    @property
    def structured(self) -> bool:
        return self.dialect != "instructions"

    async def _request(self, messages: Sequence[Message]) -> Completion:
        await self._probed()
        while True:
            sent = self.dialect
            wire = [m.as_dict() for m in messages]
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": wire,
                "max_tokens": self.policy.max_tokens,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            kind = self.server.kind if self.server is not None else "unknown"
            schema = (
                dialects.bounded_schema(self.policy.max_tokens) if kind in dialects.BOUNDED else ANSWER_SCHEMA
            )
            kwargs.update(dialects.request_fields(sent, schema))
            if dialects.needs_instructions(sent):
                wire[0] = {"role": wire[0]["role"], "content": wire[0]["content"] + "\n" + JSON_INSTRUCTIONS}
            if self.temperature is not None:
                kwargs["temperature"] = self.temperature
            try:
                return await self._call(functools.partial(self._stream, kwargs))
            except ProviderError as err:
                if self.temperature is not None and _rejects(err, "temperature"):
                    self.temperature = None
                elif sent != self.dialect and _rejects_format(err):  # a request beside it stepped down
                    continue
                elif self.structured and _rejects_format(err):
                    kind = self.server.kind if self.server is not None else "unknown"
                    following = dialects.step_down(kind, sent, str(err))
                    log.info("%s rejected %s (%s); trying %s", self.base_url, sent, err.status, following)
                    self._dialect = following
                    dialects.remember(self.base_url or "", self.model, kind, following)
                else:
                    if self.server is not None and self.server.context is None:
                        self.server.context = context_in(err)  # the next prompts are fitted to it
                    raise

    async def _stream(self, kwargs: dict[str, Any]) -> Completion:
        stream = await self._client.chat.completions.create(**kwargs)
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        model: str | None = None
        chunks = 0
        try:
            async for chunk in stream:
                chunks += 1
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices or ():
                    if choice.delta is not None and choice.delta.content:
                        parts.append(choice.delta.content)
                    finish = choice.finish_reason or finish
        finally:  # also on cancellation: closing the connection tells the server to stop generating
            await stream.close()
        if chunks == 0:  # an empty stream says nothing: llama-cpp-python 0.3 streams a refusal (context) so
            return await self._unstreamed(kwargs)
        return Completion(
            text="".join(parts),
            model=model or self.model,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None) if usage else len(parts),
            truncated=finish == "length",
        )

    async def _unstreamed(self, kwargs: dict[str, Any]) -> Completion:
        """The same request once more, not streamed, so that the server's own error (a context length
        exceeded, say) reaches the user instead of an empty, "malformed" answer."""
        plain = {k: v for k, v in kwargs.items() if k not in ("stream", "stream_options")}
        # one retry of the connection: the server may leave the stream's pooled connection half-closed
        response = await self._client.with_options(max_retries=1).chat.completions.create(**plain)
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        return Completion(
            text=(choice.message.content or "") if choice is not None else "",
            model=response.model or self.model,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            truncated=choice is not None and choice.finish_reason == "length",
        )


def _gemini_schema() -> Any:
    from google.genai import types

    def nullable(kind: types.Type) -> types.Schema:
        return types.Schema(type=kind, nullable=True)

    order = list(ANSWER_SCHEMA["properties"])
    edit = list(FIX_SCHEMA["properties"])
    kinds = {"integer": types.Type.INTEGER, "string": types.Type.STRING}
    fix = types.Schema(  # the edit (prompt.FIX_SCHEMA): Gemini says "nullable" where JSON Schema says anyOf
        type=types.Type.OBJECT,
        nullable=True,
        properties={
            name: types.Schema(type=kinds[field["type"]], description=field["description"])
            for name, field in FIX_SCHEMA["properties"].items()
        },
        required=edit,
        property_ordering=edit,
    )
    return types.Schema(
        type=types.Type.OBJECT,
        properties={
            "reasoning": types.Schema(type=types.Type.STRING),
            "crash": types.Schema(type=types.Type.BOOLEAN),
            "line": nullable(types.Type.INTEGER),
            "exception": nullable(types.Type.STRING),
            "evidence": types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING)),
            "fix": fix,
        },
        required=order,
        property_ordering=order,  # reasoning before the verdict
    )


class GeminiProvider(_Remote):
    name = "gemini"

    def _connect(self) -> Any:
        from google import genai
        from google.genai import types

        self._types = types
        self._schema = _gemini_schema()
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=int(self.policy.timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),  # our policy retries, not the SDK
        )
        return genai.Client(api_key=self._key, http_options=options)

    async def _request(self, messages: Sequence[Message]) -> Completion:
        types = self._types
        config = types.GenerateContentConfig(
            system_instruction="\n\n".join(m.content for m in messages if m.role == "system"),
            temperature=self.temperature,
            response_mime_type="application/json",
            response_schema=self._schema,
            max_output_tokens=self.output_cap,
        )
        user = "\n\n".join(m.content for m in messages if m.role != "system")
        try:
            resp = await self._client.aio.models.generate_content(
                model=self.model, contents=user, config=config
            )
        except Exception as exc:
            raise self._error(exc) from None
        usage = resp.usage_metadata
        completion = (getattr(usage, "candidates_token_count", None) or 0) + (
            getattr(usage, "thoughts_token_count", None) or 0
        )
        finish = resp.candidates[0].finish_reason if resp.candidates else None
        return Completion(
            text=resp.text or "",
            model=getattr(resp, "model_version", None) or self.model,
            prompt_tokens=getattr(usage, "prompt_token_count", None),
            completion_tokens=completion if usage is not None else None,
            truncated=finish == types.FinishReason.MAX_TOKENS,
        )

    def _error(self, exc: Exception) -> ProviderError:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            status = int(exc.code) if exc.code else None
            transient = status is not None and (status in (408, 429) or status >= 500)
            detail = _scrub(str(exc.message or exc.status or ""), self._key)
            return ProviderError(f"gemini: HTTP {status}: {detail}", status=status, transient=transient)
        if "Timeout" in type(exc).__name__:
            return ProviderError(
                f"gemini: request timed out after {self.policy.timeout_s:g} s", transient=True
            )
        if type(exc).__module__.startswith(("httpx", "httpcore")):  # connection refused / reset
            return ProviderError(f"gemini: cannot reach the server ({type(exc).__name__})", transient=True)
        return ProviderError(f"gemini: {type(exc).__name__}: {_scrub(str(exc), self._key)}")

    async def aclose(self) -> None:
        closer = getattr(self._client.aio, "aclose", None)  # older SDKs have none
        if closer is not None:
            await closer()


class ScriptedProvider(Provider):
    """Answers from a function of (messages, call number): for replaying recorded answers (the
    benchmark's ``recorded/`` folder) and for tests of the layers above. Never talks to a network."""

    name = "recorded"

    def __init__(self, answer: Callable[[Sequence[Message], int], str], model: str = "recorded") -> None:
        super().__init__(model, temperature=None, policy=RetryPolicy(retries=0))
        self._answer = answer
        self._calls = 0

    async def _request(self, messages: Sequence[Message]) -> Completion:
        n = self._calls
        self._calls += 1
        return Completion(text=self._answer(messages, n), model=self.model)


def make_provider(settings: Settings, **policy: Any) -> Provider:
    """The provider the settings name. ``policy`` overrides ``RetryPolicy`` fields (tests: ``backoff_s``).

    Raises ``MissingKeyError`` (no key in the environment) or ``ConfigError``.
    """
    retry = RetryPolicy.from_settings(settings, **policy)
    if settings.provider == "none":
        raise ConfigError(
            "crane-lsp: no LLM provider configured (set provider to openai, openai-compatible or gemini)"
        )
    model = settings.model or DEFAULT_MODELS.get(settings.provider)
    if not model:
        raise ConfigError(
            f"crane-lsp: the {settings.provider} provider needs a model name (the model setting)"
        )
    if settings.provider == "openai-compatible" and not settings.base_url:
        raise ConfigError(
            "crane-lsp: the openai-compatible provider needs baseUrl (e.g. http://localhost:11434/v1)"
        )
    key = resolve_key(settings)
    common: dict[str, Any] = {
        "key": key,
        "base_url": settings.base_url,
        "temperature": settings.temperature,
        "policy": retry,
    }
    if settings.provider == "openai":
        return OpenAIResponsesProvider(model, **common)
    if settings.provider == "openai-compatible":
        return OpenAICompatibleProvider(model, **common)
    return GeminiProvider(model, **common)
