"""Kernel-side dry run: STANDARD LIBRARY ONLY, joined after the probe and the jail modules.

``dry_run(payload_json)`` (in ``dryrun_warm.py``, which also prepares a child ahead) transforms and
compiles the cell; without a prepared child, ``_sb_cold`` forecasts the seccomp filter and forks
the kernel process. The child shares the parent's memory copy-on-write; before any user code it
confines itself (``jail_fds``: inherited descriptors replaced; ``jail_maps``: shared mappings made
private; ``jail_threads``: native pools at one thread; ``jail_landlock``; ``jail_seccomp``, whose
listener it hands to the parent), then runs the cell against ITS copy of the namespace and answers
over a pipe. The parent polls the answer and the listener until the budget: the first syscall the
filter parks ends the run as ``blocked``. It kills the child's process group, reaps it, and returns
the outcome: raised / completed / timeout / blocked / exits (the cell ends the kernel) /
unavailable (the jail cannot be built here: nothing ran).
"""

import contextlib as _sb_contextlib
import json as _sb_json
import os as _sb_os
import sys as _sb_sys
import time as _sb_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the jail modules joined before this one
    from crane_lsp.kernel.agent.dryrun.copies import _cp_died, _CpCopy
    from crane_lsp.kernel.agent.dryrun.dryrun_timeit import _dti_run_once
    from crane_lsp.kernel.agent.dryrun.failfacts import _ff_collect
    from crane_lsp.kernel.agent.dryrun.failkeywords import _fkw_add
    from crane_lsp.kernel.agent.dryrun.preview import _pv_execute
    from crane_lsp.kernel.agent.dryrun.refusal import _frm_refusal
    from crane_lsp.kernel.agent.dryrun.standin import _sti_needed, _StiNoVerdict
    from crane_lsp.kernel.agent.dryrun.standins import _sta_begin, _sta_fences_devices
    from crane_lsp.kernel.agent.guard import _JSONResult, _SandboxBlocked
    from crane_lsp.kernel.agent.jail.jail_answers import _jan_errnos, _jan_listen, _jan_settle, _JanLog
    from crane_lsp.kernel.agent.jail.jail_fds import _jfd_classify, _jfd_expected, _jfd_neutralise
    from crane_lsp.kernel.agent.jail.jail_landlock import _jll_libc, _jll_restrict
    from crane_lsp.kernel.agent.jail.jail_maps import (
        _JMP_FENCED,
        _jmp_libc,
        _jmp_privatise,
        _jmp_seen_own_work,
        _JmpRefused,
    )
    from crane_lsp.kernel.agent.jail.jail_seccomp import (
        _JSC_RET_KILL_PROCESS,
        _JSC_RET_USER_NOTIF,
        _jsc_build,
        _jsc_check_platform,
        _jsc_for_pid,
        _jsc_install,
        _jsc_libc,
        _jsc_prepare,
        _jsc_probe_listener,
        _JscUnavailable,
    )
    from crane_lsp.kernel.agent.jail.jail_threads import _jth_single_thread
    from crane_lsp.kernel.agent.jail.jail_workers import _jwk_report, _jwk_single_process
    from crane_lsp.kernel.agent.jail.jail_writes import _jwr_begin, _jwr_files, _jwr_report
    from crane_lsp.kernel.agent.shorten.shorten_extrapolate import _shx_extrapolate
    from crane_lsp.kernel.agent.shorten.shorten_report import (
        _shp_report_shortened,
        _shp_report_where,
        _shp_stop_reports,
    )
    from crane_lsp.kernel.agent.shorten.shorten_sample import _shs_failure_facts, _shs_sample

_SB_FILENAME = "<crane-dryrun>"


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


class _DryRunResult(_JSONResult):
    """The verdict as ``application/json``; its text form is the JSON too (a fallback for the client)."""

    def __repr__(self):
        return _sb_json.dumps(self._data)


def _sb_shell():
    ipython = _sb_sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _sb_transform(source):
    shell = _sb_shell()
    if shell is not None and _sb_plain_long(source, shell) and _sb_plain_code(source, 0x400) is not None:
        return source, shell.user_ns  # PyCF_ONLY_AST: a parse is enough to know it is plain Python
    if shell is not None:
        return shell.transform_cell(source), shell.user_ns
    return source, _sb_sys.modules["__main__"].__dict__


