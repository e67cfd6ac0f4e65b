"""Kernel-side dry run: STANDARD LIBRARY ONLY, appended to the probe's source and sent as text.

``dry_run(payload_json)`` forks the kernel process. The child shares the parent's memory
copy-on-write, cuts itself off (output to /dev/null, no network, side effects blocked by an audit
hook, first in line for the OOM killer, dies with the parent), runs the cell against ITS copy of
the namespace and reports over a pipe. The parent waits at most the budget, kills and reaps the
child, and returns the outcome: raised / completed / timeout / blocked / unsupported.
"""

import contextlib as _sb_contextlib
import json as _sb_json
import os as _sb_os
import sys as _sb_sys
import time as _sb_time
from typing import Any

_SB_FILENAME = "<crane-dryrun>"
_SB_WRITE_FLAGS = _sb_os.O_WRONLY | _sb_os.O_RDWR | _sb_os.O_CREAT | _sb_os.O_TRUNC | _sb_os.O_APPEND
_SB_BLOCKED_EVENTS = {
    "os.remove": "deletes a file",
    "os.rmdir": "deletes a folder",
    "os.rename": "renames a file",
    "os.replace": "renames a file",
    "os.mkdir": "creates a folder",
    "os.symlink": "creates a link",
    "os.link": "creates a link",
    "os.truncate": "truncates a file",
    "os.chmod": "changes permissions",
    "os.chown": "changes ownership",
    "os.utime": "touches a file",
    "shutil.rmtree": "deletes a folder",
    "shutil.copyfile": "copies a file",
    "shutil.move": "moves a file",
    "os.system": "runs a shell command",
    "os.exec": "runs a program",
    "os.posix_spawn": "runs a program",
    "os.spawn": "runs a program",
    "os.forkpty": "runs a program",
    "os.fork": "forks a process",
    "os.kill": "signals a process",
    "subprocess.Popen": "runs a program",
    "socket.connect": "opens a network connection",
    "socket.bind": "listens on the network",
    "socket.sendto": "sends on the network",
    "socket.getaddrinfo": "resolves a host name",
    "urllib.Request": "opens a URL",
    "webbrowser.open": "opens a browser",
}


class _SandboxBlocked(BaseException):
    """BaseException, so a cell's ``except Exception`` cannot swallow it."""


class _SbStdin:
    """The child's ``sys.stdin``: reading it is waiting for a person, so it blocks the dry run."""

    def __init__(self, state):
        self._sb_state = state

    def _sb_block(self, *args, **kwargs):
        self._sb_state.setdefault("blocked", "reads from stdin (waits for a person)")
        raise _SandboxBlocked(self._sb_state["blocked"])

    read = readline = readlines = __next__ = _sb_block

    def __iter__(self):
        return self

    def isatty(self):
        return False

    def fileno(self):
        return 0


class _DryRunResult:
    def __init__(self, data):
        self._data = data

    def _repr_json_(self):
        return self._data

    def __repr__(self):
        return _sb_json.dumps(self._data)


def _sb_cuda_reason():
    torch = _sb_sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return "CUDA is initialised in the kernel (torch); a forked copy cannot use it"
    except Exception:
        pass
    tf_context = _sb_sys.modules.get("tensorflow.python.eager.context")
    try:
        ctx = getattr(tf_context, "_context", None)
        if ctx is not None and getattr(ctx, "_context_handle", None) is not None:
            config = _sb_sys.modules.get("tensorflow").config  # type: ignore[union-attr]
            if config.list_logical_devices("GPU"):
                return "a GPU is initialised in the kernel (TensorFlow); a forked copy cannot use it"
    except Exception:
        pass
    return None


def _sb_transform(source):
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        return shell.transform_cell(source), shell.user_ns
    return source, _sb_sys.modules["__main__"].__dict__


def _sb_isolate():
    """Everything the child does before running user code; failures here are not fatal."""
    devnull = _sb_os.open(_sb_os.devnull, _sb_os.O_RDWR)
    for fd in (0, 1, 2):
        _sb_os.dup2(devnull, fd)
    sink = open(_sb_os.devnull, "w")  # noqa: SIM115 - lives until the child exits
    _sb_sys.stdout = _sb_sys.stderr = sink
    setattr(_sb_sys, "__stdout__", sink)  # noqa: B010 - the originals are final for type checkers
    setattr(_sb_sys, "__stderr__", sink)  # noqa: B010
    _sb_sys.stdin = open(_sb_os.devnull)  # noqa: SIM115
    import gc

    gc.disable()  # keeps pages shared and never runs a __del__ that could touch zmq
    _sb_sys.dont_write_bytecode = True  # an import must not count as writing a file
    notes = []
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        notes.append("oom_score_adj unchanged")
    with _sb_contextlib.suppress(OSError):
        _sb_os.nice(10)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: die with the kernel
        # a new user + network namespace; else a network namespace alone; else the audit hook only
        if libc.unshare(0x10000000 | 0x40000000) != 0 and libc.unshare(0x40000000) != 0:
            notes.append("network namespace unavailable: network blocked by audit hook only")
    except Exception:
        notes.append("prctl/unshare unavailable")
    return notes


