"""The wire: a framing reader that survives bad frames, and JSON-RPC errors for bad messages.

pygls reads ``Content-Length`` frames trustingly: one frame whose length was counted in characters
(a cell with "é") leaves it reading the middle of the next message for good, and a request whose
params do not deserialise gets no answer at all. Here:

- ``FrameReader`` keeps the bytes it has read; when a frame's body is not JSON it looks for the
  message's real end (the next ``Content-Length:`` header, or the end of what arrived) and goes on
  from the next header, so a mis-sized frame costs at most that one message, never the session;
- ``CraneProtocol`` answers -32700 (parse error) for a body that is not JSON, -32600 (invalid
  request) for JSON that is no JSON-RPC message, -32602 (invalid params) for a request whose params
  do not deserialise (a position line of 2**40, ``uri: 7``), and -32002 (server not initialized) for
  requests before ``initialize``, as JSON-RPC and LSP say.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from crane_lsp.server.framing import SETTLE_S, FrameReader
from crane_lsp.server.textdoc import adopt

__all__ = ["CraneProtocol", "FrameReader", "read_loop", "serve_stdio", "serve_tcp", "strict_converter"]

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002


def _forget(futures: dict[Any, Any], key: Any, _future: Any) -> None:
    futures.pop(key, None)


class CraneProtocol(LanguageServerProtocol):
    """pygls's protocol, answering what it leaves unanswered (see the module docstring)."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.initialize_seen = False
        #: (id, result) of an ``initialize`` that ``fastinit`` answered before this server existed
        self.answered_early: tuple[Any, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ errors

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def _send_data(self, data: Any) -> None:
        """As pygls, but the answer to an ``initialize`` answered early is not sent twice."""
        early = self.answered_early
        plain = data if isinstance(data, dict) else None  # ``send_error`` sends dicts
        msg_id = plain.get("id") if plain is not None else getattr(data, "id", None)
        is_answer = "method" not in plain if plain is not None else not hasattr(data, "method")
        if early is not None and msg_id == early[0] and is_answer:
            self.answered_early = None
            result = plain.get("result") if plain is not None else getattr(data, "result", None)
            mine = json.loads(json.dumps(result, default=self._serialize_message))
            if mine != early[1]:
                log.warning("the early initialize answer differs from the server's: %s vs %s", early[1], mine)
            return
        super()._send_data(data)

    def receive(self, ok: bool, data: Any) -> None:
        """One body from the reader: answer its faults, or hand the message to pygls."""
        if not ok:
            log.warning("ignored a body that is not JSON (%d bytes)", len(data))
            self.send_error(None, PARSE_ERROR, "Parse error: the message body is not JSON")
            return
        if (
            not isinstance(data, dict)
            or data.get("jsonrpc") != "2.0"
            or not (
                isinstance(data.get("method"), str)
                or ("id" in data and ("result" in data or "error" in data))
            )
        ):
            msg_id = data.get("id") if isinstance(data, dict) else None
            if not isinstance(msg_id, (int, str)):
                msg_id = None
            self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        method = data.get("method")
        is_request = isinstance(method, str) and isinstance(data.get("id"), (int, str))
        if is_request and not self.initialize_seen and method != types.INITIALIZE:
            self.send_error(
                data["id"], SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet"
            )
            return
        if not self.initialize_seen and isinstance(method, str) and not is_request and method != types.EXIT:
            log.info("dropped notification %s before initialize", method)
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            if is_request:
                self.send_error(data["id"], INVALID_PARAMS, f"Invalid params for {method}: {exc}")
            else:
                log.warning("dropped %s: its params do not deserialise (%s)", method, exc)
            return
        if is_request and method == types.INITIALIZE:
            self.initialize_seen = True
        self.handle_message(message)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """As pygls, but any failure to build the typed params is an invalid-params fault."""
        try:
            return super().structure_message(data)
        except JsonRpcException:
            raise
        except Exception as exc:  # e.g. an OverflowError from a 2**40 position
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams(str(exc)) from exc

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: Any = None,
        kwargs: Any = None,
    ) -> None:
        """pygls keeps the future of every handler it runs by a fresh id, and forgets it only when it
        answers a request: each notification (every keystroke's didChange) would stay forever."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if getattr(callback, "func", None) == self._send_handler_result:
            return  # a request: forgotten once answered (and cancellable until then)
        future = self._request_futures.get(msg_id)
        if future is None:
            return
        if future.done():
            self._request_futures.pop(msg_id, None)
        else:
            futures = self._request_futures
            future.add_done_callback(functools.partial(_forget, futures, msg_id))

    # ------------------------------------------------------------------ documents

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls's initialize, with documents whose lines are counted as LSP counts them."""
        result = yield from super().lsp_initialize(params)
        adopt(self._workspace)
        return result

    # ------------------------------------------------------------------ exit

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        """Exit at once: 0 after ``shutdown``, 1 otherwise (LSP), not waiting for the thread that
        reads stdin (pygls joins it, so an editor saw the server linger and killed it)."""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        code = 0 if self._shutdown else 1
        log.info("exit (status %d)", code)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        os._exit(code)


