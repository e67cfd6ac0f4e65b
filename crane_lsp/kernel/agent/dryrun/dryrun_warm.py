"""The prepared dry-run child: STANDARD LIBRARY ONLY, joined after ``dryrun.py``.

A cold dry run spends ~15 of its ~40 ms on ``fork()`` and the jail before the cell even starts.
``dry_run_prepare(payload_json)`` does that part ahead, while the user types: it forks a child
exactly as a dry run does (limits, muted kernel sockets, the whole jail, the seccomp listener
handed over) and the child then waits, already confined, for ONE request on a pipe: the cell,
compiled here. It never sees user code before it is jailed. One per kernel, valid while the
kernel's generation holds (``Kernel.execution_count``: every non-silent execute moves it) and for
``window_s`` from its fork (what comms, widgets or threads change without an execute, and the
copy-on-write pages it holds, stay bounded); it waits ``window_s`` + 1 s at most, then exits.
``dry_run(payload_json)`` sends the cell to a valid prepared child (consumed by that one use), and
forks cold otherwise; a stale or mismatched child is killed first, and any code the kernel runs
kills it as it starts (IPython's ``pre_execute``, registered only while a prepared child lives: a
real cell, and also a silent execute with code, which changes state without moving the count).

No zombie and no pid-reuse hazard: a bare thread per child waits for it (it is reaped even when
no agent call comes), and it is signalled through a pidfd, never by a pid that may be reused.
It dies with the kernel: ``PR_SET_PDEATHSIG`` and EOF on its request pipe.
"""

import contextlib as _dw_contextlib
import os as _dw_os
import struct as _dw_struct
import time as _dw_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.copies import _CP_STUCK, _cp_reap
    from crane_lsp.kernel.agent.dryrun.dryrun import (
        _DryRunResult,
        _sb_cold,
        _sb_compile,
        _sb_finish,
        _sb_fork,
        _sb_fork_setup,
        _sb_json,
        _sb_mark,
        _sb_refusal,
        _sb_run,
        _sb_setup,
        _sb_sys,
        _sb_wait,
    )
    from crane_lsp.kernel.agent.jail.jail_seccomp import _jsc_libc
    from crane_lsp.kernel.agent.shorten.shorten import _sh_begin
    from crane_lsp.kernel.agent.wire import PREPARE_WINDOW_S

_dw_state: dict[str, Any] = {}  # "child": this kernel's one prepared child


class _DwChild:
    """A prepared child as the kernel holds it: its pidfd, its pipes, what it was forked for."""

    def __init__(self, pid, pidfd, key, begun, window_s, fds):
        self.pid = pid
        self.pidfd = pidfd
        self.key = key
        self.begun = begun  # monotonic, at the fork: the clock of its phases
        self.window_s = window_s
        self.request_fd, self.read_fd, self.handover = fds
        self.status = None
        import _thread

        self.done = _thread.allocate_lock()
        self.done.acquire()  # released by the reaper once the child is reaped
        _thread.start_new_thread(self._reaper, ())  # a bare thread: Thread.start() waits until it runs

    def _reaper(self):
        try:
            self.status = _dw_os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            pass
        finally:
            self.done.release()

    def alive(self):
        return self.done.locked()

    def valid(self, key):
        return self.key == key and self.alive() and _dw_time.monotonic() - self.begun < self.window_s

    def kill(self):
        import signal

        if self.pidfd >= 0:
            with _dw_contextlib.suppress(OSError):  # ESRCH: already gone (and maybe reaped)
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def reap(self, timeout=5.0):
        """The wait status, from the reaper (the child was killed just before); ``_CP_STUCK`` when
        it has not ended within ``timeout`` (the reaper still reaps it)."""
        if not self.done.acquire(timeout=timeout):
            return _CP_STUCK
        self.done.release()
        return self.status

    def reap_later(self):
        """Nothing to do: the reaper thread reaps it."""

    def close(self):
        """The kernel's ends of the child's pipes and its pidfd (after the last signal)."""
        for name in ("request_fd", "read_fd", "pidfd"):
            fd = getattr(self, name)
            setattr(self, name, -1)  # never closed twice: the number may mean something else by then
            if fd >= 0:
                with _dw_contextlib.suppress(OSError):
                    _dw_os.close(fd)
        if self.handover is not None:
            self.handover.close()
            self.handover = None