def _sb_plain_long(source, shell):
    """A long cell with no blank first line, in a shell with no extension's transformer: if it already
    compiles as Python, IPython's transform would leave it as it is, and its token passes cost seconds
    on thousands of lines (issue 24: long cells are dry-run like any other)."""
    return (
        source.count("\n") >= 500
        and bool(source[:1].strip())
        and not getattr(shell, "input_transformers_post", None)
    )


def _sb_plain_code(source, flags=0):
    """``source`` compiled as plain Python (top-level await allowed), or None when it is not."""
    try:
        return compile(source, _SB_FILENAME, "exec", 0x2000 | flags)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    except (SyntaxError, ValueError):
        return None


def _sb_limits(payload):
    """Process-level limits before anything else: own process group, dies with the kernel, no core
    file, first for the OOM killer, address space capped (``memory_mb`` above the kernel's); the
    cell itself runs niced."""
    import resource

    notes = []
    _sb_os.setpgid(0, 0)  # killpg at the budget reaches everything the child is
    try:
        _jsc_libc().prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: die with the kernel
    except Exception:
        notes.append("PR_SET_PDEATHSIG unavailable")
    if _sb_os.getppid() != payload["_parent"]:
        _sb_os._exit(0)  # the kernel died before the death signal was armed
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # core_pattern may write a file in the cwd
    try:  # os-level reads and writes: Python's text files cost the copy-on-write child more
        _sb_write_file("/proc/self/oom_score_adj", b"1000")
    except OSError:
        notes.append("oom_score_adj unchanged")
    extra = int(payload.get("memory_mb", 4096)) * 1024 * 1024
    try:
        status = _sb_read_file("/proc/self/status")
        at = status.index(b"VmSize:") + 7
        size = int(status[at : status.index(b"kB", at)]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))
    except (OSError, ValueError):
        notes.append("memory cap unavailable")
    if payload.get("_nice"):  # a shortened run beside a full one: the full run keeps the CPU (shorten.py)
        with _sb_contextlib.suppress(OSError):
            _sb_os.nice(int(payload["_nice"]))
    _jwr_begin(payload)  # files the cell writes are kept in memory, capped (jail_writes.py)
    return notes


def _sb_write_file(path, data):
    fd = _sb_os.open(path, _sb_os.O_WRONLY | _sb_os.O_CLOEXEC)
    try:
        _sb_os.write(fd, data)
    finally:
        _sb_os.close(fd)


def _sb_read_file(path):
    fd = _sb_os.open(path, _sb_os.O_RDONLY | _sb_os.O_CLOEXEC)
    try:
        return _sb_os.read(fd, 65536)
    finally:
        _sb_os.close(fd)


def _sb_python_streams():
    """Python-level streams on /dev/null (the descriptors themselves are replaced by jail_fds)."""
    sink = open(_sb_os.devnull, "w")  # noqa: SIM115 - lives until the child exits
    _sb_sys.stdout = _sb_sys.stderr = sink
    setattr(_sb_sys, "__stdout__", sink)  # noqa: B010 - the originals are final for type checkers
    setattr(_sb_sys, "__stderr__", sink)  # noqa: B010
    import gc

    gc.disable()  # keeps pages shared and never runs a __del__ that could touch zmq
    _sb_sys.dont_write_bytecode = True


