"""The copy of the state before a cell, held while it runs: STANDARD LIBRARY ONLY, joined after
``undo_print.py``.

When undo is on (``undo_configure``), a cell's start (IPython's ``pre_run_cell``, after
``pre_execute``; a silent execute has none) keeps a jailed fork of the kernel as it is at that
moment: the prepared dry-run child when one was forked for exactly this state (``dryrun_warm.py``:
same pid, the execution count just before this cell, alive; it is set aside at ``pre_execute``
instead of being killed), else a fork made here. It never becomes the kernel; it only answers requests on the
pipe crane opened (the jail lets it write nothing else): the fingerprints of the user's names
(``undo_print.py``) and the pickled values of given names, one length-prefixed frame each.

It costs memory: every page the cell writes while it is held is copied (copy-on-write). It is held
only while the machine's (or the cgroup's) free memory minus the kernel's resident size stays above
``reserve_mb`` (the worst case: the cell rewrites every page), and a watcher (a bare thread, like the
reaper) releases it when free memory falls under ``reserve_mb`` or after ``hold_s``. The next code the
kernel runs releases it too. Each release is remembered with its reason, so an undo can say why not.
"""

import contextlib as _uh_contextlib
import json as _uh_json
import os as _uh_os
import struct as _uh_struct
import time as _uh_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.dryrun import _sb_read_file, _sb_refusal, _sb_sys
    from crane_lsp.kernel.agent.dryrun.dryrun_warm import (
        _dw_discard,
        _dw_fork,
        _dw_generation,
        _dw_key,
        _dw_pop,
        _dw_receive,
        _dw_send,
        _dw_state,
        _DwChild,
    )
    from crane_lsp.kernel.agent.dryrun.standin_tf import _stf_gpu
    from crane_lsp.kernel.agent.guard import _JSONResult
    from crane_lsp.kernel.agent.safe import _isa
    from crane_lsp.kernel.agent.undo.undo_print import _ufp_all

_UH_MAGIC = b"CRU1"  # every frame from the held copy starts so (anything else is not its answer)
#: crane's own requests (``kernel/link.py``'s ``SILENT_ID_PREFIX``): their only code installs this agent
_UH_CRANE_PREFIX = "crane-silent-"
_uh_state: dict[str, Any] = {}  # "config", "held" (_UhHeld), "why": [cell number, reason]


class _UhHeld:
    """A held copy as the kernel keeps it: the child, the cell it is the state before, its limits."""

    def __init__(self, child, generation, config):
        import _thread

        self.child = child
        self.generation = generation  # the kernel's generation when the cell started (then after it)
        self.count = None  # the cell's number (In [n]), known once it is over
        self.pid = _uh_os.getpid()
        self.until = _uh_time.monotonic() + float(config.get("hold_s", 600.0))
        self.reserve_mb = float(config.get("reserve_mb", 1024.0))
        self.finished = False  # post_execute seen: the cell is over
        self.lock = _thread.allocate_lock()  # one user of the child's pipe at a time (undo, watcher)


def _uh_meminfo_mb(text, key):
    at = text.find(key)
    if at < 0:
        return None
    return int(text[at + len(key) :].split(None, 1)[0]) / 1024.0


def _uh_available_mb():
    """What may still be allocated: MemAvailable, and the cgroup's ``memory.max - memory.current``
    where a limit is set (a container's kernel is killed at its cgroup's limit, not the machine's)."""
    try:
        avail = _uh_meminfo_mb(_sb_read_file("/proc/meminfo"), b"MemAvailable:")
    except OSError:
        avail = None
    try:
        for line in _sb_read_file("/proc/self/cgroup").decode().splitlines():
            if line.startswith("0::"):
                base = "/sys/fs/cgroup" + line[3:].strip().rstrip("/")
                limit = _sb_read_file(base + "/memory.max").strip()
                if limit and limit != b"max":
                    left = (int(limit) - int(_sb_read_file(base + "/memory.current").strip())) / 2**20
                    avail = left if avail is None else min(avail, left)
    except (OSError, ValueError):
        pass
    return avail


def _uh_rss_mb():
    try:
        return _uh_meminfo_mb(_sb_read_file("/proc/self/status"), b"VmRSS:") or 0.0
    except OSError:
        return 0.0


def _uh_why(count, reason):
    _uh_state["why"] = [count, reason]


def _uh_cell_number():
    """The number the cell that just ended was shown as (``In [n]``): IPython's count has moved past it."""
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    count = getattr(shell, "execution_count", None)
    return count - 1 if isinstance(count, int) else None


