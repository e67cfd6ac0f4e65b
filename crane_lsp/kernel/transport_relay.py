"""The relay transport: a kernel reached through the editor's own connection, over LSP.

Why: in VS Code on a remote Jupyter server (JupyterHub, Colab, a lab's server) the notebook's kernel has
no connection file on this machine and crane may have neither the server's URL nor its token; the
editor holds the kernel. The extension answers two requests (vscode-client/src/relay.ts):

- ``crane/kernelRelay/execute {notebookUri, code, startTimeoutMs, timeoutMs}``: runs ``code`` with the
  Jupyter extension's ``kernel.executeCode`` and answers ``{status, stdout, stderr, error, outputs}``;
- ``crane/kernelRelay/status {notebookUri}``: the kernel's status as the editor knows it, running nothing.

``executeCode`` sends ``execute_request`` with ``silent: false, store_history: false`` (vscode-jupyter's
``executeSilently``): no execution count, no history entry; but the code is announced on IOPub and the
pre/post-run-cell events fire. So this transport never forwards a message's code as it is. It turns the
link's requests into one expression statement, ``exec(compile(SOURCE), {private namespace})``, which
returns None (nothing for ``Out``/``_``), catches every exception itself (no ``sys.last_value``), runs the
request's code in the user's namespace exactly as a silent execute would, evaluates the
``user_expressions`` with IPython's own ``shell.user_expressions`` (what ipykernel calls), and prints one
line of JSON between markers with a fresh nonce. That line is decoded back into an ``execute_reply``.

What a relay cannot do, it says the way a kernel would, so the link's fallbacks apply:
- no subshells (``list_subshell_request`` is refused): beside a running cell the link says KernelBusy;
- no IOPub of other clients: a cell that runs is seen as the ``status`` request's ``busy``, or as a
  relayed request that does not start within ``start_timeout_s``; the transport then announces a
  stand-in cell (``execute_input``/busy on IOPub) and polls the status until it is idle again, when the
  stand-in ends (``cell_finished``). Cells run between two requests show as a moved execution count;
- no interrupt and no restart (``interrupt_request`` is refused; the editor's own buttons do that);
- a request the editor cannot start is never cancelled (cancelling interrupts the kernel): it stays
  queued behind the cell, runs later and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crane_lsp.kernel.transport import Channel, MessageHandler, TransportClosed

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.remote import KernelUrl

log = logging.getLogger(__name__)

RELAY_EXECUTE = "crane/kernelRelay/execute"
RELAY_STATUS = "crane/kernelRelay/status"
#: ``send_request(method, params)``: sends an LSP request to the client and returns its result
SendRequest = Callable[[str, dict[str, Any]], Awaitable[Any]]

#: what the relay cannot do, for the link and for messages (``KernelTransport`` has no field for it)
FEATURES_MISSING = frozenset({"subshells", "iopub", "interrupt", "restart", "stdin"})
_BUSY_STATES = frozenset({"busy"})
_GONE_STATES = frozenset({"dead", "terminating"})
_RESTARTING = frozenset({"starting", "restarting", "autorestarting"})
_NOT_IDLE = _GONE_STATES | _BUSY_STATES | _RESTARTING | {"unknown"}
_REFUSED = frozenset({"noKernel", "denied", "failed"})

#: runs inside the user's kernel, in a namespace of its own; ``req`` and ``ns`` are given. Only stdlib
#: modules any ipykernel has imported already; binds nothing in ``ns`` except what ``code`` binds.
SOURCE = r"""
def _crane_relay(req, ns):
    import sys
    json = sys.modules.get("json") or __import__("json")
    out = sys.stdout
    out.write(req["start"] + "\n")
    out.flush()
    ipy = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    reply = {"status": "ok", "execution_count": getattr(ipy, "execution_count", None)}
    # IPython records an expression's exception in sys.last_*: what the user's last error was stays
    last = {k: getattr(sys, k) for k in ("last_type", "last_value", "last_traceback", "last_exc")
            if hasattr(sys, k)}

    def failure():
        kind, value, _tb = sys.exc_info()
        return {"status": "error", "ename": getattr(kind, "__name__", "Error"), "evalue": str(value),
                "traceback": []}

    try:
        kind = req["kind"]
        if kind == "execute":
            if req["code"]:
                exec(compile(req["code"], "<crane-relay>", "exec"), ns)
            exprs = req["user_expressions"]
            if ipy is not None:
                reply["user_expressions"] = ipy.user_expressions(exprs)
            else:
                results = {}
                for key, expr in exprs.items():
                    try:
                        results[key] = {"status": "ok", "data": {"text/plain": repr(eval(expr, ns))},
                                        "metadata": {}}
                    except BaseException:
                        results[key] = failure()
                reply["user_expressions"] = results
        elif kind == "history":
            rows = ipy.history_manager.get_range(session=0, start=1, stop=None, raw=True, output=False)
            reply["history"] = [[s, n, src] for s, n, src in rows]
        elif kind != "ping":
            reply = {"status": "error", "ename": "ValueError", "evalue": "unknown relay request " + kind}
    except BaseException:
        reply.update(failure())
        reply.setdefault("user_expressions", {})
    for k in ("last_type", "last_value", "last_traceback", "last_exc"):
        if k in last:
            setattr(sys, k, last[k])
        elif hasattr(sys, k):
            delattr(sys, k)
    text = json.dumps(reply, default=repr, ensure_ascii=True)
    out.write(req["open"] + text + req["close"] + "\n")
    out.flush()


