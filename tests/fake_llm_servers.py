"""Small HTTP servers on 127.0.0.1 that speak the OpenAI (Responses, Chat Completions) and Gemini wire
formats, so the REAL SDKs can be tested offline. Reusable by any test:

    from fake_llm_servers import FakeLLMServer, Answer, Error, Slow, Raw, crash_answer

    @pytest.fixture
    def fake_llm() -> Iterator[FakeLLMServer]:
        with FakeLLMServer() as server:
            yield server

    async def test_x(fake_llm):
        fake_llm.push(Error(429), Answer(crash_answer(line=2, exception="KeyError")), Slow(5))
        settings = Settings(provider="openai", base_url=fake_llm.openai_url)   # gemini: gemini_url
        ...
        fake_llm.requests[-1].json["text"]["format"]    # what the SDK really sent

``Answer(text)`` takes a dict (sent as JSON) or any string (to test garbled answers); ``Error(status,
message, retry_after_s)``; ``Slow(seconds, then)`` for timeouts; ``Raw(status, body)`` for anything else;
``Trickle(text, every_s)`` for a slow streamed answer (``hangups`` counts clients that left mid-stream).
A chat request with ``"stream": true`` gets its ``Answer`` as server-sent events, as real servers do.

One server answers every format; the path decides the envelope: ``/v1/responses`` (Responses API),
``/v1/chat/completions`` (Chat Completions), ``.../models/<model>:generateContent`` (Gemini).
Replies come from a queue (``push``) or, when it is empty, from ``server.handler`` (a callable
``RecordedRequest -> Reply``), else a 500 saying the script ran out.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")

    @property
    def wire(self) -> str:
        return _wire(self.path)


@dataclass
class Answer:
    """A 200 whose model text is ``text`` (a dict is sent as its JSON), in the path's envelope."""

    text: str | dict[str, Any]
    prompt_tokens: int = 120
    completion_tokens: int = 30
    finish_reason: str = "stop"  # "length": stopped at the cap (Responses: incomplete, Gemini: MAX_TOKENS)


@dataclass
class Error:
    status: int
    message: str = "simulated failure"
    retry_after_s: float | None = None


@dataclass
class Slow:
    """Wait ``seconds`` (cut short when the server stops), then send ``then``."""

    seconds: float
    then: Reply = field(default_factory=lambda: Answer(crash_answer(crash=False)))


@dataclass
class Raw:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class Trickle:
    """A streamed answer (``"stream": true`` requests) sent one piece every ``every_s`` seconds, like a
    slow local model; a client that hangs up is counted in ``server.hangups`` (generation stopped)."""

    text: str
    every_s: float = 0.2
    pieces: int = 50


Reply = Answer | Error | Slow | Raw | Trickle


def crash_answer(
    *,
    crash: bool = True,
    line: int | None = 1,
    exception: str | None = "KeyError",
    reasoning: str = "The column does not exist.",
    evidence: list[str] | None = None,
    fix: dict[str, Any] | str | None = None,
) -> dict[str, Any]:
    """A schema-valid answer object; ``crash=False`` nulls the crash fields. ``fix`` is the edit
    (``{"line", "code", "why"}``); a string plays an answer in the old schema, whose fix was prose."""
    if not crash:
        return {
            "reasoning": reasoning,
            "crash": False,
            "line": None,
            "exception": None,
            "evidence": [],
            "fix": None,
        }
    return {
        "reasoning": reasoning,
        "crash": True,
        "line": line,
        "exception": exception,
        "evidence": evidence if evidence is not None else ["df.columns = ['a', 'b']"],
        "fix": fix,
    }


def _version(text: str | None) -> tuple[int, ...]:
    """``0.10.1rc1`` -> (0, 10, 1); unknown -> the newest."""
    if not text:
        return (999,)
    return tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in text.split(".")[:3])


def _wire(path: str) -> str:
    if path.rstrip("/").endswith("/responses"):
        return "responses"
    if path.rstrip("/").endswith("/chat/completions"):
        return "chat"
    if ":generateContent" in path:
        return "gemini"
    return "unknown"


def _model_of(req: RecordedRequest) -> str:
    if req.wire == "gemini":
        return req.path.split("/models/")[-1].split(":")[0]
    try:
        return str(req.json.get("model", "fake-model"))
    except (ValueError, AttributeError):
        return "fake-model"