def _uh_fits(config):
    """None when a copy may be held now, else why not (one line)."""
    avail, rss = _uh_available_mb(), _uh_rss_mb()
    reserve = float(config.get("reserve_mb", 1024.0))
    if avail is None:
        return "no copy held: free memory cannot be read here"
    if avail - rss < reserve:
        return (f"no copy held: {avail:.0f} MiB free, the kernel holds {rss:.0f} MiB that the cell could "
                f"copy, and undo keeps {reserve:.0f} MiB in reserve")  # fmt: skip
    return None


def _uh_on_pre(info=None):
    """Code starts (a cell, or a silent execute: IPython's ``pre_execute``): a copy held for an earlier
    cell goes (the state moves on); a prepared child forked for exactly this state is set aside for
    ``pre_run_cell``. Registered while undo is on (dryrun_warm's hook defers here); never in the way."""
    try:
        if _uh_state.get("in_code") or not _uh_main_thread():  # once per start (dryrun_warm's hook
            return  # and ours); a subshell's request (its own thread) is not the kernel's cell
        if _uh_crane_request():  # a new link installing the agent: no user code, the copy stays
            return
        _uh_state["in_code"] = True
        if _uh_state.get("held") is not None:
            _uh_release("released: code ran after it")
        child = _dw_pop()
        if child is not None:
            keep = _uh_state.get("config") and _uh_matches(child, _dw_generation())
            _uh_state["candidate"] = child if keep else _dw_discard(child)
    except Exception as exc:  # never in the user's way
        _uh_why(None, f"no copy held: {type(exc).__name__}: {exc}")


def _uh_on_run(info=None):
    """A cell starts (``pre_run_cell``: not for a silent execute): hold the state before it, when
    undo is on and it fits (the prepared child set aside, else a fork made now)."""
    try:
        if _uh_main_thread():  # a cell sent to a subshell runs beside the kernel's: never held
            _uh_run()
    except Exception as exc:  # never in the user's way
        _uh_why(None, f"no copy held: {type(exc).__name__}: {exc}")


def _uh_gpu_values():
    """Why a kernel whose TensorFlow uses a GPU holds no copy: its tensors' values live on the GPU,
    which a copy cannot read (the dry run's shape-level run needs no values; the undo does)."""
    if _stf_gpu():
        return "a GPU is initialised in the kernel (TensorFlow); a copy cannot read its tensors"
    return None


def _uh_run():
    child = _uh_state.pop("candidate", None)
    config = _uh_state.get("config")
    if not config:
        if child is not None:
            _dw_discard(child)
        return
    reason = _uh_fits(config)
    if reason is None and child is None:
        reason = _sb_refusal("") or _uh_gpu_values()
        if reason is None:
            child = _uh_fork(config)
            reason = None if child is not None else "no copy held: the fork failed"
        else:
            reason = "no copy held: " + reason
    if reason is not None:
        if child is not None:
            _dw_discard(child)
        _uh_why(None, reason)
        return
    _uh_keep(child, _dw_generation(), config)


def _uh_matches(child, count):
    """Whether a prepared child is the state right before cell ``count``: forked by this process at
    the count before it (a non-silent execute moves the count before ``pre_execute``; code run since
    the fork killed it), still alive."""
    young = _uh_time.monotonic() - child.begun < child.window_s  # it waits window_s + 1 s, then exits
    return (child.key[0] == _uh_os.getpid() and isinstance(count, int)
            and child.key[1] == count - 1 and child.alive() and young)  # fmt: skip


def _uh_fork(config):
    """A jailed fork of the kernel as it is now, waiting for the hold request (``dryrun_warm``)."""
    payload = dict(config.get("fork", {}))
    hold_s = float(config.get("hold_s", 600.0))
    child = _dw_fork(payload, _dw_key(payload), hold_s)
    return child if isinstance(child, _DwChild) else None


def _uh_keep(child, count, config):
    """Tell the child it is held (it then serves requests until ``hold_s``) and watch it."""
    head = _uh_json.dumps({"op": "hold", "hold_s": float(config.get("hold_s", 600.0))}).encode()
    if not _dw_send(child.request_fd, _uh_struct.pack("<II", len(head), 0) + head, _uh_time.monotonic() + 1):
        _dw_discard(child)
        _uh_why(None, "no copy held: the copy did not take the request")
        return
    held = _UhHeld(child, count, config)
    _uh_state["held"] = held
    _uh_why(None, None)
    import _thread

    _thread.start_new_thread(_uh_watcher, (held, float(config.get("poll_s", 0.25))))