_crane_relay(_crane_request, _crane_ns)
"""


def relay_code(request: dict[str, Any]) -> str:
    """The one expression statement the editor runs: ``exec`` of ``SOURCE`` in a private namespace,
    given ``request`` and the cell's globals (the user's namespace). It evaluates to None."""
    return (
        "__import__('builtins').exec(__import__('builtins').compile("
        f"{json.dumps(SOURCE)}, '<crane-relay>', 'exec'), "
        "{'__name__': '_crane_relay', "
        f"'_crane_request': __import__('json').loads({json.dumps(json.dumps(request))}), "
        "'_crane_ns': __import__('sys')._getframe(0).f_globals})"
    )


@dataclass
class RelayAnswer:
    """What the editor answered to ``crane/kernelRelay/execute`` (vscode-client/src/relay.ts)."""

    status: str
    stdout: str = ""
    stderr: str = ""
    error: dict[str, str] | None = None
    outputs: list[dict[str, str]] = field(default_factory=list)
    message: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> RelayAnswer:
        data = _plain(raw)
        if not isinstance(data, dict):
            return cls("failed", message=f"the editor answered {type(data).__name__}, not an object")
        error = data.get("error")
        outputs = data.get("outputs")
        return cls(
            status=str(data.get("status", "failed")),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            error={str(k): str(v) for k, v in error.items()} if isinstance(error, dict) else None,
            outputs=[o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else [],
            message=str(data["message"]) if data.get("message") else None,
        )


def _plain(value: Any) -> Any:
    """An LSP result as plain JSON data (pygls may hand back attrs objects or named tuples)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) and not hasattr(value, "_asdict"):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return _plain(value._asdict())
    if hasattr(value, "__attrs_attrs__"):
        import cattrs

        return _plain(cattrs.unstructure(value))
    return value


