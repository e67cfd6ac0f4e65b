"""Named POSIX semaphores kept in the dry run's copy. STANDARD LIBRARY ONLY.

Joined after ``jail_seccomp`` and before ``jail_answers`` (whose rule table names these; this
module uses none of its names) into the probe's private module:
top-level names carry ``_jse_``.

``multiprocessing`` builds every ``Lock``, ``Queue`` and ``ThreadPool`` on named semaphores: glibc's
``sem_open`` creates ``/dev/shm/sem.XXXXXX``, writes the semaphore into it, maps it, ``link``s it
to its name and unlinks the temporary name; Python unlinks the name at once. None of that may
reach /dev/shm, so the parent answers each step without running it: the temporary file is a
``memfd`` it injects as the open's result (``SECCOMP_IOCTL_NOTIF_ADDFD``; anonymous memory the copy
alone holds), and the ``link``/``unlink`` of names the copy made this way succeed without touching
the folder. The semaphore works as the real one in the copy, which is one process, so a crash is
the cell's. joblib's import probe (``sem.joblib-*``) is still refused with EACCES, so joblib runs
serially in the copy (its workers would be processes, which the jail stops).
"""

import os as _jse_os
import re as _jse_re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from jail_seccomp, joined before
    from crane_lsp.kernel.agent.jail.jail_seccomp import _jsc_addfd, _jsc_path

_JSE_KEPT = "kept in the copy"
_JSE_FALLBACK = "handled fallback"  # jail_answers' rule class of the same name (_JSE_FALLBACK)
_JSE_INJECT = -1  # the answer is a memfd, not an errno
_JSE_TEMP = _jse_re.compile(r"^/dev/shm/sem\.[A-Za-z0-9]{6}$")  # glibc's temporary name
_JSE_ADDFD_SEND = 2  # SECCOMP_ADDFD_FLAG_SEND: the new descriptor is the call's result (Linux 5.14)


def _jse_create(pid, name, args, log):
    """``sem_open``'s temporary file (``O_RDWR|O_CREAT|O_EXCL``): a memfd of the copy's own."""
    at, flags = (0, args[1]) if name == "open" else (1, args[2])
    path = _jsc_path(pid, args[at])
    if path is None or not _JSE_TEMP.match(path) or flags & 0o3 != 0o2 or flags & 0o300 != 0o300:
        return None
    log.semaphores.add(path)
    return _JSE_INJECT, _JSE_KEPT, ""


def _jse_link(pid, name, args, log):
    """``link`` of a temporary file made above to its semaphore name: done, in the copy only."""
    old, new = (args[0], args[1]) if name == "link" else (args[1], args[3])
    source, target = _jsc_path(pid, old), _jsc_path(pid, new)
    if source not in log.semaphores or target is None or not target.startswith("/dev/shm/sem."):
        return None
    if target.startswith("/dev/shm/sem.joblib-"):  # joblib's probe: it runs serially without one
        return 13, _JSE_FALLBACK, f"sem_open({target[13:]!r})"
    if "/" in target[13:]:
        return None
    if target in log.semaphores:
        return 17, _JSE_KEPT, ""  # EEXIST, as for a name the copy holds already
    log.after = lambda: log.semaphores.add(target)  # once answered (a restarted call decides again)
    return 0, _JSE_KEPT, f"sem_open({target[13:]!r})"


def _jse_unlink(pid, name, args, log):
    """``unlink`` of a name the copy made above: done, in the copy only."""
    path = _jsc_path(pid, args[0] if name == "unlink" else args[1])
    if path not in log.semaphores:
        return None
    log.after = lambda: log.semaphores.discard(path)
    return 0, _JSE_KEPT, ""


def _jse_inject(listener, notif_id):
    """Answer the parked open with a fresh memfd in the copy (closed here at once)."""
    memfd = _jse_os.memfd_create("crane-semaphore", _jse_os.MFD_CLOEXEC)
    try:
        return _jsc_addfd(listener, notif_id, memfd, _JSE_ADDFD_SEND)
    finally:
        _jse_os.close(memfd)