def _uh_on_post(result=None):
    """The code is over: the cell's number is known now, and the generation an undo must find."""
    if not _uh_state.get("in_code") or not _uh_main_thread():  # an agent call, or a subshell's
        return
    _uh_state["in_code"] = False
    child = _uh_state.pop("candidate", None)  # a silent execute: no cell took it
    if child is not None:
        _dw_discard(child)
    why = _uh_state.get("why")
    if why is not None and why[0] is None:
        why[0] = _uh_cell_number()
    held = _uh_state.get("held")
    if held is not None and not held.finished:
        generation = _dw_generation()
        held.count = why[0] if why is not None else _uh_cell_number()
        held.finished = True
        held.generation = generation


def _uh_crane_request():
    """Whether the request being executed is crane's own (its message id says so)."""
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    try:
        parent = shell.kernel.get_parent("shell")  # type: ignore[union-attr]
        msg_id = (parent.get("header") or {}).get("msg_id")
    except Exception:
        return False
    return isinstance(msg_id, str) and msg_id.startswith(_UH_CRANE_PREFIX)


def _uh_main_thread():
    """Whether this is the kernel's main thread (its cells); a subshell runs in a thread of its own."""
    threading = _sb_sys.modules.get("threading")
    if threading is None:
        return True
    return bool(threading.get_ident() == threading.main_thread().ident)


def _uh_watcher(held, poll_s):
    """Releases ``held`` under memory pressure or after its time (a bare thread: no threading import)."""
    while _uh_is_held(held) and held.child.alive():
        if _uh_time.monotonic() >= held.until:
            _uh_release("released: its time window passed", held)
            return
        avail = _uh_available_mb()
        if avail is not None and avail < held.reserve_mb:
            why = f"released under memory pressure ({avail:.0f} MiB free, reserve {held.reserve_mb:.0f})"
            _uh_release(why, held)
            return
        _uh_time.sleep(poll_s)
    if _uh_is_held(held):  # the child died (killed from outside, or the jail failed)
        _uh_release("released: the copy exited", held)


def _uh_is_held(held):
    return _uh_state.get("held") is held


def _uh_release(reason, only=None):
    """Kill the held copy (if ``only``: only that one) and remember why."""
    held = _uh_state.get("held")
    if held is None or (only is not None and held is not only):
        return
    with held.lock:
        if not _uh_is_held(held):
            return
        _uh_state.pop("held", None)
        _uh_drop(held)
        _uh_why(held.count, reason)
        if held.count is not None:  # why the copy of that cell is gone, for an undo that names it
            gone = _uh_state.setdefault("gone", {})
            gone[held.count] = reason
            for old in sorted(gone)[:-20]:
                del gone[old]


def _uh_drop(held):
    _dw_discard(held.child)


def _uh_watch(on):
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    events = getattr(shell, "events", None)
    if events is None:
        return
    hooks = (("pre_execute", _uh_on_pre), ("pre_run_cell", _uh_on_run), ("post_execute", _uh_on_post))
    for name, hook in hooks:
        registered = hook in events.callbacks.get(name, ())
        if on and not registered:
            events.register(name, hook)
        elif not on and registered:
            events.unregister(name, hook)


def undo_configure(payload_json):
    """Turn undo on (``{"on": true, "reserve_mb", "hold_s", "fork": {memory_mb...}}``) or off; off
    releases a held copy. Answers the state."""
    config = _uh_json.loads(payload_json)
    _uh_state["in_code"] = False  # (asked between cells: a start seen without its end is over)
    if config.get("on"):
        _uh_state["config"] = config
        _dw_state["hold"] = _uh_on_pre  # dryrun_warm's pre_execute hook defers to undo
        _uh_watch(True)
    else:
        _uh_state.pop("config", None)
        _dw_state.pop("hold", None)
        _uh_watch(False)
        _uh_release("released: undo turned off")
    held = _uh_state.get("held")
    return _JSONResult({"on": bool(config.get("on")), "held": held.count if held is not None else None})


# --------------------------------------------------------------------------- the held child's side