def decode_reply(answer: RelayAnswer, markers: tuple[str, str]) -> dict[str, Any] | None:
    """The reply ``SOURCE`` printed between ``markers``, or None when it is not there."""
    opening, closing = markers
    start = answer.stdout.rfind(opening)
    if start < 0:
        return None
    end = answer.stdout.find(closing, start + len(opening))
    if end < 0:
        return None
    try:
        reply = json.loads(answer.stdout[start + len(opening) : end])
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class RelayTransport:
    """``KernelTransport`` over the editor's kernel connection (see the module's docstring)."""

    kind = "relay"
    connection_file: Path | None = None
    kernel_url: KernelUrl | None = None
    owns_kernel = False
    features_missing = FEATURES_MISSING

    #: a relayed request that shows no output within this time waits behind a running cell
    start_timeout_s = 2.0
    #: the longest a relayed request may run (the link's own timeouts, a dry run's included, are shorter)
    request_timeout_s = 600.0
    #: how often the editor is asked for the kernel's status while a cell runs
    poll_s = 1.0
    #: a status request the editor does not answer within this time proves nothing
    status_timeout_s = 5.0
    #: a "busy" lasting less than this is another client's quick request (a variable explorer), not a cell
    busy_settle_s = 0.4

    def __init__(self, send_request: SendRequest, notebook_uri: str) -> None:
        self._send_request = send_request
        self.notebook_uri = notebook_uri
        self.gone_reason: str | None = None
        self._on_message: MessageHandler | None = None
        self._session = uuid.uuid4().hex
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()  # one relayed execution at a time: the editor queues them anyway
        self._closed = False
        self._count: int | None = None  # the kernel's execution count at our last answer
        self._stand_in: dict[str, Any] | None = None  # the header of the announced running cell
        self._pings: list[dict[str, Any]] = []  # shell comm_info requests waiting for an idle shell
        self._poller: asyncio.Task[None] | None = None
        self._restarting = False
        self._history: dict[str, Any] | None = None  # the last history reply, for while a cell runs

    # ------------------------------------------------------------------ KernelTransport

    async def start(self, on_message: MessageHandler) -> None:
        self._on_message = on_message

    def new_message(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self._session,
            "username": "crane",
            "date": _now(),
            "version": "5.3",
        }
        return {
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
            "msg_id": msg_id,
            "msg_type": msg_type,
            "buffers": [],
        }

    def send(self, channel: Channel, msg: dict[str, Any]) -> None:
        if self._closed:
            raise TransportClosed("the relay to the editor's kernel was closed")
        task = asyncio.get_running_loop().create_task(self._handle(channel, msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def is_alive(self) -> bool:
        if self._closed:
            return False
        status = await self._status()
        return status not in _GONE_STATES and self.gone_reason is None

    async def interrupt(self) -> bool:
        return False  # the link then sends interrupt_request, which the relay refuses

    async def restart(self) -> None:
        raise NotImplementedError("the editor's kernel is restarted from the editor, not through the relay")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks) + ([self._poller] if self._poller else []):
            task.cancel()
        for task in list(self._tasks) + ([self._poller] if self._poller else []):
            with contextlib.suppress(BaseException):
                await task

    def describe(self) -> str:
        return f"the editor's kernel of {self.notebook_uri} (relayed)"

    # ------------------------------------------------------------------ requests

    async def _handle(self, channel: Channel, msg: dict[str, Any]) -> None:
        msg_type = msg["header"]["msg_type"]
        content = msg.get("content") or {}
        try:
            if msg_type == "comm_info_request" and channel == "control":
                await self._answer_control_ping(msg)
            elif msg_type == "comm_info_request":
                await self._answer_shell_ping(msg)
            elif msg_type == "execute_request" and msg["header"].get("subshell_id"):
                self._reply(channel, msg, _refusal("UnknownSubshellError", "the relay has no subshells"))
            elif msg_type == "execute_request" and content.get("store_history"):
                self._reply(channel, msg, _refusal("RelayRefused", "the relay runs no recorded cells"))
            elif msg_type == "execute_request":
                await self._relay(
                    channel,
                    msg,
                    {
                        "kind": "execute",
                        "code": content.get("code") or "",
                        "user_expressions": content.get("user_expressions") or {},
                    },
                )
            elif msg_type == "history_request":
                await self._relay(channel, msg, {"kind": "history"})
            else:  # subshells, interrupt, kernel_info, shutdown, ...: what a relay cannot do
                self._reply(channel, msg, _refusal("RelayUnsupported", f"{msg_type} is not relayed"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the editor went away, or answered nonsense: no reply (timeouts)
            log.info("relay: %s for %s failed: %s", msg_type, self.notebook_uri, exc)

    async def _status(self) -> str:
        """The kernel's status as the editor knows it; "unknown" when it does not say in time."""
        try:
            raw = await asyncio.wait_for(
                self._send_request(RELAY_STATUS, {"notebookUri": self.notebook_uri}), self.status_timeout_s
            )
        except asyncio.TimeoutError:
            return "unknown"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # MethodNotFound (an editor without the relay), the client went away
            self.gone_reason = f"the editor does not relay kernel requests ({exc})"
            return "dead"
        data = _plain(raw)
        status = str(data.get("status", "unknown")) if isinstance(data, dict) else "unknown"
        if status in _REFUSED:
            message = data.get("message") if isinstance(data, dict) else None
            self.gone_reason = str(message or f"the editor has no kernel for {self.notebook_uri}")
            return "dead"
        self.gone_reason = None
        if status in _RESTARTING and not self._restarting:
            # as the kernel's own IOPub would say: the link forgets the probe and hears "restarted"
            self._count, self._history = None, None
            self._emit_status("restarting", {})
        self._restarting = status in _RESTARTING
        return status

    async def _settled_status(self) -> str:
        """The status, asked again for ``busy_settle_s`` while it says busy."""
        status = await self._status()
        until = asyncio.get_running_loop().time() + self.busy_settle_s
        while status in _BUSY_STATES and asyncio.get_running_loop().time() < until:
            await asyncio.sleep(0.1)
            status = await self._status()
        return status

    async def _answer_control_ping(self, msg: dict[str, Any]) -> None:
        """The control channel answers even mid-cell: the editor knowing a live kernel is the answer.
        The first time, an idle kernel is also asked its execution count (one relayed request)."""
        status = await self._status()
        if status in _GONE_STATES:
            return  # never answered: the link's is_alive says why
        if self._count is None and status not in _BUSY_STATES:
            with contextlib.suppress(Exception):
                await self._learn_count()
        self._reply("control", msg, {"status": "ok", "comms": {}})

    async def _learn_count(self) -> None:
        answer, markers = await self._execute({"kind": "ping"})
        reply = decode_reply(answer, markers) if answer.status == "ok" else None
        if reply is not None and isinstance(reply.get("execution_count"), int):
            self._count = reply["execution_count"]

    async def _answer_shell_ping(self, msg: dict[str, Any]) -> None:
        """The main shell answers when no cell runs: at once when idle, else when the poll sees idle."""
        status = await self._settled_status()
        if status in _GONE_STATES:
            return
        if status in _BUSY_STATES or self._stand_in is not None:
            self._pings.append(msg)
            self._announce_stand_in()
            return
        self._reply("shell", msg, {"status": "ok", "comms": {}})

    async def _execute(self, request: dict[str, Any]) -> tuple[RelayAnswer, tuple[str, str]]:
        """One relayed execution of ``SOURCE`` for ``request``; the answer and its reply's markers."""
        nonce = secrets.token_hex(8)
        markers = (f"<crane-relay {nonce}>", f"</crane-relay {nonce}>")
        request = {**request, "start": f"<crane-relay-start {nonce}>", "open": markers[0]}
        request["close"] = markers[1]
        async with self._lock:
            raw = await self._send_request(
                RELAY_EXECUTE,
                {
                    "notebookUri": self.notebook_uri,
                    "code": relay_code(request),
                    "startTimeoutMs": int(self.start_timeout_s * 1000),
                    "timeoutMs": int(self.request_timeout_s * 1000),
                },
            )
        return RelayAnswer.parse(raw), markers

    async def _relay(self, channel: Channel, msg: dict[str, Any], request: dict[str, Any]) -> None:
        history = request["kind"] == "history"
        if self._stand_in is not None:
            # a cell runs: the request would wait behind it, as in the kernel's own queue; the history
            # read before it began still holds (IPython records a cell's input when it starts)
            if history and self._history is not None:
                self._reply(channel, msg, self._history)
            return
        answer, markers = await self._execute(request)
        if answer.status == "busy":
            self._announce_stand_in()
            if history and self._history is not None:
                self._reply(channel, msg, self._history)
            return
        if answer.status == "timeout":
            return  # no reply: the link's own deadline says it (KernelTimeout)
        if answer.status in _REFUSED:
            self.gone_reason = answer.message or f"the editor could not run crane's request ({answer.status})"
            return
        reply = decode_reply(answer, markers)
        if reply is None:
            why = answer.error or {}
            reply = _refusal(
                why.get("ename") or "RelayError",
                why.get("evalue")
                or answer.message
                or f"the editor's kernel answered without crane's reply ({answer.status}; "
                f"stderr: {answer.stderr.strip()[-200:] or 'empty'})",
            )
        self._saw_count(reply.get("execution_count"))
        if history and reply.get("status") == "ok":
            self._history = reply
        self._emit_status("busy", msg["header"])
        self._reply(channel, msg, reply)
        self._emit_status("idle", msg["header"])

    # ------------------------------------------------------------------ other clients' cells

    def _saw_count(self, count: Any) -> None:
        """A moved execution count between two answers: cells ran that the relay did not see."""
        if not isinstance(count, int):
            return
        moved = self._count is not None and count != self._count
        self._count = count
        if moved:
            header = self._stand_in_header()
            self._emit("iopub", "execute_input", {"code": "", "execution_count": count - 1}, header)
            self._emit_status("busy", header)
            self._emit_status("idle", header)

    def _stand_in_header(self) -> dict[str, Any]:
        msg = self.new_message("execute_request", {})
        msg["header"]["msg_id"] = f"crane-relay-cell-{uuid.uuid4().hex}"
        return dict(msg["header"])

    def _announce_stand_in(self) -> None:
        """A cell runs that the relay cannot see: say so as IOPub would, then poll until it ends."""
        if self._stand_in is None:
            self._stand_in = self._stand_in_header()
            if self._count is not None:  # the running cell's number: the count it started with
                content = {"code": "", "execution_count": self._count}
                self._emit("iopub", "execute_input", content, self._stand_in)
            self._emit_status("busy", self._stand_in)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll_until_idle())

    async def _poll_until_idle(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.poll_s)
            status = await self._status()
            if status in _NOT_IDLE:
                continue
            stand_in, self._stand_in = self._stand_in, None
            if stand_in is not None:
                self._emit_status("idle", stand_in)
                self._count = None  # the count moved under the stand-in: not a second cell
            pings, self._pings = self._pings, []
            for ping in pings:
                self._reply("shell", ping, {"status": "ok", "comms": {}})
            return

    # ------------------------------------------------------------------ messages to the link

    def _reply(self, channel: Channel, request: dict[str, Any], content: dict[str, Any]) -> None:
        reply_type = request["header"]["msg_type"].replace("_request", "_reply")
        self._emit(channel, reply_type, content, request["header"])

    def _emit_status(self, state: str, parent: dict[str, Any]) -> None:
        self._emit("iopub", "status", {"execution_state": state}, parent)

    def _emit(self, channel: Channel, msg_type: str, content: dict[str, Any], parent: dict[str, Any]) -> None:
        if self._closed or self._on_message is None:
            return
        msg = self.new_message(msg_type, content)
        msg["parent_header"] = dict(parent)
        self._on_message(channel, msg)


def _refusal(ename: str, evalue: str) -> dict[str, Any]:
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": [], "user_expressions": {}}


@dataclass(frozen=True)
class RelayTarget:
    """The editor's own kernel of a notebook as an attach target (the server's ``KernelTarget``
    shape: ``where`` and ``label`` for messages, no file, no URL, no token; ``connect``)."""

    send_request: SendRequest = field(repr=False, compare=False)
    notebook_uri: str
    where: str = "the editor's kernel (relayed)"
    url: None = None
    token: None = None
    connection_file: None = None
    kernel_url: None = None

    @property
    def label(self) -> str:
        return self.where

    async def connect(self) -> KernelLink:
        return await connect_relay(self.send_request, self.notebook_uri)


async def connect_relay(send_request: SendRequest, notebook_uri: str, timeout: float = 10.0) -> KernelLink:
    """A ``KernelLink`` to the editor's kernel of ``notebook_uri``, relayed over LSP (the server's hook
    for ``crane/attachKernel {notebookUri, relay: true}``); ``KernelDead`` when the editor has none."""
    from crane_lsp.kernel.link import KernelLink

    return await KernelLink.over(RelayTransport(send_request, notebook_uri), timeout)