def _sb_confine(handover_fd, keep, timings, prepared=None):
    """The jail, before any user code: descriptors, shared mappings, thread pools, Landlock, seccomp.
    Raises ``_JscUnavailable``/``_JmpRefused`` when the child cannot be confined (it then runs nothing)."""
    import socket

    reason = _jsc_check_platform()
    if reason:
        raise _JscUnavailable(reason)
    notes = []
    clock = _sb_time.process_time  # CPU: on a loaded machine wall time says little
    t0 = clock()
    fds = _jfd_neutralise(keep | {handover_fd})
    notes.extend(fds.notes)
    t1 = clock()
    _jmp_privatise(fence_devices=_sta_fences_devices())
    if _JMP_FENCED:
        paths = sorted({path for _start, _end, path in _JMP_FENCED})
        notes.append("device mappings fenced off (a shape-level run): " + ", ".join(paths))
    t2 = clock()
    threads = _jth_single_thread()  # the loader asked here, where no other thread can hold the GIL
    t3 = clock()
    if threads:
        notes.append("thread pools set to one thread: " + ", ".join(sorted(set(threads))))
    _jwk_single_process()  # worker processes: a single-process world (jail_workers.py)
    listener = _jsc_probe_listener()
    notify = _JSC_RET_USER_NOTIF if listener else _JSC_RET_KILL_PROCESS
    pinned = [*fds.pinned, handover_fd, *keep]  # the verdict pipe cannot be closed either
    key = (notify, tuple(fds.shared), tuple(fds.written), tuple(sorted(pinned)), handover_fd)
    if prepared is not None and prepared[0] == key:  # the kernel's forecast held: patch the pid in
        program = _jsc_for_pid(prepared[1], _sb_os.getpid())
        timings["forecast"] = 1.0
    else:
        program = _jsc_build(_sb_os.getpid(), notify, fds.shared, fds.written, pinned, handover_fd)
    if _jsc_libc().prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, needed by Landlock too
        raise _JscUnavailable("PR_SET_NO_NEW_PRIVS failed")
    t4 = clock()
    abi = _jll_restrict()
    notes.append(f"landlock ABI {abi}" if abi else "landlock unavailable: seccomp only")
    t5 = clock()
    with _sb_contextlib.suppress(OSError):
        _sb_os.nice(10)  # the cell yields the CPU to everything else (the filter forbids it later)
    fd = _jsc_install(program, listener)
    channel = socket.socket(fileno=handover_fd)
    try:
        if fd >= 0:
            socket.send_fds(channel, [b"L"], [fd])
            _sb_os.close(fd)
        else:
            channel.send(b"K")  # no user notification here: a blocked syscall kills the child
    finally:
        channel.detach()  # the number stays pinned (close() pretends), its peer closes
    t6 = clock()
    for name, a, b in (("fds", t0, t1), ("maps", t1, t2), ("threads", t2, t3), ("filter", t3, t4),
                       ("landlock", t4, t5), ("seccomp", t5, t6)):  # fmt: skip
        timings[name] = round((b - a) * 1000, 2)
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


def _sb_cell_line(tb, cell_magic=False):
    """1-based line of the cell in a traceback: the last frame of the cell's own code, or, under a
    ``%%time``/``%%timeit`` cell magic, of the magic's body (which starts on the cell's line 2)."""
    line = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == _SB_FILENAME:
            line = tb.tb_lineno
        elif cell_magic and filename.startswith(("<timed ", "<magic-timeit>")) and tb.tb_lineno:
            line = tb.tb_lineno + 1
        tb = tb.tb_next
    return line


def _sb_private_dirty_kb():
    try:
        rollup = _sb_read_file("/proc/self/smaps_rollup")
        at = rollup.index(b"Private_Dirty:") + 14
        return int(rollup[at : rollup.index(b"kB", at)])
    except (OSError, ValueError):
        return None


def _sb_exit_outcome(shell):
    """``exit()``/``quit()`` in a kernel asks it to shut down after the cell (IPython's exit_now)."""
    if shell is not None and getattr(shell, "exit_now", False):
        return {"outcome": "exits", "message": "exit() shuts the kernel down: all its state is lost"}
    return None


def _sb_tf_started():
    """Whether the kernel started TensorFlow's runtime: a compiled function fed by ``tf.data`` (a Keras
    ``fit`` on arrays) may then wait forever in a fork for thread pools that stayed in the kernel. The
    full run keeps TensorFlow as the kernel has it (eager Keras is slower, and most compiled calls do
    run); the shortened runs run eagerly (shorten_sample.py), and a full run that does not finish says
    why it may not have (shorten.py)."""
    context = _sb_sys.modules.get("tensorflow.python.eager.context")
    try:
        return bool(context is not None and context.context()._initialized)
    except Exception:
        return False


def _sb_mark(phases, name, begun):
    """Wall milliseconds since the fork began (CLOCK_MONOTONIC is the same in both processes)."""
    phases[name] = round((_sb_time.monotonic() - begun) * 1000, 2)


