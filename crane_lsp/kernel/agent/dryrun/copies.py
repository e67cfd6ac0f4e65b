"""A dry run's forked copy as the kernel holds it: STANDARD LIBRARY ONLY, joined before ``dryrun.py``.

The copy is killed with its whole process group and reaped by its pid (nothing else reaps it, so the
pid cannot be reused before the kill). The kernel's own thread waits for a killed copy at most
``_CP_REAP_WAIT_S``: a copy dies within milliseconds of SIGKILL, but one stuck in the Linux kernel
(a page fault under memory pressure, a core dump) must never hold the user's kernel; a bare thread
then reaps it whenever it ends, and the verdict says the copy did not end. (Not a reaper thread
from the fork on, as the prepared child has: that one is signalled through a pidfd, while a cold copy
is killed with its process group by pid, which must not be reaped, and so reused, before the kill.)
"""

import contextlib as _cp_contextlib
import os as _cp_os
import time as _cp_time

_CP_REAP_WAIT_S = 10.0  # how long the kernel's thread waits for a killed copy to end
_CP_STUCK = -1  # "wait status" of a copy that had not ended when the kernel stopped waiting


def _cp_wait_status(pid):
    """Wait for ``pid`` as long as it takes (in a bare thread only): its wait status, or None."""
    with _cp_contextlib.suppress(ChildProcessError):
        return _cp_os.waitpid(pid, 0)[1]
    return None


def _cp_reap(pid, wait_s=None):
    """The wait status of ``pid`` (just killed), None if it was reaped already, ``_CP_STUCK`` if it
    had not ended after ``wait_s`` (default ``_CP_REAP_WAIT_S``): a bare thread reaps it later."""
    deadline = _cp_time.monotonic() + (_CP_REAP_WAIT_S if wait_s is None else wait_s)
    pause = 0.0005
    while True:
        try:
            pid_done, status = _cp_os.waitpid(pid, _cp_os.WNOHANG)
        except ChildProcessError:
            return None
        if pid_done:
            return status
        if _cp_time.monotonic() >= deadline:
            _cp_reap_later(pid)
            return _CP_STUCK
        _cp_time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _cp_reap_later(pid):
    import _thread  # a bare thread, as Thread.start() waits until it runs

    _thread.start_new_thread(_cp_wait_status, (pid,))


def _cp_kill(pid):
    for kill in (_cp_os.killpg, _cp_os.kill):
        with _cp_contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, 9)


class _CpCopy:
    """A child forked for one dry run: killed with its process group, reaped by pid."""

    def __init__(self, pid):
        self.pid = pid

    def kill(self):
        _cp_kill(self.pid)

    def reap(self):
        return _cp_reap(self.pid)

    def reap_later(self):
        _cp_reap_later(self.pid)


def _cp_died(status, kill_mode, fenced=False):
    """The outcome of a child that ended without an answer, from its wait status. ``fenced``: the
    child's device mappings were fenced off, so a memory fault may be the fence's, not the cell's."""
    import signal

    if status is None:
        return {"outcome": "unavailable", "message": "the sandboxed copy vanished"}
    if status == _CP_STUCK:
        message = f"the sandboxed copy did not end within {_CP_REAP_WAIT_S:g} s of being killed"
        return {"outcome": "unavailable", "message": message}
    if _cp_os.WIFSIGNALED(status):
        sig = _cp_os.WTERMSIG(status)
        if sig == signal.SIGSYS and kill_mode:
            return {"outcome": "blocked", "message": "a forbidden system call (the child was killed)"}
        if fenced and sig in (signal.SIGSEGV, signal.SIGBUS):
            message = "the copy reached the GPU's memory, which a shape-level run fences off"
            return {"outcome": "unavailable", "message": message}
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return {"outcome": "exits", "message": f"the cell kills the kernel process ({name})"}
    code = _cp_os.WEXITSTATUS(status) if _cp_os.WIFEXITED(status) else None
    return {"outcome": "exits", "message": f"the cell ends the kernel process (os._exit({code}))"}