def _dw_generation():
    """The kernel's execution count (ipykernel's ``Kernel``, else IPython's shell)."""
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    for owner in (getattr(shell, "kernel", None), shell):
        count = getattr(owner, "execution_count", None)
        if isinstance(count, int):
            return count
    return None


def _dw_key(payload):
    """What a prepared child must have been forked for to serve ``payload``."""
    return (_dw_os.getpid(), _dw_generation(), int(payload.get("memory_mb", 4096)))


def _dw_discard(child):
    """Kill a prepared child that will not be used; its reaper thread reaps it."""
    if child.key[0] == _dw_os.getpid():  # not in a forked copy of the kernel: the child is not its own
        child.kill()
    child.close()


def _dw_drop():
    child = _dw_pop()
    if child is not None:
        _dw_discard(child)
    return child


def _dw_pop():
    """This kernel's prepared child, no longer held (and no longer watched for a real cell)."""
    child = _dw_state.pop("child", None)
    if child is not None:
        _dw_watch(False)
    return child


def _dw_hold(child):
    _dw_state["child"] = child
    _dw_watch(True)


def _dw_watch(on):
    """While a prepared child lives, IPython's ``pre_execute`` (any execute with code, silent or not;
    the probe's own calls carry none, only ``user_expressions``) kills it before the code runs: the
    state moves on, and every page the cell writes while the child lives would first be copied
    (measured: a groupby cell 2-3x slower). Registered only then."""
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    events = getattr(shell, "events", None)
    if events is None:  # plain Python: no cells to watch
        return
    with _dw_contextlib.suppress(Exception):
        if on:
            events.register("pre_execute", _dw_on_cell)
        elif _dw_on_cell in events.callbacks.get("pre_execute", ()):
            events.unregister("pre_execute", _dw_on_cell)


def _dw_on_cell(info=None):
    """Code starts in the kernel (a cell, or a silent execute that may change the state): the
    prepared child goes first (reaped, so its pages are the kernel's alone). With undo on, undo
    decides instead (``undo/undo_hold.py``: it may keep the child as the state before the cell)."""
    hold = _dw_state.get("hold")
    if hold is not None:
        return hold(info)
    try:
        child = _dw_drop()
        if child is not None:
            child.reap(timeout=0.2)
    except Exception:  # never in the user's way
        pass


def _dw_take(key):
    """This kernel's prepared child if it may serve ``key`` (it is then consumed), else None; a
    stale or mismatched one is discarded."""
    child = _dw_pop()
    if child is None or child.valid(key):
        return child
    _dw_discard(child)
    return None


def _dw_answer(data, started):
    data["prepare_ms"] = round((_dw_time.perf_counter() - started) * 1000, 2)
    return _DryRunResult(data)


