"""Inherited descriptors, neutralised in the forked child before user code. STANDARD LIBRARY ONLY.

A fork shares every open file description with the kernel: a write through a copy of the user's
log file, sqlite database or socket is a real write, and even a *read* moves the kernel's file
offset. So each inherited descriptor is replaced in place (same number, so the objects that hold
it keep working where that is harmless):

* files and folders: an independent read-only reopen at the same offset (reads work; the
  kernel's offset never moves); a file that was open for writing is reported as ``written`` so
  the seccomp filter stops any write or lock on it;
* everything else (sockets incl. the kernel's ZeroMQ sockets, pipes, epoll, eventfd, ttys):
  /dev/null, reported as ``shared`` so the filter stops any use of it;
* 0, 1, 2: /dev/null.

Joined into the probe's private module: top-level names carry the ``_jfd_`` prefix.
"""

import os as _jfd_os
import stat as _jfd_stat

_JFD_HARMLESS_DEVICES = {(1, 3), (1, 5), (1, 8), (1, 9)}  # /dev/null, zero, random, urandom
_JFD_O_PATH = 0o10000000


class _JfdResult:
    def __init__(self):
        self.shared = []  # now /dev/null: any use is stopped
        self.written = []  # reopened read-only: writes and locks are stopped
        self.notes = []

    @property
    def pinned(self):
        return self.shared + self.written


def _jfd_open_fds():
    listing = _jfd_os.open("/proc/self/fd", _jfd_os.O_RDONLY | _jfd_os.O_DIRECTORY)
    try:
        names = _jfd_os.listdir(listing)
    finally:
        _jfd_os.close(listing)
    return sorted(int(n) for n in names if n.isdigit() and int(n) != listing)


def _jfd_classify(keep):
    """What to do with each inherited descriptor: ``(fd, flags, action)``, action one of "file"
    (reopen read-only), "written" (reopen read-only; it was open for writing), "null" (/dev/null).
    Pure: the kernel calls it before the fork to prepare the filter, the child to act on it."""
    plan = []
    for fd in _jfd_open_fds():
        if fd in keep or fd <= 2:
            continue
        try:
            info = _jfd_os.fstat(fd)
            flags = _fcntl_getfl(fd)
        except OSError:
            continue  # closed meanwhile
        if flags & _JFD_O_PATH:
            continue  # an O_PATH handle reads and writes nothing; openat through it is filtered
        mode = info.st_mode
        if _jfd_stat.S_ISCHR(mode) and (_jfd_os.major(info.st_rdev), _jfd_os.minor(info.st_rdev)) in (
            _JFD_HARMLESS_DEVICES
        ):
            continue
        if _jfd_stat.S_ISREG(mode) or _jfd_stat.S_ISDIR(mode):
            writable = flags & _jfd_os.O_ACCMODE != _jfd_os.O_RDONLY
            plan.append((fd, flags, "written" if writable else "file"))
        else:
            plan.append((fd, flags, "null"))
    return plan


def _jfd_expected(plan):
    """The (shared, written) lists the child will report for ``plan`` if every reopen works."""
    return sorted(fd for fd, _, a in plan if a == "null"), sorted(fd for fd, _, a in plan if a == "written")


def _jfd_neutralise(keep):
    """Replace every inherited descriptor but ``keep`` (the verdict pipe, the handover socket)."""
    result = _JfdResult()
    devnull = _jfd_os.open(_jfd_os.devnull, _jfd_os.O_RDWR | _jfd_os.O_CLOEXEC)
    for fd in (0, 1, 2):
        _jfd_os.dup2(devnull, fd)
    for fd, flags, action in _jfd_classify(keep | {devnull}):
        if action != "null":
            if _jfd_reopen(fd, flags):
                if action == "written":
                    result.written.append(fd)
                continue
            result.notes.append(f"descriptor {fd} could not be reopened: it is poisoned")
        _jfd_os.dup2(devnull, fd, inheritable=False)
        result.shared.append(fd)
    _jfd_os.close(devnull)
    result.shared.sort()
    result.written.sort()
    return result


def _fcntl_getfl(fd):
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETFL)


def _jfd_reopen(fd, flags):
    """``fd`` replaced by an independent read-only open of the same file at the same offset."""
    keep_flags = flags & (_jfd_os.O_NONBLOCK | getattr(_jfd_os, "O_DIRECTORY", 0))
    try:
        fresh = _jfd_os.open(f"/proc/self/fd/{fd}", _jfd_os.O_RDONLY | _jfd_os.O_CLOEXEC | keep_flags)
    except OSError:
        return False
    try:
        try:
            offset = _jfd_os.lseek(fd, 0, _jfd_os.SEEK_CUR)
            _jfd_os.lseek(fresh, offset, _jfd_os.SEEK_SET)
        except OSError:
            pass  # a folder's position or an unseekable file: starts at 0, the kernel's is untouched
        _jfd_os.dup2(fresh, fd, inheritable=False)
    finally:
        _jfd_os.close(fresh)
    return True