def _envelope(req: RecordedRequest, answer: Answer) -> dict[str, Any]:
    text = answer.text if isinstance(answer.text, str) else json.dumps(answer.text)
    model = _model_of(req)
    if req.wire == "responses":
        return {
            "id": "resp_fake",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if answer.finish_reason == "length" else "completed",
            "incomplete_details": {"reason": "max_output_tokens"}
            if answer.finish_reason == "length"
            else None,
            "model": model,
            "output": [
                {
                    "type": "message",
                    "id": "msg_fake",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": answer.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": answer.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": answer.prompt_tokens + answer.completion_tokens,
            },
        }
    if req.wire == "chat":
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": answer.finish_reason,
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
                "total_tokens": answer.prompt_tokens + answer.completion_tokens,
            },
        }
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "MAX_TOKENS" if answer.finish_reason == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": answer.prompt_tokens,
            "candidatesTokenCount": answer.completion_tokens,
            "totalTokenCount": answer.prompt_tokens + answer.completion_tokens,
        },
        "modelVersion": model,
    }


def _error_body(req: RecordedRequest, err: Error) -> dict[str, Any]:
    if req.wire == "gemini":
        status = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED"}.get(
            err.status, "INTERNAL"
        )
        return {"error": {"code": err.status, "message": err.message, "status": status}}
    kind = {429: "rate_limit_exceeded", 400: "invalid_request_error", 401: "invalid_api_key"}.get(
        err.status, "server_error"
    )
    return {"error": {"message": err.message, "type": kind, "param": None, "code": kind}}


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 with a scripted queue of replies and a log of requests."""

    def __init__(
        self,
        handler: Callable[[RecordedRequest], Reply] | None = None,
        *,
        kind: str = "plain",
        context: int | None = None,
        version: str | None = None,
    ) -> None:
        """``kind`` plays a real server's metadata and quirks: ``plain`` (no model list), ``llama.cpp``
        (``/props`` with ``n_ctx`` = ``context``, ``/tokenize``: one token per word),
        ``llama-cpp-python`` (``owned_by: me``, ``/extras/tokenize``; OpenAI's json_schema is a 500
        there), ``ollama`` (``/api/show``, ``/api/version``), ``vllm`` (``max_model_len``, ``/version``).
        ``version`` is what Ollama or vLLM say they are (None: no version endpoint). A prompt over
        ``context`` (words) is a 400 naming the context. ``enforced(request)`` is the schema the real
        server would constrain the answer to."""
        self.handler = handler
        self.kind = kind
        self.context = context
        self.version = version
        self.probes: list[RecordedRequest] = []  # metadata requests, kept out of ``requests``
        self.requests: list[RecordedRequest] = []
        self.hangups = 0  # streamed answers the client stopped reading before the end
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------
    def push(self, *replies: Reply) -> FakeLLMServer:
        with self._lock:
            self._queue.extend(replies)
        return self

    def _metadata(self, req: RecordedRequest) -> Reply | None:
        """The answer to a probe of the server's metadata (None: not a metadata path)."""
        path = req.path.rstrip("/")
        if not path.endswith(("/models", "/props", "/tokenize", "/api/show", "/version")):
            return None
        self.probes.append(req)
        owner = {"llama.cpp": "llamacpp", "llama-cpp-python": "me", "ollama": "library", "vllm": "vllm"}
        if path.endswith("/v1/models") and self.kind in owner:
            entry: dict[str, Any] = {"id": "smollm2", "object": "model", "owned_by": owner[self.kind]}
            if self.kind == "vllm":
                entry["max_model_len"] = self.context
            return Raw(200, json.dumps({"object": "list", "data": [entry]}).encode())
        if path.endswith("/props") and self.kind == "llama.cpp":
            props = {"default_generation_settings": {"n_ctx": self.context}}
            return Raw(200, json.dumps(props).encode())
        if path.endswith("/tokenize") and self.kind == "llama.cpp":
            return Raw(200, json.dumps({"tokens": list(range(len(req.json["content"].split())))}).encode())
        if path.endswith("/extras/tokenize") and self.kind == "llama-cpp-python":
            return Raw(200, json.dumps({"tokens": list(range(len(req.json["input"].split())))}).encode())
        if self.version is not None and (
            (path == "/api/version" and self.kind == "ollama") or (path == "/version" and self.kind == "vllm")
        ):
            return Raw(200, json.dumps({"version": self.version}).encode())
        if path.endswith("/api/show") and self.kind == "ollama":
            return Raw(200, json.dumps({"model_info": {"llama.context_length": self.context}}).encode())
        return Raw(404, b'{"error": "Not Found"}')

    def enforced(self, req: RecordedRequest) -> Any:
        """What the real server of this kind and version would constrain the answer to, read from the
        request body as that server reads it: a JSON schema, ``"json"`` (any JSON object) or None."""
        body = req.json
        fmt = body.get("response_format") or {}
        kind, version = fmt.get("type"), _version(self.version)
        if self.kind == "ollama":  # openai/openai.go: json_schema -> format: schema, json_object -> "json"
            if kind == "json_schema" and version >= (0, 5):
                return (fmt.get("json_schema") or {}).get("schema")
            return "json" if kind == "json_object" else None
        if self.kind == "vllm":  # guided_json until 0.12; response_format json_schema
            if "guided_json" in body and version < (0, 12):
                return body["guided_json"]
            if kind == "json_schema":
                return fmt["json_schema"]["schema"]
            return "json" if kind == "json_object" else None
        if self.kind in ("llama.cpp", "llama-cpp-python"):
            if kind == "json_schema" and self.kind == "llama.cpp":
                return fmt["json_schema"]["schema"]
            if kind == "json_object":
                return fmt.get("schema") or "json"
            return None
        if kind == "json_schema":  # OpenAI itself
            return fmt["json_schema"]["schema"]
        return "json" if kind == "json_object" else None

    def _quirk(self, req: RecordedRequest) -> Reply | None:
        """What the real server says before it would answer (its dialect, its context)."""
        if req.wire != "chat":
            return None
        body = req.json
        fmt = (body.get("response_format") or {}).get("type")
        if self.kind == "llama-cpp-python" and fmt == "json_schema":
            return Error(500, "'json_schema' is not a valid response_format type: use json_object")
        if self.kind == "vllm" and fmt == "json_schema" and _version(self.version) < (0, 6):
            return Error(
                400, "response_format.type: Input should be 'text' or 'json_object' (got 'json_schema')"
            )
        words = sum(len(m["content"].split()) for m in body.get("messages", []))
        if self.context is not None and words + int(body.get("max_tokens") or 0) > self.context:
            if self.kind == "llama-cpp-python" and body.get("stream"):  # 0.3.36: an empty event stream
                return Raw(200, b"", "text/event-stream")
            return Error(400, f"Requested tokens ({words}) exceed context window of {self.context}")
        return None

    def _next(self, req: RecordedRequest) -> Reply:
        meta = self._metadata(req)
        if meta is not None:
            return meta
        quirk = self._quirk(req)
        if quirk is not None:
            with self._lock:
                self.requests.append(req)
            return quirk
        with self._lock:
            self.requests.append(req)
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler(req)
        return Error(500, "fake server: no scripted reply left")

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """``base_url`` for the openai SDK (and any OpenAI-compatible client)."""
        return self.url + "/v1"

    @property
    def gemini_url(self) -> str:
        """``HttpOptions(base_url=...)`` for google-genai."""
        return self.url + "/"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                req = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                reply = server._next(req)
                while isinstance(reply, Slow):
                    if server._stopping.wait(reply.seconds):
                        return
                    reply = reply.then
                streamed = req.wire == "chat" and isinstance(req.json, dict) and req.json.get("stream")
                if isinstance(reply, Trickle) or (streamed and isinstance(reply, Answer)):
                    try:
                        self._stream(req, reply)
                    except (BrokenPipeError, ConnectionResetError):
                        server.hangups += 1
                    self.close_connection = True
                    return
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    self._send(req, reply)

            def _stream(self, req: RecordedRequest, reply: Answer | Trickle) -> None:
                """Server-sent events as Chat Completions streams them, ending in ``[DONE]``."""
                if isinstance(reply, Trickle):
                    step = max(1, len(reply.text) // reply.pieces)
                    pieces = [reply.text[i : i + step] for i in range(0, len(reply.text), step)]
                    every, finish, usage = reply.every_s, "stop", (120, len(pieces))
                else:
                    text = reply.text if isinstance(reply.text, str) else json.dumps(reply.text)
                    pieces = [text[i : i + 16] for i in range(0, len(text), 16)] or [""]
                    every, finish = 0.0, reply.finish_reason
                    usage = (reply.prompt_tokens, reply.completion_tokens)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0}
                base["model"] = _model_of(req)

                def event(data: Any) -> None:
                    self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

                for piece in pieces:
                    delta = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                    event({**base, "choices": [delta]})
                    if every and server._stopping.wait(every):
                        return
                event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                if (req.json.get("stream_options") or {}).get("include_usage"):
                    counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
                    event({**base, "choices": [], "usage": {**counts, "total_tokens": sum(usage)}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _send(self, req: RecordedRequest, reply: Reply) -> None:
                headers: dict[str, str] = {}
                if isinstance(reply, Answer):
                    status, payload, ctype = (
                        200,
                        json.dumps(_envelope(req, reply)).encode(),
                        "application/json",
                    )
                elif isinstance(reply, Error):
                    status, ctype = reply.status, "application/json"
                    payload = json.dumps(_error_body(req, reply)).encode()
                    if reply.retry_after_s is not None:
                        headers["retry-after"] = str(reply.retry_after_s)
                elif isinstance(reply, Raw):
                    status, payload, ctype = reply.status, reply.body, reply.content_type
                else:  # pragma: no cover - Slow is unwrapped above
                    raise TypeError(reply)
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # a short poll: stop() waits for the loop to notice, and the unit subset stops hundreds of these
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