def _sb_setup(payload, write_fd, handover_fd, keep=()):
    """The child's first steps, before any user code: limits, muted kernel sockets, the jail (the
    descriptors in ``keep`` stay, pinned). Answers ``unavailable`` and exits when it cannot be
    confined; else returns ``(started, result, state, shell)`` for ``_sb_run``."""
    started = _sb_time.perf_counter()
    begun = payload["_begun"]
    result: dict[str, Any] = {"outcome": "completed", "exception": None, "message": None, "line": None}
    phases: dict[str, float] = {}
    result["phases_ms"] = phases
    _sb_mark(phases, "child_start", begun)
    result["_measure_memory"] = bool(payload.get("measure_memory"))
    state: dict[str, Any] = {}
    shell = None
    try:
        notes = _sb_limits(payload)
        _sb_mark(phases, "limits", begun)
        _sb_python_streams()
        _sb_mute_kernel(state)
        _dti_run_once()  # %timeit runs its statement once: the verdict is about crashing
        _sb_mark(phases, "muted", begun)
        ipython = _sb_sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        result["jail_ms"] = timings = {"before": round(_sb_time.process_time() * 1000, 2)}
        notes.extend(_sb_confine(handover_fd, {write_fd, *keep}, timings, payload.get("_filter")))
        result["notes"] = notes
        result["setup_s"] = round(_sb_time.perf_counter() - started, 4)
        result["setup_cpu_s"] = round(_sb_time.process_time(), 4)  # the child's CPU clock starts at the fork
        _sb_mark(phases, "confined", begun)
    except (_JscUnavailable, _JmpRefused) as exc:
        result.update(outcome="unavailable", message=str(exc))
        _sb_answer(write_fd, result, started, begun)
    except BaseException as exc:  # a failure of the sandbox itself, not of the cell: nothing ran
        result.update(outcome="unavailable", message=f"the jail failed: {type(exc).__name__}: {exc}")
        _sb_answer(write_fd, result, started, begun)
    return started, result, state, shell


def _sb_child(payload, write_fd, handover_fd):
    started, result, state, shell = _sb_setup(payload, write_fd, handover_fd)
    code, namespace = payload["_compiled"]
    _sb_run(code, namespace, payload, (result, state, shell), write_fd, started)


def _sb_run(code, namespace, payload, setup, write_fd, started):
    """Run the cell (the child is confined) and answer its verdict; never returns."""
    result, state, shell = setup
    begun = payload["_begun"]
    cell_magic = bool(payload.get("_cell_magic"))
    try:
        if payload.get("_shorten"):  # a shortened run: the fork's copy of the data sampled (shorten.py)
            result["shortened"] = _shs_sample(namespace, code, payload["_shorten"], state)
            _shp_report_shortened(write_fd, result["shortened"])  # said now, in case the run hangs
        if payload.get("_report_where") is not None and not payload.get("_shorten"):  # where the full run is
            _shp_report_where(write_fd, float(payload["_report_where"]))
        mode = _sb_standin(namespace, code, payload, result, write_fd, started)
        with mode or _sb_contextlib.nullcontext():
            _pv_execute(code, namespace, payload, result)  # a preview captures around it (preview.py)
    except (_SandboxBlocked, _StiNoVerdict):
        pass
    except MemoryError:
        state["blocked"] = f"needs more memory than the dry run allows ({payload.get('memory_mb', 4096)} MiB)"
    except BaseException as exc:  # the cell's own exception is the observation
        result.update(
            outcome="raised",
            exception=type(exc).__name__,
            message=str(exc)[:500],
            line=_sb_cell_line(exc.__traceback__, cell_magic),
            errnos=_jan_errnos(exc),  # where a call the jail answered shows up (jail_answers.py)
            files=_jwr_files(exc),  # which files it is about (jail_writes.py)
        )
        result["facts"] = _ff_collect(exc, payload, started)  # the failing line's facts (failfacts.py)
        _fkw_add(result["facts"], exc, payload)  # keywords the callee lacks (failkeywords.py)
        if "shortened" in result:  # does it hinge on the sample? (shorten_sample.py)
            result["shortened"]["failure"] = _shs_failure_facts(exc)
            # the failing operation again at the full size, on shapes (shorten_extrapolate.py)
            text = _sb_transform(payload["source"])[0]
            extrapolated = _shx_extrapolate(exc, text, result["shortened"])
            result["shortened"]["extrapolated"] = extrapolated
    _jwk_report(result)  # the single-process worlds the cell was given (jail_workers.py)
    _jwr_report(result)  # kept files it read back by name (jail_writes.py)
    if result["outcome"] == "completed" and "shown" in state:  # an error a magic showed, not raised
        shown, line = state["shown"]
        result.update(
            outcome="raised",
            exception=type(shown).__name__,
            message=str(shown)[:500],
            line=_sb_cell_line(shown.__traceback__, cell_magic) or line,
            errnos=_jan_errnos(shown),
            files=_jwr_files(shown),
        )
        result["notes"].append("the traceback was shown by IPython (e.g. in a magic); the cell went on")
    if result["outcome"] == "completed":
        result.update(_sb_exit_outcome(shell) or {})
    if result["outcome"] == "completed" and payload.get("expect_bound"):  # a fix may not do less
        result["unbound"] = [name for name in payload["expect_bound"] if name not in namespace][:50]
    needs = _sti_needed()  # values a shape-level run cannot have: no verdict, even if swallowed
    if needs and result["outcome"] in ("completed", "raised"):
        result.update(outcome="no_verdict", exception=None, message=needs[0], line=needs[1])
        result.pop("facts", None)
    if result["outcome"] == "raised" and not state.get("blocked"):
        seen = _jmp_seen_own_work()  # the file behind a privatised mapping read back (jail_maps.py)
        if seen:
            state["blocked"] = f"it raised {result['exception']} after {seen}"
    if state.get("blocked"):
        result.update(outcome="blocked", exception=None, message=state["blocked"], line=None)
    _sb_mark(result["phases_ms"], "cell_end", begun)
    _sb_answer(write_fd, result, started, begun)