async def read_loop(
    stop: threading.Event,
    read: Callable[[], Any],
    protocol: CraneProtocol,
) -> None:
    """Feed ``read()`` chunks (awaitables of bytes; b"" at the end) through a ``FrameReader``."""
    reader = FrameReader()
    chunk_task: asyncio.Future[bytes] | None = None
    while not stop.is_set():
        if chunk_task is None:
            chunk_task = asyncio.ensure_future(read())
        settled = False
        if reader.pending:
            done, _ = await asyncio.wait({chunk_task}, timeout=SETTLE_S)
            settled = not done
        else:
            await asyncio.wait({chunk_task})
        if chunk_task.done():
            data = chunk_task.result()
            chunk_task = None
            if not data:
                while (item := reader.next_message(settled=True)) is not None:
                    protocol.receive(*item)
                return
            reader.feed(data)
        while (item := reader.next_message(settled=settled)) is not None:
            try:
                protocol.receive(*item)
            except Exception:  # a message must never stop the reader
                log.exception("handling a message failed")


def serve_stdio(server: Any, prefix: bytes = b"") -> None:
    """Serve LSP on stdin/stdout until the editor sends ``exit`` or closes stdin; ``prefix``: bytes
    already read from stdin (``fastinit``)."""
    from concurrent.futures import ThreadPoolExecutor

    from pygls.io_ import StdoutWriter

    stdin: Any = sys.stdin.buffer
    stdout = sys.stdout.buffer
    server.protocol.set_writer(StdoutWriter(stdout))
    pool = ThreadPoolExecutor(1, thread_name_prefix="crane-stdin")  # the one thread that may block

    async def main() -> None:
        loop = asyncio.get_running_loop()
        first = [prefix] if prefix else []

        def read() -> Any:
            if first:
                done: asyncio.Future[bytes] = loop.create_future()
                done.set_result(first.pop())
                return done
            return loop.run_in_executor(pool, stdin.read1, 1 << 16)

        await read_loop(threading.Event(), read, server.protocol)

    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(main())
    _exit_now(server.protocol)


def serve_tcp(server: Any, host: str, port: int) -> None:
    """Serve one editor connection on ``host:port`` (as pygls does), then exit."""

    async def main() -> None:
        done = asyncio.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            server.protocol.set_writer(writer)
            try:
                await read_loop(threading.Event(), lambda: reader.read(1 << 16), server.protocol)
            finally:
                done.set()

        listener = await asyncio.start_server(connection, host, port)
        async with listener:
            await done.wait()

    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(main())
    _exit_now(server.protocol)


def _exit_now(protocol: Any) -> None:
    """The editor is gone: leave without joining threads that may be blocked in a read."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(0 if getattr(protocol, "_shutdown", False) else 1)


def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def strict_converter() -> Any:
    """lsprotocol's converter, but a string field only takes a string (``uri: 7`` is no URI)."""
    from pygls.protocol import default_converter

    converter = default_converter()
    converter.register_structure_hook(str, _strict_str)
    return converter
