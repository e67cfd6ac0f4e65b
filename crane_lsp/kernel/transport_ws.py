"""The websocket transport: a kernel behind a Jupyter Server, reached by its URL and the server's token.

The wire is Jupyter Server's ``/api/kernels/<id>/channels`` websocket in either framing:
- ``v1.kernel.websocket.jupyter.org`` (binary: 8-byte little-endian offsets, channel name, then the
  header, parent header, metadata, content and buffers as separate JSON/bytes parts);
- the legacy one (one JSON text frame with a ``channel`` key; binary frames only for messages with
  buffers: 4-byte big-endian count and offsets, the JSON, the buffers). A server in gateway mode forces
  it, so the framing follows the subprotocol the server chose, never an assumption.
REST (``GET /api/kernels/<id>``, ``POST .../interrupt|restart``, ``DELETE``) answers for the kernel's
existence, interrupts and restarts. The server signs messages towards the kernel with its own session
key: a client never needs the kernel's key, only the server's token (sent as an ``Authorization``
header, never in a URL, a message or a log).

Why tornado (``tornado.websocket.websocket_connect`` and ``AsyncHTTPClient``): it is already installed
wherever crane runs (jupyter_client and ipykernel depend on it), it is Jupyter Server's own websocket
stack (the subprotocol negotiation, ping and message-size limits behave as the server expects) and it
runs on asyncio. The alternatives: ``jupyter-kernel-client`` wraps a blocking client in threads and
brings its own dependencies; jupyter_server's gateway client is server-side machinery (traitlets
configuration, a whole ``jupyter_server`` import); ``websockets`` or ``websocket-client`` would be a
new dependency for what tornado already does.

Reconnection: when the socket drops (the server restarts, a proxy in between restarts) the transport
reconnects with the same ``session_id``, so the server replays what it buffered meanwhile; messages
sent while reconnecting wait (up to ``unreachable_after_s``). After that long without the server, or
on a 404 for the kernel, ``is_alive`` says False with a one-line ``gone_reason``, like a heartbeat.

A caveat no client avoids: Jupyter Server "nudges" every new kernel websocket with ``kernel_info``
requests, and IPython 9 picks a random banner tip for each, which moves the global ``random`` state.
Crane opens one websocket per link and reconnects only when it dropped; its own requests never move it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import time
import uuid
from pathlib import Path
from typing import Any

from crane_lsp.kernel import remote
from crane_lsp.kernel.remote import KernelUrl, RemoteError, RemoteRefused
from crane_lsp.kernel.transport import (
    Channel,
    MessageHandler,
    TransportClosed,
    TransportError,
    TransportRefused,
)

log = logging.getLogger(__name__)

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
#: a kernel's answer (a snapshot, a displayed frame) may be large; the server allows what the kernel sends
MAX_MESSAGE_BYTES = 256 << 20


# ---------------------------------------------------------------------- framing (pure functions)


def _pack(obj: Any) -> bytes:
    from jupyter_client.jsonutil import json_default

    return json.dumps(obj, default=json_default, ensure_ascii=False, allow_nan=False).encode("utf-8")


def _message(
    header: dict[str, Any], parent: Any, metadata: Any, content: Any, buffers: list[bytes]
) -> dict[str, Any]:
    header = header or {}
    return {
        "header": header,
        "parent_header": parent or {},
        "metadata": metadata or {},
        "content": content if content is not None else {},
        "buffers": buffers,
        "msg_id": header.get("msg_id"),
        "msg_type": header.get("msg_type"),
    }


def encode_v1(channel: str, msg: dict[str, Any]) -> bytes:
    """``msg`` as one binary frame of the v1 protocol (jupyter_server's ``deserialize_msg_from_ws_v1``)."""
    parts = [
        _pack(msg["header"]),
        _pack(msg.get("parent_header") or {}),
        _pack(msg.get("metadata") or {}),
        _pack(msg.get("content") or {}),
        *(bytes(b) for b in msg.get("buffers") or []),
    ]
    name = channel.encode("utf-8")
    offsets = [8 * (1 + 1 + len(parts) + 1)]
    offsets.append(offsets[-1] + len(name))
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = len(offsets).to_bytes(8, "little") + b"".join(o.to_bytes(8, "little") for o in offsets)
    return b"".join([head, name, *parts])


def decode_v1(frame: bytes) -> tuple[str, dict[str, Any]]:
    """The channel and message of a v1 binary frame (jupyter_server's ``serialize_msg_to_ws_v1``)."""
    count = int.from_bytes(frame[:8], "little")
    if count < 2 or len(frame) < 8 * (count + 1):
        raise ValueError("a v1 kernel frame too short for its offsets")
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    channel = frame[offsets[0] : offsets[1]].decode("utf-8")
    parts = [frame[offsets[i] : offsets[i + 1]] for i in range(1, count - 1)]
    if len(parts) < 4:
        raise ValueError(f"a v1 kernel frame with {len(parts)} parts (4 at least)")
    header, parent, metadata, content = (json.loads(p) if p else {} for p in parts[:4])
    return channel, _message(header, parent, metadata, content, [bytes(b) for b in parts[4:]])


def encode_legacy(channel: str, msg: dict[str, Any]) -> str | bytes:
    """``msg`` in the legacy framing: JSON text, or the binary envelope when it carries buffers."""
    body = {
        "header": msg["header"],
        "parent_header": msg.get("parent_header") or {},
        "metadata": msg.get("metadata") or {},
        "content": msg.get("content") or {},
        "channel": channel,
    }
    buffers = [bytes(b) for b in msg.get("buffers") or []]
    if not buffers:
        return _pack(body).decode("utf-8")
    parts = [_pack({**body, "buffers": []}), *buffers]
    offsets = [4 * (len(parts) + 1)]
    for part in parts[:-1]:
        offsets.append(offsets[-1] + len(part))
    return struct.pack("!" + "I" * (len(parts) + 1), len(parts), *offsets) + b"".join(parts)


def decode_legacy(frame: str | bytes) -> tuple[str, dict[str, Any]]:
    """The channel and message of a legacy frame (JSON text, or the binary envelope with buffers)."""
    buffers: list[bytes] = []
    if isinstance(frame, bytes):
        (count,) = struct.unpack("!I", frame[:4])
        offsets = list(struct.unpack("!" + "I" * count, frame[4 : 4 * (count + 1)]))
        offsets.append(len(frame))
        chunks = [frame[offsets[i] : offsets[i + 1]] for i in range(count)]
        body = json.loads(chunks[0])
        buffers = chunks[1:]
    else:
        body = json.loads(frame)
    channel = str(body.pop("channel", None) or "shell")
    return channel, _message(
        body.get("header"), body.get("parent_header"), body.get("metadata"), body.get("content"), buffers
    )


# ---------------------------------------------------------------------- the transport


class WebSocketTransport:
    """One kernel of a Jupyter Server behind the ``KernelTransport`` seam (create with ``open``)."""

    kind = "websocket"
    connection_file: Path | None = None
    #: after this long without the server, the kernel counts as unreachable (``is_alive`` False)
    unreachable_after_s = 10.0
    #: how often ``is_alive`` may ask the server for the kernel's record (it is called every half second)
    status_every_s = 2.0

    def __init__(self, url: KernelUrl, token: str | None, *, owns_kernel: bool = False) -> None:
        from jupyter_client.session import Session

        self.kernel_url: KernelUrl | None = url
        self._url = url
        self._token = token
        self._owns = owns_kernel
        # the server signs towards the kernel with its own key; ours only keeps Session from warning
        self._session = Session(key=uuid.uuid4().hex.encode(), username="crane", session=uuid.uuid4().hex)
        self._conn: Any = None
        self.subprotocol: str | None = None
        self.gone_reason: str | None = None
        self._refused = False
        self._down_since: float | None = None  # the websocket dropped and is not back yet
        self._silent_since: float | None = None  # the websocket is open but REST has not answered
        self._outbox: list[tuple[Channel, dict[str, Any]]] = []
        self._on_message: MessageHandler | None = None
        self._reader: asyncio.Task[None] | None = None
        self._status_at = 0.0
        self._status_alive = True
        self._closed = False
        self.reconnects = 0
        self.execution_state: str | None = None
        self._restart_seen = False  # a "starting"/"restarting" status came since restart() began

    @property
    def owns_kernel(self) -> bool:
        return self._owns

    # ------------------------------------------------------------------ opening

    @classmethod
    async def open(cls, url: KernelUrl, token: str | None, *, timeout: float = 5.0) -> WebSocketTransport:
        """The kernel's record first (one clear message for a wrong token or a missing kernel), then the
        websocket; ``TransportRefused`` / ``TransportError`` otherwise."""
        transport = cls(url, token)
        await transport._open(timeout)
        return transport

    @classmethod
    async def start_kernel(
        cls, server_url: str, token: str | None, kernel_name: str = "python3", *, timeout: float = 60.0
    ) -> WebSocketTransport:
        """A new kernel on the server, owned by the transport (``close`` deletes it)."""
        try:
            url = await remote.start_kernel(server_url, token, kernel_name)
        except RemoteRefused as exc:
            raise TransportRefused(str(exc)) from None
        except RemoteError as exc:
            raise TransportError(str(exc)) from None
        transport = cls(url, token, owns_kernel=True)
        try:
            await transport._open(timeout)
        except BaseException:
            await transport.close()
            raise
        return transport

    async def _open(self, timeout: float) -> None:
        await self._check_record(timeout)
        if not self._status_alive:
            raise TransportError(self.gone_reason or f"{self.describe()} is gone")
        await self._connect(timeout)

    async def _check_record(self, timeout: float) -> None:
        """``GET /api/kernels/<id>``: sets ``execution_state``, or ``gone_reason`` for a 404 / dead kernel."""
        try:
            record = await self._rest("GET", "", timeout)
        except RemoteRefused as exc:
            self._refused = True
            self.gone_reason = str(exc)
            raise TransportRefused(str(exc)) from None
        except RemoteError as exc:
            if getattr(exc, "code", None) == 404:
                self._status_alive = False
                self.gone_reason = f"{self.describe()} is gone (the server has no such kernel: 404)"
                raise TransportError(self.gone_reason) from None
            raise TransportError(str(exc)) from None
        state = (record or {}).get("execution_state") if isinstance(record, dict) else None
        self.execution_state = state
        if state == "dead":
            self._status_alive = False
            self.gone_reason = f"{self.describe()} is dead (its server says so)"

    async def _rest(self, method: str, tail: str, timeout: float) -> Any:
        from urllib.parse import quote

        path = f"/api/kernels/{quote(self._url.kernel_id)}{tail}"
        return await remote.rest(self._url.base_url, self._token, method, path, timeout=timeout)

    async def _connect(self, timeout: float) -> None:
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(
            f"{self._url.channels_url}?session_id={self._session.session}",
            headers=remote.headers(self._token),
            connect_timeout=timeout,
            request_timeout=timeout,
        )
        opening = websocket_connect(
            request, subprotocols=[V1_PROTOCOL], max_message_size=MAX_MESSAGE_BYTES,
            ping_interval=30.0, ping_timeout=30.0,
        )  # fmt: skip
        server = self._url.base_url
        try:
            conn = await asyncio.wait_for(opening, timeout)
        except HTTPClientError as exc:
            if exc.code in (401, 403):
                self._refused = True
                self.gone_reason = remote.refusal(server, self._token, exc.code)
                raise TransportRefused(self.gone_reason) from None
            if exc.code == 404:
                self._status_alive = False
                self.gone_reason = f"{self.describe()} is gone (the server has no such kernel: 404)"
            raise TransportError(f"{self.describe()}: the websocket was refused ({exc.code})") from None
        except (OSError, asyncio.TimeoutError) as exc:
            timed_out = isinstance(exc, asyncio.TimeoutError)
            why = "timed out" if timed_out else (getattr(exc, "strerror", None) or type(exc).__name__)
            raise TransportError(f"the Jupyter server at {server} is not reachable ({why})") from None
        if conn.protocol is not None:  # our small requests leave at once
            conn.protocol.set_nodelay(True)
        self._conn = conn
        self.subprotocol = conn.selected_subprotocol
        self._down_since = None
        self.gone_reason = None

    # ------------------------------------------------------------------ the seam

    async def start(self, on_message: MessageHandler) -> None:
        self._on_message = on_message
        self._reader = asyncio.create_task(self._read(), name="kernel-ws-reader")

    def new_message(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = self._session.msg(msg_type, content)
        return msg

    def send(self, channel: Channel, msg: dict[str, Any]) -> None:
        if self._closed:
            raise TransportClosed("the kernel link was closed")
        if self._refused or not self._status_alive:
            raise TransportClosed(self.gone_reason or f"{self.describe()} is gone")
        if self._conn is None:  # reconnecting: wait for the socket, within the grace
            if self._unreachable():
                raise TransportError(self.gone_reason or f"{self.describe()} is not reachable")
            self._outbox.append((channel, msg))
            return
        self._write(channel, msg)

    def _write(self, channel: Channel, msg: dict[str, Any]) -> None:
        from tornado.websocket import WebSocketClosedError

        frame = encode_v1(channel, msg) if self.subprotocol == V1_PROTOCOL else encode_legacy(channel, msg)
        try:
            future = self._conn.write_message(frame, binary=isinstance(frame, bytes))
        except WebSocketClosedError:  # dropped, and the reader has not noticed yet: send after reconnecting
            self._outbox.append((channel, msg))
            return
        future.add_done_callback(_ignore_closed)

    async def _read(self) -> None:
        while not self._closed:
            conn = self._conn
            frame = await conn.read_message() if conn is not None else None
            _quick_ack(conn)
            if frame is None:
                if self._closed:
                    return
                if not await self._reconnect():
                    return
                continue
            try:
                channel, msg = decode_v1(frame) if self.subprotocol == V1_PROTOCOL else decode_legacy(frame)
            except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
                log.debug("kernel websocket: an unreadable frame (%s)", exc)
                continue
            if channel == "iopub" and msg["msg_type"] == "status":
                self.execution_state = msg["content"].get("execution_state")
                self._restart_seen |= self.execution_state in ("starting", "restarting")
            if self._on_message is not None and channel in ("shell", "control", "iopub"):
                try:
                    self._on_message(channel, msg)  # type: ignore[arg-type]
                except Exception:  # a listener or a surprise message must not kill the reader
                    log.exception("kernel link: handling a %s message failed", channel)

    async def _reconnect(self) -> bool:
        """Open the websocket again (same session: the server replays what it buffered) until it works,
        the kernel is proven gone, or the link closes. Sends meanwhile wait in the outbox."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None
        self._down_since = self._down_since or time.monotonic()
        log.info("kernel websocket to %s dropped; reconnecting", self.describe())
        delay = 0.2
        while not self._closed:
            try:
                await self._check_record(5.0)
                await self._connect(5.0)
            except TransportRefused:
                return self._give_up()
            except TransportError as exc:
                if not self._status_alive:  # the kernel is gone from the server: nothing to come back to
                    return self._give_up()
                if self._unreachable():
                    self._outbox.clear()  # nobody waits for these any more
                log.debug("kernel websocket reconnect: %s", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            self.reconnects += 1
            outbox, self._outbox = self._outbox, []
            for channel, msg in outbox:
                self._write(channel, msg)
            return True
        return False

    def _give_up(self) -> bool:
        self._outbox.clear()
        log.info("kernel websocket: %s", self.gone_reason)
        return False

    def _unreachable(self) -> bool:
        if self._down_since is None:
            return False
        down = time.monotonic() - self._down_since
        if down < self.unreachable_after_s:
            return False
        self.gone_reason = self._silence(down)
        return True

    def _silence(self, seconds: float) -> str:
        return f"the Jupyter server at {self._url.base_url} has not answered for {seconds:.0f} s"

    async def is_alive(self) -> bool:
        """False when the kernel is gone from its server (404, dead), the token is refused, or the server
        has been unreachable past ``unreachable_after_s``; a cached REST look otherwise."""
        if self._refused or not self._status_alive:
            return False
        if self._conn is None:
            return not self._unreachable()
        if time.monotonic() - self._status_at >= self.status_every_s:
            self._status_at = time.monotonic()
            try:
                await self._check_record(max(self.status_every_s, 5.0))
                self._silent_since = None
            except TransportError:  # a hung server (or host) keeps its websocket open but answers nothing
                self._silent_since = self._silent_since or time.monotonic()
        if self._silent_since is not None:
            silent = time.monotonic() - self._silent_since
            if silent >= self.unreachable_after_s:
                self.gone_reason = self._silence(silent)
                return False
        return self._status_alive and not self._refused

    async def interrupt(self) -> bool:
        await self._post("/interrupt", 10.0)
        return True

    async def restart(self) -> None:
        self._restart_seen = False
        await self._post("/restart", 60.0)
        if not self._restart_seen and self._on_message is not None:
            # a Jupyter Server says nothing on the websocket of a restart asked over REST, and the new
            # process's "starting" may go out before the server's IOPub socket has reconnected
            self._on_message("iopub", self.new_message("status", {"execution_state": "restarting"}))

    async def _post(self, tail: str, timeout: float) -> None:
        try:
            await self._rest("POST", tail, timeout)
        except RemoteRefused as exc:
            raise TransportRefused(str(exc)) from None
        except RemoteError as exc:
            raise TransportError(str(exc)) from None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None
        if self._owns:
            with contextlib.suppress(RemoteError):
                await remote.shutdown_kernel(self._url, self._token)

    def describe(self) -> str:
        return f"kernel {self._url.kernel_id[:8]} on the Jupyter server at {self._url.base_url}"


def _quick_ack(conn: Any) -> None:
    """ACK what arrived now (Linux ``TCP_QUICKACK``). The server writes a reply's frames without
    ``TCP_NODELAY``: after the "busy" frame, Nagle holds the reply until that frame is ACKed, and a
    delayed ACK waits up to 40 ms: measured, every probe took 40-50 ms longer than over ZeroMQ."""
    quickack = getattr(socket, "TCP_QUICKACK", None)  # Linux only; elsewhere the 40 ms stay
    if quickack is None or conn is None:
        return
    with contextlib.suppress(Exception):
        conn.protocol.stream.socket.setsockopt(socket.IPPROTO_TCP, quickack, 1)


def _ignore_closed(future: Any) -> None:
    """A write racing a closed socket is not an error: the reader reconnects and the link times out."""
    with contextlib.suppress(Exception):
        future.exception()