def _sb_mute_kernel(state):
    """Cut the child off the kernel's sockets: it holds copies of the parent's zmq sockets, and a
    ``display()``, a figure or a traceback shown by a magic would otherwise be sent on them (into the
    notebook) from a forked zmq context. Also turn stdin reads into ``blocked`` and remember exceptions
    that IPython *shows* instead of raising (``%time``, ``%%capture``...): the user sees those."""

    def _drop(*args, **kwargs):
        return None

    session = _sb_sys.modules.get("jupyter_client.session")
    if session is not None:
        session.Session.send = _drop
        session.Session.send_raw = _drop
    iostream = _sb_sys.modules.get("ipykernel.iostream")
    if iostream is not None:
        for name in ("IOPubThread", "BackgroundSocket"):
            cls = getattr(iostream, name, None)
            if cls is not None:
                cls.send_multipart = _drop
                cls.send = _drop
    zmq = _sb_sys.modules.get("zmq")
    if zmq is not None:
        for name in ("send", "send_multipart", "send_string", "send_json", "send_pyobj"):
            with _sb_contextlib.suppress(Exception):
                setattr(zmq.Socket, name, _drop)

    def _blocked_input(*args, **kwargs):
        state.setdefault("blocked", "reads from stdin (waits for a person)")
        raise _SandboxBlocked(state["blocked"])

    import builtins

    builtins.input = _blocked_input
    _sb_sys.stdin = _SbStdin(state)
    getpass = _sb_sys.modules.get("getpass")
    if getpass is not None:
        setattr(getpass, "getpass", _blocked_input)  # noqa: B010
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    with _sb_contextlib.suppress(Exception):
        shell.display_pub.publish = _drop
        shell.display_pub.clear_output = _drop
    with _sb_contextlib.suppress(Exception):
        shell.raw_input = _blocked_input
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        with _sb_contextlib.suppress(Exception):
            kernel.raw_input = _blocked_input
            kernel.getpass = _blocked_input

    def _shown(*args, **kwargs):
        # Only an error that a magic (``%time``, ``%%timeit``...) caught and showed: not, say, a display
        # formatter's error (a broken ``_repr_html_``), which IPython also shows while the cell goes on.
        exc = _sb_sys.exc_info()[1]
        if exc is None or isinstance(exc, _SandboxBlocked) or "shown" in state:
            return
        frame: Any = _sb_sys._getframe(1)
        line, files = None, []
        while frame is not None:
            name = frame.f_code.co_filename
            if name == _SB_FILENAME:
                line = frame.f_lineno
                break
            files.append(name.replace("\\", "/"))
            frame = frame.f_back
        in_magic = any("/IPython/core/magics/" in name for name in files)
        if in_magic and not any(name.endswith("/IPython/core/formatters.py") for name in files):
            state["shown"] = (exc, line)

    shell.showtraceback = _shown
    shell.showsyntaxerror = _shown


def _sb_hook_factory(state):
    def hook(event, args):
        if state.get("blocked"):
            return
        reason = None
        if event == "open":
            mode = args[1] if len(args) > 1 else None
            flags = args[2] if len(args) > 2 else 0
            path = args[0]
            writes_mode = isinstance(mode, str) and any(ch in mode for ch in "wax+")
            writes_flags = isinstance(flags, int) and flags & _SB_WRITE_FLAGS and str(path) != _sb_os.devnull
            if writes_mode or writes_flags:
                what = f"file descriptor {path}" if isinstance(path, int) else repr(path)
                reason = f"opens {what} for writing"
        elif event == "os.mkdir" and args and _sb_os.path.exists(args[0]):
            reason = None  # makedirs(..., exist_ok=True) on a folder that exists: fails, changes nothing
        else:  # one dict lookup per event: imports alone raise thousands of audit events
            reason = _SB_BLOCKED_EVENTS.get(event)
        if reason is not None:
            state["blocked"] = f"{reason} ({event})"
            raise _SandboxBlocked(state["blocked"])

    return hook


def _sb_cell_line(tb, cell_magic=False):
    """1-based line of the cell in a traceback: the last frame of the cell's own code, or, under a
    ``%%time``/``%%timeit`` cell magic, of the magic's body (which starts on the cell's line 2)."""
    line = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == _SB_FILENAME:
            line = tb.tb_lineno
        elif cell_magic and filename.startswith("<timed ") and tb.tb_lineno:
            line = tb.tb_lineno + 1
        tb = tb.tb_next
    return line