def _uh_serve(header, request_fd, write_fd, shell):
    """In the held copy (jailed, ``dryrun_warm._dw_child``): answer requests until ``hold_s`` or EOF."""
    namespace = shell.user_ns if shell is not None else _sb_sys.modules["__main__"].__dict__
    deadline = _uh_time.monotonic() + float(header.get("hold_s", 60.0)) + 1.0
    try:
        while True:
            left = deadline - _uh_time.monotonic()
            request = _dw_receive(request_fd, left) if left > 0 else None
            if request is None:
                break
            op = request[0].get("op")
            if op == "fingerprints":
                _uh_write(write_fd, {"fingerprints": _ufp_all(namespace, shell)})
            elif op == "pickle":
                for name in request[0].get("names", []):
                    _uh_pickle_one(write_fd, namespace, name)
                _uh_write(write_fd, {"done": True})
            else:
                break
    except BaseException as exc:  # said, so the kernel does not wait for an answer that will not come
        with _uh_contextlib.suppress(BaseException):
            _uh_write(write_fd, {"error": f"{type(exc).__name__}: {exc}"[:300]})
    _uh_os._exit(0)


def _uh_why_not_pickled(value):
    """Why ``value`` cannot come back from the copy, judged by its type before pickling, or None."""
    import types

    cls = type(value)
    if cls in (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType):
        return "a generator: where it stopped cannot be copied"
    for module, name, why in (("_io", "_IOBase", "an open file"), ("socket", "socket", "a socket")):
        base = getattr(_sb_sys.modules.get(module), name, None)
        if base is not None and base in type.__dict__["__mro__"].__get__(cls):
            return why
    memmap = getattr(_sb_sys.modules.get("numpy"), "memmap", None)
    if memmap is not None and memmap in type.__dict__["__mro__"].__get__(cls):
        return "a memory-mapped file: undo never writes files"
    if _isa(value, "tensor"):
        device = getattr(getattr(value, "device", None), "type", "cpu")
        if device != "cpu":
            return f"a GPU tensor (on {device}): the copy cannot read device memory"
    return None


def _uh_pickle_one(fd, namespace, name):
    """One frame for ``name``: its pickle (protocol 5; large buffers travel out of band, uncopied),
    or the reason it cannot come back."""
    import pickle

    if name not in namespace:
        _uh_write(fd, {"name": name, "reason": "not bound before the cell"})
        return
    value = namespace[name]
    reason = _uh_why_not_pickled(value)
    buffers: list = []
    if reason is None:
        try:
            main = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
            views = [memoryview(main), *(b.raw() for b in buffers)]
        except BaseException as exc:
            reason = f"does not pickle: {type(exc).__name__}: {exc}"[:200]
    if reason is not None:
        _uh_write(fd, {"name": name, "reason": reason})
        return
    _uh_write(fd, {"name": name}, views)


def _uh_write(fd, meta, views=()):
    meta["sizes"] = [v.nbytes for v in views]
    head = _uh_json.dumps(meta, default=str).encode()
    for chunk in (_UH_MAGIC + _uh_struct.pack("<Q", len(head)) + head, *views):
        view = memoryview(chunk).cast("B") if not isinstance(chunk, bytes) else memoryview(chunk)
        while view:
            view = view[_uh_os.write(fd, view) :]


# --------------------------------------------------------------------------- the kernel's side


def _uh_request(held, header):
    head = _uh_json.dumps(header).encode()
    if not _dw_send(
        held.child.request_fd, _uh_struct.pack("<II", len(head), 0) + head, _uh_time.monotonic() + 2
    ):
        raise OSError("the held copy does not take requests")


def _uh_read(held, deadline):
    """The next frame from the held copy: ``(meta, [bytearray per out-of-band buffer])``."""
    fd = held.child.read_fd
    head = _uh_read_exactly(fd, 12, deadline)
    if head[:4] != _UH_MAGIC:
        raise OSError("the held copy answered something else: " + head.decode(errors="replace"))
    meta = _uh_json.loads(_uh_read_exactly(fd, _uh_struct.unpack("<Q", head[4:])[0], deadline))
    if "error" in meta:
        raise OSError("the held copy failed: " + meta["error"])
    return meta, [_uh_read_exactly(fd, size, deadline) for size in meta.get("sizes", ())]


def _uh_read_exactly(fd, size, deadline):
    """``size`` bytes into one bytearray (no join of chunks: a value of a GB is read once)."""
    import select

    data = bytearray(size)
    view = memoryview(data)
    got = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while got < size:
        left = deadline - _uh_time.monotonic()
        if left <= 0 or not poller.poll(max(1, int(left * 1000))):
            raise TimeoutError("the held copy did not answer in time")
        n = _uh_os.readv(fd, [view[got:]])
        if n == 0:
            raise OSError("the held copy is gone")
        got += n
    return data


# dryrun_warm's child serves undo's requests once held; its pre_execute hook defers to undo when on
_dw_state.update(serve=_uh_serve)