def _sb_standin(namespace, code, payload, result, write_fd, started):
    """The shape-level run's stand-ins before the cell (standins.py), or None; a stand-in that fails
    answers ``unavailable`` (the cell would reach the GPU). Returns the context entered around the cell."""
    try:
        begun = _sta_begin(namespace, code, payload)
    except Exception as exc:
        result.update(outcome="unavailable", message=f"cannot stand tensors in: {type(exc).__name__}: {exc}")
        _sb_answer(write_fd, result, started, payload["_begun"])
    if begun is None:
        return None
    result["standin"], notes, mode = begun
    result.setdefault("notes", []).extend(notes)
    return mode


def _sb_answer(write_fd, result, started, begun):
    _shp_stop_reports()  # no report of the line may land inside or after the answer
    result["elapsed_s"] = round(_sb_time.perf_counter() - started, 4)
    result["child_cpu_s"] = round(_sb_time.process_time(), 4)
    if result.pop("_measure_memory", False):  # costs 10-25 ms in a big kernel: only when asked
        result["child_private_dirty_kb"] = _sb_private_dirty_kb()
    _sb_mark(result["phases_ms"], "answer", begun)
    try:
        data = _sb_json.dumps(result, default=str).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[_sb_os.write(write_fd, view) :]
    finally:
        _sb_os._exit(0)