def _sb_private_dirty_kb():
    try:
        with open("/proc/self/smaps_rollup") as f:
            for row in f:
                if row.startswith("Private_Dirty:"):
                    return int(row.split()[1])
    except OSError:
        return None
    return None


def _sb_child(source, write_fd):
    started = _sb_time.perf_counter()
    result: dict[str, Any] = {"outcome": "completed", "exception": None, "message": None, "line": None}
    state: dict[str, Any] = {}
    try:
        result["notes"] = _sb_isolate()
        _sb_mute_kernel(state)
        code_text, namespace = _sb_transform(source)
        code = compile(code_text, _SB_FILENAME, "exec")
        _sb_sys.addaudithook(_sb_hook_factory(state))
        result["setup_s"] = round(_sb_time.perf_counter() - started, 4)
        try:
            exec(code, namespace)
        except _SandboxBlocked:
            pass
        except BaseException as exc:  # the cell's own exception is the observation
            result.update(
                outcome="raised",
                exception=type(exc).__name__,
                message=str(exc)[:500],
                line=_sb_cell_line(exc.__traceback__, source.lstrip().startswith("%%")),
            )
        if result["outcome"] == "completed" and "shown" in state:  # an error a magic showed, not raised
            shown, line = state["shown"]
            result.update(
                outcome="raised",
                exception=type(shown).__name__,
                message=str(shown)[:500],
                line=_sb_cell_line(shown.__traceback__, source.lstrip().startswith("%%")) or line,
            )
            result["notes"].append("the traceback was shown by IPython (e.g. in a magic); the cell went on")
        if state.get("blocked"):
            result.update(outcome="blocked", exception=None, message=state["blocked"], line=None)
    except BaseException as exc:  # a failure of the sandbox itself, not of the cell
        result.update(outcome="unsupported", message=f"sandbox failed: {type(exc).__name__}: {exc}")
    result["elapsed_s"] = round(_sb_time.perf_counter() - started, 4)
    result["child_private_dirty_kb"] = _sb_private_dirty_kb()
    try:
        data = _sb_json.dumps(result, default=str).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[_sb_os.write(write_fd, view) :]
    finally:
        _sb_os._exit(0)


def _sb_reap(pid):
    with _sb_contextlib.suppress(ChildProcessError):
        _sb_os.waitpid(pid, 0)


def _sb_wait(pid, read_fd, budget_s):
    """The child's answer (one JSON line), or timeout; the child is always reaped.

    The answer ends with a newline, so it is read as soon as it is written: waiting for EOF would
    wait for the child's exit, i.e. for the kernel to tear down the child's copy of the address space
    (tens of ms for a big kernel). After an answer the child is exiting on its own and is reaped by a
    short-lived thread; after a timeout it is killed and reaped here, before returning.
    """
    import select

    deadline = _sb_time.monotonic() + budget_s
    chunks = []
    outcome = None
    while True:
        left = deadline - _sb_time.monotonic()
        if left <= 0:
            outcome = "timeout"
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = _sb_os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    _sb_os.close(read_fd)
    if outcome == "timeout" or not chunks:
        with _sb_contextlib.suppress(ProcessLookupError):
            _sb_os.kill(pid, 9)
        _sb_reap(pid)  # no zombies
    else:
        done, _ = _sb_os.waitpid(pid, _sb_os.WNOHANG)
        if done == 0:
            import threading

            threading.Thread(target=_sb_reap, args=(pid,), name="crane-dryrun-reaper", daemon=True).start()
    if outcome == "timeout":
        return {"outcome": "timeout", "message": f"still running after {budget_s} s; killed"}
    try:
        return _sb_json.loads(b"".join(chunks).decode())
    except ValueError:
        return {"outcome": "unsupported", "message": "the sandboxed copy died without an answer"}


def dry_run(payload_json):
    """Run ``payload['source']`` in a forked copy of this kernel for at most ``budget_s`` seconds."""
    payload = _sb_json.loads(payload_json)
    budget = float(payload.get("budget_s", 3.0))
    started = _sb_time.perf_counter()
    if not hasattr(_sb_os, "fork"):
        return _DryRunResult({"outcome": "unsupported", "message": "this platform has no fork()"})
    reason = _sb_cuda_reason()
    if reason:
        return _DryRunResult({"outcome": "unsupported", "message": reason})
    read_fd, write_fd = _sb_os.pipe()
    import warnings

    forking = _sb_time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fork() in a multi-threaded process" is expected here
        pid = _sb_os.fork()
    if pid == 0:
        _sb_os.close(read_fd)
        _sb_child(payload["source"], write_fd)
    forked = _sb_time.perf_counter()
    _sb_os.close(write_fd)
    result = _sb_wait(pid, read_fd, budget)
    result["fork_s"] = round(forked - forking, 4)
    result["round_trip_s"] = round(_sb_time.perf_counter() - started, 4)
    result["child_pid"] = pid
    return _DryRunResult(result)