def dry_run_prepare(payload_json):
    """Fork and jail a child that waits for the next dry run (idempotent while a valid one exists)."""
    payload = _sb_json.loads(payload_json)
    started = _dw_time.perf_counter()
    reason = _sb_refusal("")
    if reason:  # the same reasons as the dry run's own
        _dw_drop()
        return _dw_answer({"outcome": "unavailable", "message": reason}, started)
    import signal

    if not hasattr(_dw_os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return _dw_answer({"outcome": "skipped", "message": "no pidfd here: dry runs fork cold"}, started)
    key = _dw_key(payload)
    child = _dw_take(key)
    if child is not None:
        _dw_hold(child)
        age = round(_dw_time.monotonic() - child.begun, 3)
        answer = {"outcome": "prepared", "fresh": False, "child_pid": child.pid, "age_s": age}
        return _dw_answer(answer, started)
    window = float(payload.get("window_s", PREPARE_WINDOW_S))
    child = _dw_fork(payload, key, window)
    if child is None:
        return _dw_answer({"outcome": "skipped", "message": "pidfd_open failed: dry runs fork cold"}, started)
    _dw_hold(child)
    return _dw_answer({"outcome": "prepared", "fresh": True, "child_pid": child.pid, "age_s": 0.0}, started)


def _dw_fork(payload, key, window):
    import socket

    payload["_parent"] = _dw_os.getpid()
    payload["_lifetime_s"] = window + 1.0
    read_fd, write_fd = _dw_os.pipe()  # the verdict
    request_read, request_write = _dw_os.pipe()  # the one request
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    payload["_filter"] = _sb_fork_setup({write_fd, request_read}, {read_fd, request_write}, theirs.fileno())
    begun = payload["_begun"] = _dw_time.monotonic()
    pid = _sb_fork()
    if pid == 0:
        _dw_os.close(read_fd)
        _dw_os.close(request_write)
        ours.detach()
        _dw_child(payload, write_fd, theirs.detach(), request_read)
    with _dw_contextlib.suppress(OSError):
        _dw_os.setpgid(pid, pid)
    _dw_os.close(write_fd)
    _dw_os.close(request_read)
    theirs.close()
    try:
        pidfd = _dw_os.pidfd_open(pid)
    except OSError:  # not reaped by anyone yet: its pid is still its own
        with _dw_contextlib.suppress(OSError):
            _dw_os.kill(pid, 9)
        _cp_reap(pid)
        for fd in (read_fd, request_write):
            _dw_os.close(fd)
        ours.close()
        return None
    _dw_os.set_blocking(request_write, False)  # a big cell never blocks the kernel past its budget
    return _DwChild(pid, pidfd, key, begun, window, (request_write, read_fd, ours))


def _dw_child(payload, write_fd, handover_fd, request_fd):
    """The prepared child: jailed first, then it waits for the cell; never returns."""
    _started, result, state, shell = _sb_setup(payload, write_fd, handover_fd, {request_fd})
    _dw_give_back_free_heap(result["phases_ms"], payload["_begun"])
    request = _dw_receive(request_fd, payload["_lifetime_s"])
    if request is None:  # its window passed, or the kernel discarded it or died
        with _dw_contextlib.suppress(OSError):  # said, so a request sent too late forks cold
            _dw_os.write(write_fd, b'{"outcome": "expired"}\n')
        _dw_os._exit(0)
    header, body = request
    if "op" in header and "serve" in _dw_state:  # held as the state before a cell (undo/undo_hold.py)
        _dw_state["serve"](header, request_fd, write_fd, shell)
    _sb_mark(result["phases_ms"], "received", payload["_begun"])
    import marshal

    code = marshal.loads(body)
    namespace = shell.user_ns if shell is not None else _sb_sys.modules["__main__"].__dict__
    payload.update(header)
    result["_measure_memory"] = bool(header.get("measure_memory"))
    _sb_run(code, namespace, payload, (result, state, shell), write_fd, _dw_time.perf_counter())


def _dw_give_back_free_heap(phases, begun):
    """While it waits, the child drops the kernel's free heap pages from its copy (glibc's
    ``malloc_trim``: the free chunks' pages are released, the top of the heap is cut back).

    Why: after a fork, memory the kernel freed is still shared copy-on-write, and the cell's first
    allocations reuse it, so each page it writes is first copied from the kernel (a fault and a
    4 KiB copy, where the kernel itself writes in place). A NumPy sort of a 24 MB array ran about
    twice its kernel time for that alone. Released pages come back fresh, and NumPy's large arrays
    (advised for huge pages) get them 2 MiB at a time. It costs O(free chunks): up to ~40 ms on a
    heap of 150,000 free chunks, which is why only the prepared child does it, before the cell
    arrives. The cell sees nothing: free memory holds no values."""
    try:
        trim = _jsc_libc().malloc_trim
    except AttributeError:  # not glibc
        return
    trim(0)
    _sb_mark(phases, "heap_given_back", begun)


def _dw_receive(fd, lifetime_s):
    """``(header, marshalled code)`` from the request pipe, or None (no request in time, or EOF)."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(max(1, int(lifetime_s * 1000))):
        return None
    head = _dw_read_exactly(fd, 8)
    if head is None:
        return None
    header_size, body_size = _dw_struct.unpack("<II", head)
    data = _dw_read_exactly(fd, header_size + body_size)
    if data is None:
        return None
    return _sb_json.loads(data[:header_size]), data[header_size:]


def _dw_read_exactly(fd, size):
    chunks, got = [], 0
    while got < size:
        chunk = _dw_os.read(fd, size - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _dw_send(fd, data, deadline):
    """The whole request into the (non-blocking) pipe before ``deadline``; False if the child is
    gone or does not read."""
    import select

    view = memoryview(data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        try:
            view = view[_dw_os.write(fd, view) :]
        except BlockingIOError:
            left = deadline - _dw_time.monotonic()
            if left <= 0:
                return False
            poller.poll(max(1, int(left * 1000)))
        except OSError:  # EPIPE: the child is gone
            return False
    return True


_DW_HEADER_KEYS = ("source", "privacy", "facts", "budget_s", "_report_where", "expect_bound", "preview")


def _dw_use(child, payload, compiled, entered, started):
    """The dry run through a prepared child; None when it cannot take the request (fork cold)."""
    import marshal

    budget = float(payload.get("budget_s", 3.0))
    header = {
        "async_mode": payload["async_mode"],
        "_cell_magic": payload["_cell_magic"],
        "measure_memory": bool(payload.get("measure_memory")),
        "memory_mb": int(payload.get("memory_mb", 4096)),
        **{k: payload[k] for k in _DW_HEADER_KEYS if k in payload},  # failfacts.py, shorten.py
    }
    try:
        body = marshal.dumps(compiled[0])
    except ValueError:
        _dw_discard(child)
        return None
    head = _sb_json.dumps(header).encode()
    phases = {"called": round((entered - child.begun) * 1000, 2)}  # one clock: ms since its fork
    if not _dw_send(child.request_fd, _dw_struct.pack("<II", len(head), len(body)) + head + body,
                    _dw_time.monotonic() + budget):  # fmt: skip
        _dw_discard(child)
        return None
    _sb_mark(phases, "requested", child.begun)
    deadline = _dw_time.monotonic() + budget  # the budget counts from the request
    try:
        cancel = payload.get("_cancel_fd", -1)  # a shortened run's verdict may supersede it
        where = payload.get("_where")  # the line the full run is on (shorten.py)
        wait = (budget, child.begun, phases, deadline, cancel, where)
        result = _sb_wait(child, child.read_fd, child.handover, *wait)
    except BaseException:  # an interrupt of the kernel while waiting: the child must not outlive it
        child.kill()
        child.reap()
        raise
    finally:
        child.read_fd, child.handover = -1, None  # closed by _sb_wait
        child.close()
    if result.get("outcome") == "expired":  # it stopped waiting just before the request came
        return None
    result["prepared_age_s"] = round(entered - child.begun, 3)
    return _sb_finish(result, started, child.begun, phases, child.pid, budget, prepared=True)


def dry_run(payload_json):
    """Run ``payload['source']`` in a jailed fork of this kernel for at most ``budget_s`` seconds:
    in this kernel's prepared child when one is valid, else in a fresh fork."""
    return _dw_run(_sb_json.loads(payload_json), prepared=True)


def _dw_run(payload, prepared):
    """One dry run of ``payload`` (``dry_run``'s, and each of ``dry_run_many``'s): refused, failing
    to compile, or run with its shortened helper; through the prepared child only when ``prepared``
    (side by side runs fork cold and leave it for the next single one)."""
    entered = _dw_time.monotonic()
    started = _dw_time.perf_counter()
    reason = _sb_refusal(payload.get("source", ""))
    if reason:
        if prepared:
            _dw_drop()
        return _DryRunResult({"outcome": "unavailable", "message": reason, "prepared": False})
    compiled = _sb_compile(payload)
    if isinstance(compiled, dict):  # the cell cannot even start: no child is needed (nor consumed)
        return _DryRunResult({**compiled, "prepared": False})
    helper = _sh_begin(payload, compiled)  # a shortened run beside a slow one (shorten.py)
    result = None
    try:
        child = _dw_take(_dw_key(payload)) if prepared else None
        if child is not None:
            result = _dw_use(child, payload, compiled, entered, started)
        if result is None:
            result = _sb_cold(payload, started, compiled)
    finally:
        if helper is not None:
            result = helper.finish(result)
    return result