def _sb_wait(proc, read_fd, handover, budget_s, started, phases, deadline=None, cancel_fd=-1, where=None):
    """Poll the child's answer, its handover socket and then its seccomp listener until the budget.

    The answer ends with a newline, so it is read as soon as it is written (waiting for EOF would
    wait for the kernel to tear down the child's address space). Whatever happens the child's whole
    process group is killed and the child reaped (after an answer by a short-lived thread).
    ``started`` is the clock of ``phases``; the budget runs from ``deadline - budget_s`` (default:
    ``started``).
    """
    import select
    import socket

    if deadline is None:
        deadline = started + budget_s
    poller = select.poll()
    poller.register(read_fd, select.POLLIN)
    poller.register(handover.fileno(), select.POLLIN)
    if cancel_fd >= 0:  # readable: another run's verdict supersedes this one (shorten.py)
        poller.register(cancel_fd, select.POLLIN)
    chunks: list[bytes] = []
    pending = b""  # a report not read whole yet
    listener = -1
    kill_mode = False
    verdict = None
    answered = _JanLog()  # calls the jail answered without running them (``jail_answers``)
    while verdict is None:
        left = deadline - _sb_time.monotonic()
        if left <= 0:
            verdict = {"outcome": "timeout", "message": f"did not finish in {budget_s:g} s"}
            break
        for fd, events in poller.poll(max(1, int(left * 1000))):
            if fd == listener and events & select.POLLIN:
                blocked = _jan_listen(listener, answered)
                if blocked is None:
                    continue
                verdict = {"outcome": "blocked", "message": blocked}
                break
            if fd == cancel_fd:
                verdict = {"outcome": "superseded", "message": "another run answered first"}
                break
            if fd == handover.fileno():
                poller.unregister(fd)
                with _sb_contextlib.suppress(OSError):
                    message, fds, _flags, _addr = socket.recv_fds(handover, 16, 1)
                    kill_mode = message == b"K"
                    if fds:
                        listener = fds[0]
                        poller.register(listener, select.POLLIN)
                _sb_mark(phases, "handover", started)
            elif fd == read_fd:
                chunk = _sb_os.read(read_fd, 65536)
                if chunk and not chunks:  # reports (shorten.py) come before the answer
                    chunk = _sb_where_reports(pending + chunk, where)
                    pending = chunk if chunk[:1] in (b"\x01", b"\x02") else b""
                    if not chunk or pending:
                        continue
                chunks.append(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    verdict = {}
                    break
    _sb_mark(phases, "verdict_read", started)
    complete = bool(chunks) and chunks[-1].endswith(b"\n")
    proc.kill()  # also after an answer: the group goes now, whatever the child does next
    _sb_os.close(read_fd)
    handover.close()
    status = None
    if verdict or not complete:
        status = proc.reap()  # no zombies, no survivors
    else:  # reaped off the answer's path
        proc.reap_later()
    if listener >= 0:
        _sb_os.close(listener)
    _sb_mark(phases, "reaped", started)
    if verdict:
        return _jan_settle(verdict, answered)
    if not complete:
        return _jan_settle(_cp_died(status, kill_mode, _sta_fences_devices()), answered)
    try:
        return _jan_settle(_sb_json.loads(b"".join(chunks).decode()), answered)
    except ValueError:
        return {"outcome": "unavailable", "message": "the sandboxed copy answered garbage"}


def _sb_where_reports(chunk, where):
    """``chunk`` without its leading reports, each noted in ``where`` (shorten.py): the line the full
    run is on (``\\x01`` + six digits), what a shortened run shortened (``\\x02`` + six digits of
    length + JSON). What is left of a report not yet read whole is returned as it is."""
    while chunk[:1] in (b"\x01", b"\x02"):
        if chunk[:1] == b"\x01":
            if len(chunk) < 7:
                return chunk
            with _sb_contextlib.suppress(ValueError):
                if where is not None:
                    where["line"] = int(chunk[1:7])
            chunk = chunk[7:]
            continue
        try:
            size = int(chunk[1:7])
        except ValueError:
            return chunk[1:]  # not a report: let the answer's parser say so
        if len(chunk) < 7 + size:
            return chunk
        with _sb_contextlib.suppress(ValueError):
            if where is not None:
                where["shortened"] = _sb_json.loads(chunk[7 : 7 + size])
        chunk = chunk[7 + size :]
    return chunk


def _sb_forecast_filter(keep, handover_fd, closed_in_child):
    """The seccomp filter the child will need, built here before the fork from this process's
    descriptors (the child's are the same), or None; the child checks the forecast and rebuilds
    it when a descriptor changed in between."""
    try:
        notify = _JSC_RET_USER_NOTIF if _jsc_probe_listener() else _JSC_RET_KILL_PROCESS
        shared, written = _jfd_expected(_jfd_classify(keep | {handover_fd} | closed_in_child))
        pinned = [*shared, *written, handover_fd, *keep]
        return _jsc_prepare(notify, shared, written, pinned, handover_fd)
    except Exception:
        return None


def _sb_async_mode():
    """Whether the kernel runs cells inside an event loop (ipykernel 6+: ``asyncio.run`` fails)."""
    asyncio = _sb_sys.modules.get("asyncio")
    try:
        return asyncio is not None and asyncio._get_running_loop() is not None
    except Exception:
        return False


def _sb_refusal(source=""):
    """Why no fork of this kernel may run ``source`` here (the same reasons for a prepared child)."""
    if not hasattr(_sb_os, "fork"):
        return "this platform has no fork()"
    return _frm_refusal(source) or _jsc_check_platform()


def _sb_compile(payload):
    """The cell transformed (magics, ``!cmd``) and compiled in the kernel: ``(code, namespace)``,
    or the verdict when it cannot even start (a SyntaxError, as the real run)."""
    try:
        shell = _sb_shell()
        source = payload["source"]
        code = _sb_plain_code(source) if shell is not None and _sb_plain_long(source, shell) else None
        if code is not None:  # one compile, no transform (see ``_sb_plain_long``)
            namespace = shell.user_ns
        else:
            code_text, namespace = _sb_transform(source)
            code = compile(code_text, _SB_FILENAME, "exec", 0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    except SyntaxError as exc:  # as the real run: the cell does not even start
        raised = {"outcome": "raised", "exception": type(exc).__name__, "message": str(exc)[:500]}
        return {**raised, "line": exc.lineno}
    except Exception as exc:
        return {"outcome": "unavailable", "message": f"cannot transform the cell: {exc}"}
    payload["async_mode"] = _sb_async_mode()
    payload["_cell_magic"] = payload["source"].lstrip().startswith("%%")
    return code, namespace


def _sb_fork_setup(keep_in_child, closed_in_child, handover_fd):
    """Before a fork: the filter forecast and libc handles made once here. Not the thread pools:
    the loader is asked about them only in the child, alone in its process (``_jth_pools``)."""
    forecast = _sb_forecast_filter(keep_in_child, handover_fd, closed_in_child)
    with _sb_contextlib.suppress(Exception):
        _jsc_libc(), _jmp_libc(), _jll_libc()  # made once here, not in every child
    return forecast


def _sb_fork():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fork() in a multi-threaded process" is expected here
        return _sb_os.fork()


def _sb_cold(payload, started, compiled):
    """A fresh fork for this one dry run (no prepared child could serve it)."""
    import socket

    budget = float(payload.get("budget_s", 3.0))
    payload["_parent"] = _sb_os.getpid()
    payload["_compiled"] = compiled
    read_fd, write_fd = _sb_os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    payload["_filter"] = _sb_fork_setup({write_fd}, {read_fd}, theirs.fileno())
    forking = _sb_time.perf_counter()
    begun = payload["_begun"] = _sb_time.monotonic()
    prepared_ms = round((forking - started) * 1000, 2)
    pid = _sb_fork()
    if pid == 0:
        _sb_os.close(read_fd)
        ours.detach()
        _sb_child(payload, write_fd, theirs.detach())
    forked = _sb_time.perf_counter()
    parent_phases = {"called": -prepared_ms}  # dry_run() entered, before the fork
    _sb_mark(parent_phases, "forked", begun)
    with _sb_contextlib.suppress(OSError):
        _sb_os.setpgid(pid, pid)  # also here: killpg must work even before the child ran
    _sb_os.close(write_fd)
    theirs.close()
    proc = _CpCopy(pid)
    try:
        cancel = payload.get("_cancel_fd", -1)  # a shortened run's verdict may supersede it (shorten.py)
        where = payload.get("_where")  # the line the full run is on, for the shortened runs (shorten.py)
        result = _sb_wait(proc, read_fd, ours, budget, begun, parent_phases, None, cancel, where)
    except BaseException:  # an interrupt of the kernel while waiting: the child must not outlive it
        proc.kill()
        proc.reap()
        raise
    result["fork_s"] = round(forked - forking, 4)
    return _sb_finish(result, started, begun, parent_phases, pid, budget, prepared=False)


def _sb_finish(result, started, begun, parent_phases, pid, budget, prepared):
    """The verdict with the parent's phases (one clock: ms since the child's fork) and the path."""
    result["round_trip_s"] = round(_sb_time.perf_counter() - started, 4)
    _sb_mark(parent_phases, "returned", begun)
    result["phases_ms"] = {**result.get("phases_ms", {}), **parent_phases}
    result["child_pid"] = pid
    result["budget_s"] = budget
    result["prepared"] = prepared
    return _DryRunResult(result)
