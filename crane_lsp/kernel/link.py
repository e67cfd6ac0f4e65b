"""The async link to one Jupyter kernel: install the probe, query it, follow the kernel's state.

The link reaches its kernel through one ``KernelTransport`` (``transport.py``): a connection file
(ZeroMQ), a Jupyter Server's kernel websocket, or the editor's relay; everything below is the same
over each. Why it is more than a client: a user's kernel is often busy, restarts under us and
must never be left waiting on us. So the link
- hears every channel through its transport and routes replies by ``msg_id``: any number of requests
  may be in flight at once, from any number of callers (a probe on a subshell while a replay cell
  runs, a history request, ...); see ``ZmqTransport.send`` for what that takes with ZeroMQ;
- follows IOPub ``status`` messages to know whether a cell is running, and which generation
  (execution count) the state has, and tells listeners when a cell finishes or the kernel restarts;
  its own silent requests carry marked msg_ids, so they are never taken for cells, however late
  their status messages come;
- queries the probe with ``silent=True, store_history=False`` and ``user_expressions`` only, on the
  main shell when idle, on a kernel subshell (JEP 91) while a cell runs, else says ``KernelBusy``;
- checks that the probe is installed in the same request as the query, and (re)installs it when a
  restart removed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from crane_lsp.kernel import probe_request
from crane_lsp.kernel.cellrun import ExecutionResult, execution_result, failing_line, strip_ansi
from crane_lsp.kernel.link_types import (
    ExecutedCell,
    KernelBusy,
    KernelDead,
    KernelEvent,
    KernelLinkError,
    KernelRefused,
    KernelTimeout,
    Listener,
    ProbeAnswer,
    ProbeError,
)
from crane_lsp.kernel.transport import Channel, KernelTransport, TransportClosed, TransportError
from crane_lsp.kernel.transport_zmq import ZmqTransport
from crane_lsp.snapshot import ProbeQuery, Snapshot

if TYPE_CHECKING:
    from crane_lsp.kernel.remote import KernelUrl

log = logging.getLogger(__name__)

__all__ = [  # the errors and records live in link_types, ExecutionResult and the rest in cellrun
    "ExecutedCell",
    "ExecutionResult",
    "KernelBusy",
    "KernelDead",
    "KernelEvent",
    "KernelLink",
    "KernelLinkError",
    "KernelRefused",
    "KernelTimeout",
    "ProbeAnswer",
    "ProbeError",
    "failing_line",
    "strip_ansi",
]


_SUBSHELL_FEATURE = "kernel subshells"
#: probe entry points that only read: safe on a subshell beside a running cell
READ_ONLY_ENTRY_POINTS = frozenset({"snapshot"})
#: msg_id prefix of every request a link sends except real cells (``execute``): the kernel echoes it in
#: the parent header of the request's status messages, so they are recognised statelessly, whenever
#: they arrive (also those of other crane links on the same kernel)
SILENT_ID_PREFIX = "crane-silent-"
#: requests of other clients (and real cells) that may change the user's state: each moves ``state_epoch``
STATE_MOVING = frozenset({"execute_request", "comm_open", "comm_msg", "comm_close"})
#: how long a probe's answer waits for its own busy status (IOPub may trail the shell reply a little)
STAMP_WAIT_S = 0.1
#: how many cell texts ``cell_seconds`` remembers
CELL_SECONDS_KEPT = 256


async def _opened(opening: Any) -> KernelTransport:
    """Await a transport's opening coroutine; its errors become the link's (one line, no secrets)."""
    from crane_lsp.kernel.transport import TransportRefused

    try:
        transport: KernelTransport = await opening
    except TransportRefused as exc:
        raise KernelRefused(str(exc)) from exc
    except TransportError as exc:
        raise KernelDead(str(exc)) from exc
    return transport


class KernelLink:
    """An async connection to one kernel. Create with ``connect`` or ``start``; ``close`` when done."""

    #: how long a request waits for the kernel to start on it before the link decides a cell runs
    start_grace_s = 0.25
    #: while waiting for an answer, how often to check that the kernel still exists
    alive_check_s = 0.5
    #: the channel readers look at their socket at least this often, whatever ZeroMQ signalled
    reader_wakeup_s = 1.0

    def __init__(self, transport: KernelTransport) -> None:
        self._transport = transport
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._collect: dict[str, list[dict[str, Any]]] = {}  # msg_id -> IOPub messages (own executes)
        self._started: set[str] = set()  # own requests the kernel has started on (status busy seen)
        self._foreign_busy: dict[str, int | None] = {}  # running cells of others: msg_id -> count
        self._cells: set[str] = set()  # running executes that announced their input (not silent)
        #: cell text -> wall seconds its last run took (busy to idle on IOPub), newest last, at most
        #: ``CELL_SECONDS_KEPT``: the dry run skips a full run of a text known to overrun its budget
        self.cell_seconds: OrderedDict[str, float] = OrderedDict()
        self._cell_started: dict[str, tuple[str, float]] = {}  # msg_id -> (code, time.monotonic())
        self.last_cell_code = ""  # the code of the last real cell that finished (any client's)
        self._ping: str | None = None  # unanswered shell ping (comm_info): the main shell is occupied
        self._listeners: list[Listener] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._probe_ready = False
        self._subshell_id: str | None = None
        self.features: set[str] = set()
        self.kernel_info: dict[str, Any] = {}  # never asked for: kernel_info moves the RNG (see _handshake)
        self.generation: int | None = None
        self.restarts = 0
        #: the kernel process's own session id (each process signs IOPub with a fresh one)
        self._kernel_session: str | None = None
        # what may have moved the user's state, counted in IOPub order: any execute (silent too) or
        # comm message of any client but crane's own silent requests, busy and idle both, and restarts
        self.state_epoch = 0
        self._epochs: dict[str, int | None] = {}  # own probes -> state_epoch when the kernel began them
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def over(cls, transport: KernelTransport, timeout: float = 5.0) -> KernelLink:
        """A link over ``transport`` (not yet started), after the handshake; the transport is closed
        when the kernel does not answer. Every constructor below ends here."""
        link = cls(transport)
        try:
            await transport.start(link._on_message)
            await link._handshake(timeout)
        except BaseException as exc:
            await link.close()
            if isinstance(exc, KernelLinkError | asyncio.CancelledError):
                raise
            raise KernelDead(f"{transport.describe()} did not answer: {exc}") from exc
        return link

    @classmethod
    async def connect(cls, connection_file: str | Path, *, timeout: float = 5.0) -> KernelLink:
        """Attach to a running kernel; ``KernelDead`` quickly when nothing answers there."""
        try:
            transport = await ZmqTransport.from_file(
                Path(connection_file), timeout, reader_wakeup_s=cls.reader_wakeup_s,
                alive_check_s=cls.alive_check_s,
            )  # fmt: skip
        except TransportError as exc:
            raise KernelDead(str(exc)) from exc
        return await cls.over(transport, timeout)

    @classmethod
    async def start(
        cls,
        cwd: str | Path | None = None,
        kernel_name: str = "python3",
        *,
        timeout: float = 60.0,
        quiet: bool = False,
    ) -> KernelLink:
        """Start a fresh kernel (in ``cwd``) owned by this link: ``close()`` shuts it down.

        ``quiet``: drop the kernel process's own stdout/stderr (its startup warnings), for CLIs.
        """
        try:
            transport = await ZmqTransport.start_kernel(
                cwd, kernel_name, timeout=timeout, quiet=quiet, reader_wakeup_s=cls.reader_wakeup_s,
                alive_check_s=cls.alive_check_s,
            )  # fmt: skip
        except TransportError as exc:
            raise KernelDead(str(exc)) from exc
        return await cls.over(transport, timeout)

    @classmethod
    async def connect_url(cls, url: KernelUrl, token: str | None, *, timeout: float = 5.0) -> KernelLink:
        """Attach to a kernel behind a Jupyter Server, by its URL and the server's token (its websocket);
        ``KernelRefused`` for a wrong token, ``KernelDead`` when the server or the kernel is not there."""
        from crane_lsp.kernel.transport_ws import WebSocketTransport

        return await cls.over(await _opened(WebSocketTransport.open(url, token, timeout=timeout)), timeout)

    @classmethod
    async def start_remote(
        cls, server_url: str, token: str | None, kernel_name: str = "python3", *, timeout: float = 60.0
    ) -> KernelLink:
        """Start a kernel on a Jupyter Server, owned by this link: ``close()`` deletes it there."""
        from crane_lsp.kernel.transport_ws import WebSocketTransport

        opening = WebSocketTransport.start_kernel(server_url, token, kernel_name, timeout=timeout)
        return await cls.over(await _opened(opening), timeout)

    async def close(self) -> None:
        """Stop listening; delete our subshell; shut the kernel down if this link started it."""
        if self._closed:
            return
        if self._subshell_id and not self.owns_kernel:
            with contextlib.suppress(Exception):
                await self._request(
                    "control", "delete_subshell_request", {"subshell_id": self._subshell_id}, 1.0
                )
        self._closed = True
        with contextlib.suppress(Exception):
            await self._transport.close()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(KernelDead("the kernel link was closed"))

    async def __aenter__(self) -> KernelLink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def transport(self) -> KernelTransport:
        return self._transport

    @property
    def connection_file(self) -> Path | None:
        """The kernel's connection file when reached through one (ZeroMQ), else None."""
        return self._transport.connection_file

    @property
    def kernel_url(self) -> KernelUrl | None:
        """The kernel's URL when reached through a Jupyter Server, else None."""
        return self._transport.kernel_url

    @property
    def _manager(self) -> Any | None:  # the jupyter_client manager of an own local kernel (tests)
        return getattr(self._transport, "manager", None)

    @property
    def owns_kernel(self) -> bool:
        return self._transport.owns_kernel

    @property
    def supports_subshells(self) -> bool:
        return _SUBSHELL_FEATURE in self.features

    @property
    def busy(self) -> bool:
        """A cell (not ours) is running, or the main shell has not answered our last ping."""
        return bool(self._foreign_busy) or self._ping is not None

    # ------------------------------------------------------------------ routing

    def _on_message(self, channel: Channel, msg: dict[str, Any]) -> None:
        if channel == "iopub":
            self._on_iopub(msg)
        elif channel in ("shell", "control"):
            self._on_reply(msg)

    def _on_reply(self, msg: dict[str, Any]) -> None:
        parent = msg.get("parent_header", {}).get("msg_id")
        if parent == self._ping:
            self._ping = None
            self._update_idle()
        fut = self._pending.pop(parent, None)
        if fut is not None and not fut.done():
            fut.set_result(msg)

    def _on_iopub(self, msg: dict[str, Any]) -> None:
        parent_header = msg.get("parent_header") or {}
        parent: str = parent_header.get("msg_id") or ""
        msg_type = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        content = msg.get("content", {})
        if parent in self._collect:
            self._collect[parent].append(msg)
        if (
            msg_type == "execute_input"
            and isinstance(content.get("execution_count"), int)
            and not parent_header.get("subshell_id")
            and parent
        ):
            # only cells that are not silent announce their input: this is a real cell starting
            self.generation = content["execution_count"]
            self._foreign_busy[parent] = self.generation
            self._cells.add(parent)
            self._cell_started[parent] = (str(content.get("code") or ""), time.monotonic())
            self._emit(KernelEvent("cell_started", self.generation, parent))
        if msg_type != "status":
            return
        state = content.get("execution_state")
        if state in ("starting", "restarting"):
            self._on_restart()
            self._kernel_session = None  # the new process's session is learnt from its next status
            return
        if self._kernel_session_moved(msg, state):
            # a restart whose "starting" we missed: a Jupyter Server sends no status for a restart
            # asked over REST, and the new process's "starting" can go out before IOPub reconnects
            self._on_restart()
        if parent.startswith(SILENT_ID_PREFIX):
            # a silent request of this link (or of another crane link): never a cell. Its status may
            # come after its reply was handled and forgotten; the marked msg_id still says whose it is
            if state == "busy" and parent in self._pending:
                self._started.add(parent)
            if state == "busy" and parent in self._epochs:
                self._epochs[parent] = self.state_epoch  # everything that ran before it is counted
            return
        if parent_header.get("msg_type") in STATE_MOVING and state in ("busy", "idle"):
            self.state_epoch += 1
        is_main_execute = parent_header.get("msg_type") == "execute_request" and not parent_header.get(
            "subshell_id"
        )
        if not is_main_execute or not parent:
            return
        if state == "busy":
            self._foreign_busy.setdefault(parent, None)
            self._update_idle()
        elif state == "idle":
            self._record_seconds(parent)
            seen = parent in self._foreign_busy
            self._foreign_busy.pop(parent, None)
            self._update_idle()
            # a real cell, or one whose start we never saw (it was running when we connected);
            # silent executes of other clients (variable explorers) change nothing
            if parent in self._cells or not seen:
                self._cells.discard(parent)
                self._emit(KernelEvent("cell_finished", self.generation, parent))

    def _record_seconds(self, msg_id: str) -> None:
        code, began = self._cell_started.pop(msg_id, ("", 0.0))
        if code:
            self.last_cell_code = code  # a ``# %%`` script's run is found by its text (undo's hover)
            self.cell_seconds[code] = time.monotonic() - began
            self.cell_seconds.move_to_end(code)
            while len(self.cell_seconds) > CELL_SECONDS_KEPT:
                self.cell_seconds.popitem(last=False)

    def _kernel_session_moved(self, msg: dict[str, Any], state: object) -> bool:
        """Whether a busy/idle status comes from another kernel process than the earlier ones. Only
        busy/idle: a server signs what it sends itself ("restarting", "dead") with its own session."""
        session = (msg.get("header") or {}).get("session")
        if state not in ("busy", "idle") or not isinstance(session, str) or not session:
            return False
        known, self._kernel_session = self._kernel_session, session
        return known is not None and known != session

    def _on_restart(self) -> None:
        self._probe_ready = False
        self._subshell_id = None
        self._foreign_busy.clear()
        self._cells.clear()
        self._cell_started.clear()  # cell_seconds stays: those texts are still slow
        if self._ping is not None:  # a restarted kernel never answers the old ping
            self._forget(self._ping)
            self._ping = None
        self.generation = 0
        self.restarts += 1
        self.state_epoch += 1
        self._update_idle()
        self._emit(KernelEvent("restarted", 0))

    def _update_idle(self) -> None:
        if self.busy:
            self._idle.clear()
        else:
            self._idle.set()

    def _emit(self, event: KernelEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("kernel link listener failed")

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on every ``KernelEvent``; returns a function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no cell runs; False when ``timeout`` passed first."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ requests

    def _send(
        self,
        channel: Channel,
        msg_type: str,
        content: dict[str, Any],
        subshell_id: str | None = None,
        *,
        user_cell: bool = False,
    ) -> tuple[str, asyncio.Future[dict[str, Any]]]:
        """Send a request; the future gets its reply. Safe with any number of requests in flight.

        ``user_cell``: a real cell (``execute``), whose status messages count like anyone's cell;
        every other request gets a ``SILENT_ID_PREFIX`` msg_id.
        """
        if self._closed:
            raise KernelDead("the kernel link was closed")
        msg = self._transport.new_message(msg_type, content)
        if not user_cell:
            msg["header"]["msg_id"] = msg["msg_id"] = f"{SILENT_ID_PREFIX}{uuid.uuid4().hex}"
        if subshell_id:
            msg["header"]["subshell_id"] = subshell_id
        msg_id: str = msg["header"]["msg_id"]
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        try:
            self._transport.send(channel, msg)
        except TransportClosed as exc:
            self._pending.pop(msg_id, None)
            raise KernelDead(str(exc)) from exc
        except TransportError as exc:  # reconnecting: the reply will not come; say so at once
            self._pending.pop(msg_id, None)
            raise KernelDead(str(exc)) from exc
        return msg_id, fut

    def _forget(self, msg_id: str) -> None:
        self._pending.pop(msg_id, None)
        self._collect.pop(msg_id, None)
        self._started.discard(msg_id)

    async def _request(
        self,
        channel: Channel,
        msg_type: str,
        content: dict[str, Any],
        timeout: float,
        subshell_id: str | None = None,
    ) -> dict[str, Any]:
        msg_id, fut = self._send(channel, msg_type, content, subshell_id)
        try:
            return await self._await_reply(fut, timeout, what=msg_type)
        finally:
            self._forget(msg_id)

    async def evaluate(self, expressions: dict[str, str], timeout: float = 5.0) -> dict[str, Any]:
        """Each of ``expressions`` evaluated in the user namespace by one silent request on the main
        shell (``user_expressions``: no code runs, no count moves, no cell is seen by any crane link):
        name -> ``{"status": "ok", "data": {"text/plain": ...}}`` or the error's fields. Only while
        the kernel is idle: a running cell would hold the request in the queue."""
        if self.busy:
            raise KernelBusy(self._busy_message(allow_busy=False))
        content = {
            "code": "",
            "silent": True,
            "store_history": False,
            "user_expressions": dict(expressions),
            "allow_stdin": False,
            "stop_on_error": False,
        }
        reply = await self._request("shell", "execute_request", content, timeout)
        answered = reply.get("content", {}).get("user_expressions", {})
        return answered if isinstance(answered, dict) else {}

    async def _await_reply(
        self, fut: asyncio.Future[dict[str, Any]], timeout: float, what: str
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            step = min(self.alive_check_s, deadline - time.monotonic())
            done, _ = await asyncio.wait({fut}, timeout=max(step, 0))
            if done:
                return fut.result()
            # a dead kernel never answers: notice it at once rather than at the deadline
            if not await self.is_alive():
                raise self._dead()
            if time.monotonic() >= deadline:
                raise KernelTimeout(f"the kernel did not answer {what} within {timeout:g} s")

    async def is_alive(self) -> bool:
        """The kernel still exists (its process, its ports, its server's record of it)."""
        return await self._transport.is_alive()

    def _dead(self) -> KernelDead:
        why = self._transport.gone_reason
        return KernelDead(why or "the kernel is not running any more")

    async def _handshake(self, timeout: float) -> None:
        """Prove the kernel answers (control channel: even mid-cell), learn whether it has subshells,
        then ping the main shell.

        Never ``kernel_info_request``: IPython 9 builds its banner for every kernel_info and picks a
        random tip with the global ``random`` module, so each one would move the user's seeded RNG.
        ``comm_info_request`` and ``list_subshell_request`` touch nothing of the user's.
        """
        try:
            await self._request("control", "comm_info_request", {}, timeout)
        except KernelTimeout as exc:
            raise KernelDead(
                f"no kernel answers at {self.connection_file} (it may have exited; its file is stale)"
                if self.connection_file
                else f"{self._transport.describe()} did not answer within {timeout:g} s"
            ) from exc
        with contextlib.suppress(KernelLinkError):  # kernels without subshells do not answer at all
            reply = await self._request("control", "list_subshell_request", {}, min(timeout, 1.0))
            if reply.get("content", {}).get("status") == "ok":
                self.features.add(_SUBSHELL_FEATURE)
        await self.refresh_busy()

    async def responsive(self, timeout: float = 2.0) -> bool:
        """The heartbeat: does the kernel answer on its control channel within ``timeout``?

        A stopped (SIGSTOP) or wedged kernel still exists and still accepts connections; only an
        answer proves it works."""
        try:
            await self._request("control", "comm_info_request", {}, timeout)
        except KernelTimeout:
            return False
        return True

    async def refresh_busy(self, grace: float | None = None) -> bool:
        """Ask the main shell whether it is free (a request it answers at once), for a kernel we did
        not watch from the start; a late answer clears the busy mark when the cell ends."""
        if self._ping is not None:
            return True
        msg_id, fut = self._send("shell", "comm_info_request", {})
        self._ping = msg_id
        self._update_idle()
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.start_grace_s if grace is None else grace)
        except asyncio.TimeoutError:
            return True  # the reader clears self._ping when the late answer comes
        return False

    # ------------------------------------------------------------------ probe

    async def snapshot(self, query: ProbeQuery, timeout: float | None = None) -> Snapshot:
        """Summaries and facts for ``query``, validated; ``taken_while_busy`` when probed on a subshell."""
        return (await self.snapshot_stamped(query, timeout))[0]

    async def snapshot_stamped(
        self, query: ProbeQuery, timeout: float | None = None
    ) -> tuple[Snapshot, int | None]:
        """``snapshot`` and the ``state_epoch`` it read (None: unknown, e.g. beside a running cell)."""
        if timeout is None:
            timeout = query.request_budget_s * 2 + 5.0
        answer = await self.call_detailed("snapshot", query.model_dump(), timeout)
        try:
            snap = Snapshot.model_validate(answer.data)
        except ValidationError as exc:
            raise ProbeError(f"the probe's snapshot does not match the expected shape: {exc}") from exc
        if answer.taken_while_busy:
            snap.taken_while_busy = True
        if snap.generation is not None:
            self.generation = snap.generation
        return snap, answer.epoch

    async def call(
        self, function: str, payload: dict[str, Any], timeout: float = 10.0, *, allow_busy: bool | None = None
    ) -> dict[str, Any]:
        """Call probe entry point ``function`` with ``payload``; its JSON answer.

        ``allow_busy`` (default: only for the read-only ``READ_ONLY_ENTRY_POINTS``): may it run on a
        subshell beside a running cell? Otherwise a busy kernel raises ``KernelBusy`` at once.
        """
        return (await self.call_detailed(function, payload, timeout, allow_busy=allow_busy)).data

    async def call_detailed(
        self, function: str, payload: dict[str, Any], timeout: float = 10.0, *, allow_busy: bool | None = None
    ) -> ProbeAnswer:
        """Like ``call``, also saying whether a cell was running when it answered."""
        if allow_busy is None:
            allow_busy = function in READ_ONLY_ENTRY_POINTS
        t0 = time.perf_counter()
        deadline = time.monotonic() + timeout
        for attempt in range(2):
            remaining = max(deadline - time.monotonic(), 0.05)
            busy, epoch = self.busy, None
            if busy and not (allow_busy and self.supports_subshells):
                raise KernelBusy(self._busy_message(allow_busy))
            if busy:
                content = await self._probe_on_subshell(function, payload, remaining)
            else:
                content, busy, epoch = await self._probe_on_main(function, payload, remaining, allow_busy)
            data = self._parse(content, function)
            if data is not None:
                self._probe_ready = True
                return ProbeAnswer(data, busy, (time.perf_counter() - t0) * 1000, epoch)
            # the probe was missing or stale (a different crane version, or a restart whose
            # "starting" status we missed: then forget what we believed about the old process)
            if self._probe_ready:
                self._on_restart()
                await self.refresh_busy()
            self._probe_ready = False
            if attempt:
                break
        raise ProbeError("the probe could not be installed in the kernel")

    def _busy_message(self, allow_busy: bool = True) -> str:
        counts = [c for c in self._foreign_busy.values() if c is not None]
        which = f"cell [{counts[0]}]" if counts else "a cell"
        why = (
            "this kernel has no subshells to answer beside it"
            if allow_busy
            else "this request must wait for it"
        )
        return f"kernel busy: {which} is running and {why}"

    def _execute_content(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return probe_request.execute_content(function, payload, install=not self._probe_ready)

    async def _probe_on_main(
        self, function: str, payload: dict[str, Any], timeout: float, allow_busy: bool
    ) -> tuple[dict[str, Any], bool, int | None]:
        msg_id, fut = self._send("shell", "execute_request", self._execute_content(function, payload))
        self._epochs[msg_id] = None
        try:
            deadline = time.monotonic() + timeout
            next_alive_check = time.monotonic() + self.alive_check_s
            while True:
                step = min(0.05, max(deadline - time.monotonic(), 0))
                done, _ = await asyncio.wait({fut}, timeout=step)
                if done:
                    return fut.result()["content"], False, await self._stamp(msg_id)
                if msg_id not in self._started and self.busy:
                    # a cell started before our request: it waits in the queue (harmless, silent);
                    # answer beside the cell instead
                    if allow_busy and self.supports_subshells:
                        return (
                            await self._probe_on_subshell(function, payload, deadline - time.monotonic()),
                            True,
                            None,
                        )
                    raise KernelBusy(self._busy_message(allow_busy))
                if time.monotonic() >= next_alive_check:
                    next_alive_check = time.monotonic() + self.alive_check_s
                    if not await self.is_alive():
                        raise self._dead()
                if time.monotonic() >= deadline:
                    if msg_id not in self._started and await self.refresh_busy():
                        continue  # the main shell is occupied by something we did not see start
                    if not await self.is_alive():
                        raise self._dead()
                    raise KernelTimeout(f"the probe did not answer within {timeout:g} s")
        finally:
            self._forget(msg_id)
            self._epochs.pop(msg_id, None)

    async def _stamp(self, msg_id: str) -> int | None:
        """``state_epoch`` when the kernel began ``msg_id`` (from its busy status), None if unseen."""
        until = time.monotonic() + STAMP_WAIT_S
        while self._epochs.get(msg_id) is None and time.monotonic() < until:
            await asyncio.sleep(0.001)
        return self._epochs.get(msg_id)

    async def _ensure_subshell(self, timeout: float) -> str:
        if self._subshell_id is None:
            reply = await self._request("control", "create_subshell_request", {}, timeout)
            sid = reply.get("content", {}).get("subshell_id")
            if not sid:
                raise KernelBusy(f"kernel busy, and it refused a subshell: {reply.get('content')}")
            self._subshell_id = str(sid)
        return self._subshell_id

    async def _probe_on_subshell(
        self, function: str, payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for _ in range(2):
            sid = await self._ensure_subshell(max(deadline - time.monotonic(), 0.05))
            content = self._execute_content(function, payload)
            reply = await self._request(
                "shell", "execute_request", content, max(deadline - time.monotonic(), 0.05), subshell_id=sid
            )
            body: dict[str, Any] = reply["content"]
            if body.get("ename") == "UnknownSubshellError":
                self._subshell_id = None  # the kernel restarted, or someone deleted it
                continue
            return body
        raise KernelBusy("kernel busy, and its subshell disappeared twice")

    def _parse(self, content: dict[str, Any], function: str) -> dict[str, Any] | None:
        """The entry point's JSON, or None when the probe must be (re)installed first."""
        try:
            return probe_request.parse_answer(content, function)
        except probe_request.ProbeAnswerError as exc:
            raise ProbeError(str(exc)) from exc

    # ------------------------------------------------------------------ history and execution

    async def history(self, timeout: float = 10.0) -> list[ExecutedCell]:
        """The cells run in this kernel session (since its last restart), in execution order."""
        content = {
            "hist_access_type": "range",
            "session": 0,
            "start": 1,
            "stop": None,
            "raw": True,
            "output": False,
        }
        reply = await self._request(
            "shell" if not self.busy else "control", "history_request", content, timeout
        )
        cells = [
            ExecutedCell(int(line), str(source))
            for _session, line, source in reply.get("content", {}).get("history", [])
            if isinstance(line, int)
        ]
        return sorted(cells, key=lambda c: c.execution_count)

    async def execute(self, code: str, timeout: float = 600.0) -> ExecutionResult:
        """Run ``code`` as a normal user cell (with history and a new execution count).

        For replaying notebooks in kernels this link owns. On timeout the kernel is interrupted.
        """
        t0 = time.monotonic()
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        # a real cell: its busy/idle counts like anyone's (probes meanwhile go to a subshell)
        msg_id, fut = self._send("shell", "execute_request", content, user_cell=True)
        self._collect[msg_id] = []
        try:
            try:
                reply = await self._await_reply(fut, timeout, what="the cell")
            except KernelTimeout:
                await self.interrupt()
                try:
                    reply = await asyncio.wait_for(asyncio.shield(fut), 10.0)
                except asyncio.TimeoutError:
                    reply = {"content": {"status": "timeout"}}
                reply = {"content": {**reply["content"], "status": "timeout"}}
            body = reply["content"]
            messages = self._collect.get(msg_id, [])
            # IOPub and shell are separate sockets: outputs may trail the reply until the idle status
            settle = time.monotonic() + 2.0
            while time.monotonic() < settle and not any(
                m.get("msg_type") == "status" and m["content"].get("execution_state") == "idle"
                for m in messages
            ):
                await asyncio.sleep(0.005)
        finally:
            self._forget(msg_id)
        result = execution_result(body, messages, time.monotonic() - t0)
        if result.execution_count is not None:
            self.generation = result.execution_count
        return result

    async def interrupt(self) -> None:
        """Interrupt the running cell (signal for an own kernel, ``interrupt_request`` otherwise)."""
        if await self._transport.interrupt():
            return
        with contextlib.suppress(KernelLinkError):
            await self._request("control", "interrupt_request", {}, 2.0)
