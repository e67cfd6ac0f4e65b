"""Calls the jail answers itself instead of ending the run. STANDARD LIBRARY ONLY.

Joined after ``jail_seccomp`` into the probe's private module: top-level names carry ``_jan_``.

The seccomp filter parks every call that could act outside the child; the parent reads it off the
listener (``_jan_listen``). Most end the run as ``blocked``. A few, made by libraries on their
*first import* (matplotlib's ``mkdir`` of its existing config folder, joblib's semaphore probe,
glibc's ``connect()`` to nscd, TensorFlow naming its threads, urllib3's IPv6 probe), are answered
instead: the parent
sends back an error (``SECCOMP_IOCTL_NOTIF_SEND`` with a negative errno), so the kernel never runs
the call. An
answer can therefore have no side effect, whatever the child's memory says; a rule only decides
whether the error is the truth or a fallback the library handles. Each rule has one class:

* ``known outcome``: the real call would fail with exactly this errno (a ``mkdir`` of a path that
  exists is EEXIST before any permission check). A crash through it is the real crash.
* ``handled fallback``: the real call might succeed, but the library handles this errno and goes
  on (joblib runs serially without semaphores, glibc reads its files without nscd). A crash whose
  exception chain carries this errno is no verdict (``blocked``): the real run may not crash.
* ``the jail's own work``: a call on a descriptor the jail replaced by /dev/null, answered as
  /dev/null does. The cell saw the jail, not the kernel: if it then raises, the verdict is
  ``blocked``.

Anything no rule answers still ends the run, as before.
"""

import contextlib as _jan_contextlib
import ctypes as _jan_ctypes
import os as _jan_os
import re as _jan_re
import struct as _jan_struct
from typing import TYPE_CHECKING

if (
    TYPE_CHECKING
):  # in the kernel these come from jail_seccomp, jail_semaphores and jail_writes, joined before
    from crane_lsp.kernel.agent.jail.jail_seccomp import (
        _JSC_X86_64,
        _jsc_describe,
        _jsc_int,
        _jsc_libc,
        _jsc_path,
        _jsc_read,
    )
    from crane_lsp.kernel.agent.jail.jail_semaphores import (
        _JSE_INJECT,
        _jse_create,
        _jse_inject,
        _jse_unlink,
    )
    from crane_lsp.kernel.agent.jail.jail_writes import (
        _JWR_AT_FDCWD,
        _JWR_INJECT,
        _jwr_folder,
        _jwr_inject,
        _jwr_mkdir,
        _jwr_open,
        _jwr_release,
        _jwr_settle,
        _jwr_unlink,
    )

_JAN_KNOWN = "known outcome"
_JAN_FALLBACK = "handled fallback"  # jail_semaphores spells it _JSE_FALLBACK (one value)
_JAN_SHAPED = "the jail's own work"
_JAN_ERRNO_NAMES = {
    0: "done",
    2: "ENOENT",
    13: "EACCES",
    17: "EEXIST",
    20: "ENOTDIR",
    21: "EISDIR",
    -2: "a file in the copy's memory",  # jail_writes' _JWR_INJECT
    88: "ENOTSOCK",
    99: "EADDRNOTAVAIL",
    111: "ECONNREFUSED",
}
_JAN_IPV6_LOOPBACK = bytes(15) + b"\x01"  # ::1
_JAN_NSCD = ("/var/run/nscd/socket", "/run/nscd/socket")
#: SECCOMP_IOCTL_NOTIF_SEND: _IOWR('!', 1, struct seccomp_notif_resp {u64 id; s64 val; s32 error; u32 flags})
_JAN_NOTIF_SEND = 0xC0182101
_JAN_NOTIF_RECV = 0xC0502100
_JAN_NOTIF_ID_VALID = 0x40082102  # _IOW('!', 2, __u64)
_JAN_MAX_NOTES = 8
_JAN_GONE = 2  # ENOENT from an answer: the parked call was interrupted, or its thread is gone
_JAN_EINTR = 4
_JAN_ERRNO_TEXT = _jan_re.compile(r"\[Errno (\d+)\]")
#: a thread's own name: /proc/self/task/<tid>/comm, /proc/thread-self/comm, /proc/<pid>/comm...
_JAN_COMM = _jan_re.compile(r"^/proc/(self|thread-self|\d+)/(?:task/\d+/)?comm$")


class _JanLog:
    """The calls answered during one dry run, in order: ``(rule class, errno, what)``."""

    def __init__(self):
        self.answers = []
        self.semaphores = set()  # /dev/shm names the copy believes it made (``jail_semaphores``)
        self.kept = {}  # files the copy wrote, in memory: path -> the parent's memfd (``jail_writes``)
        self.created = set()  # those of them the copy created (it may unlink them)
        self.folders = set()  # folders the copy made, in name only (``jail_writes``)
        self.pending = -1  # the descriptor the next injection sends
        self.keeper = -1  # and the child's own handle of a new kept file, sent before it
        self.confirmed = set()  # kept files whose open the copy got (O_EXCL on them: EEXIST)
        self.after = None  # what a rule records once its answer is sent (not for an interrupted call)

    def __del__(self):
        _jwr_release(self)  # also when the run ends without ``_jan_settle``


def _jan_exists(pid, dirfd, path):
    """Whether ``path`` names something (a dangling link too) as the child resolves it: absolute,
    or relative to its working folder or to ``dirfd``. Only looks; follows no last link."""
    try:
        folder = _jwr_folder(pid, dirfd, path)
    except OSError:
        return False
    try:
        _jan_os.stat(path, dir_fd=folder, follow_symlinks=False)
        return True
    except (OSError, ValueError):
        return False
    finally:
        _jan_os.close(folder)


def _jan_mkdir(pid, name, args, log):
    """``mkdir`` of a folder that exists (EEXIST), or of a new one (made in the copy only)."""
    return _jan_mkdir_existing(pid, name, args, log) or _jwr_mkdir(pid, name, args, log)


def _jan_mkdir_existing(pid, name, args, log=None):
    """``mkdir`` of a path that exists fails with EEXIST before Linux checks write permission or a
    read-only mount: the real call fails the same way (matplotlib's config and cache folders)."""
    dirfd, at = (_JWR_AT_FDCWD, 0) if name == "mkdir" else (_jsc_int(args[0]), 1)
    path = _jsc_path(pid, args[at])
    if path is None or not _jan_exists(pid, dirfd, path):
        return None
    return 17, _JAN_KNOWN, f"{name}({path!r})"


def _jan_nscd(pid, name, args, log=None):
    """glibc's ``connect()`` to the nscd socket in a user or host lookup (``getpass.getuser``,
    reached from ``import torch.optim``): no socket file is ENOENT, as the real call; a socket
    that exists is refused, and glibc then reads its files (``nsswitch.conf``) as without nscd."""
    size = min(args[2], 110)
    raw = _jsc_read(pid, args[1], size) if size > 2 else b""
    if len(raw) < 3 or _jan_struct.unpack_from("H", raw)[0] != 1:  # AF_UNIX only
        return None
    path = raw[2:].split(b"\0", 1)[0].decode("utf-8", "replace")
    if path not in _JAN_NSCD:
        return None
    if not _jan_exists(pid, _JWR_AT_FDCWD, path):
        return 2, _JAN_KNOWN, f"connect({path!r})"
    return 111, _JAN_FALLBACK, f"connect({path!r})"


def _jan_ipv6_probe(pid, name, args, log=None):
    """``bind()`` of a socket to ``[::1]`` port 0: the probe urllib3 makes on import (``HAS_IPV6 =
    _has_ipv6("::1")``, reached from requests, TensorFlow, plotly...) to learn whether IPv6 works.
    EADDRNOTAVAIL: urllib3 catches any exception and prefers IPv4. Any other address or port still
    ends the run (a server of the cell's own)."""
    size = _jsc_int(args[2])
    raw = _jsc_read(pid, args[1], 24) if size >= 24 else b""
    if len(raw) < 24 or _jan_struct.unpack_from("H", raw)[0] != 10:  # AF_INET6
        return None
    if raw[2:4] != b"\0\0" or raw[8:24] != _JAN_IPV6_LOOPBACK:
        return None
    return 99, _JAN_FALLBACK, "bind('[::1]:0')"


def _jan_shm(pid, name, args, log=None):
    """Creating or writing a POSIX semaphore or shared-memory object in /dev/shm (``sem_open``,
    ``shm_open``): EACCES. joblib's import probes semaphores this way and, on any OSError, runs in
    serial mode; ``multiprocessing`` raises it (then no verdict: see ``_jan_settle``)."""
    at = 0 if name == "open" else 1
    path = _jsc_path(pid, args[at])
    if path is None or not path.startswith("/dev/shm/") or "/.." in path:
        return None
    return 13, _JAN_FALLBACK, f"{name}({path!r})"


def _jan_thread_name(pid, name, args, log=None):
    """Naming one of the child's own threads (``pthread_setname_np`` opens
    ``/proc/self/task/<tid>/comm`` for writing): EACCES. Only the child's name would change, and
    callers treat a failed name as cosmetic (TensorFlow, torch and OpenMP name their pools)."""
    at = 0 if name == "open" else 1
    path = _jsc_path(pid, args[at])
    found = _JAN_COMM.match(path or "")
    if found is None:
        return None
    owner = found.group(1)
    if owner.isdigit() and not _jan_os.path.exists(f"/proc/{owner}/task/{pid}"):
        return None  # another process's name (the parked thread is not one of its tasks)
    return 13, _JAN_FALLBACK, f"{name}({path!r})"


def _jan_opened(pid, name, args, log):
    """An open for writing: a semaphore's temporary file (kept in the copy), another semaphore or
    shared memory in /dev/shm, a thread's own name, or a file (kept in the copy's memory)."""
    return (
        _jse_create(pid, name, args, log)
        or _jan_shm(pid, name, args)
        or _jan_thread_name(pid, name, args)
        or _jwr_open(pid, name, args, log)
    )


def _jan_unlinked(pid, name, args, log):
    """``unlink`` of a semaphore name or a file the copy made: done, in the copy only."""
    return _jse_unlink(pid, name, args, log) or _jwr_unlink(pid, name, args, log)


def _jan_replaced_socket(pid, name, args, log=None):
    """A socket call on a descriptor the jail replaced by /dev/null (the filter sends only those):
    ENOTSOCK, as /dev/null answers. The cell sees the jail's work, not the kernel's socket."""
    return 88, _JAN_SHAPED, f"{name}() on descriptor {_jsc_int(args[0])}, a socket the jail replaced"


#: the answered calls: syscall name -> the rule that decides (by name: some live in jail_semaphores);
#: a call not here, or that its rule declines, still ends the run
_JAN_RULES = {
    "mkdir": "_jan_mkdir",
    "mkdirat": "_jan_mkdir",
    "connect": "_jan_nscd",
    "bind": "_jan_ipv6_probe",
    "open": "_jan_opened",
    "openat": "_jan_opened",
    "link": "_jse_link",
    "linkat": "_jse_link",
    "unlink": "_jan_unlinked",
    "unlinkat": "_jan_unlinked",
    "getsockname": "_jan_replaced_socket",
    "getpeername": "_jan_replaced_socket",
    "getsockopt": "_jan_replaced_socket",
    "setsockopt": "_jan_replaced_socket",
    "shutdown": "_jan_replaced_socket",
}


def _jan_receive(listener):
    """``(id, pid, nr, args)`` of the parked call, read in a helper thread (the ioctl blocks if the
    notification vanished; a stuck helper must never hang the kernel), ``_JAN_GONE`` when a signal
    interrupted the call (the kernel restarts it, and it is parked again), or None."""
    import threading

    found: list = []  # the parked call, or _JAN_GONE

    def _receive():
        try:
            buffer = _jan_ctypes.create_string_buffer(80)  # zeroed, as the kernel demands
            if _jsc_libc().ioctl(listener, _jan_ctypes.c_ulong(_JAN_NOTIF_RECV), buffer) == 0:
                notif_id, pid, _flags, number, _arch, _ip, *args = _jan_struct.unpack("QIIiIQ6Q", buffer.raw)
                found.append((notif_id, pid, number, args))
            elif _jan_ctypes.get_errno() == _JAN_GONE:  # interrupted by a signal: it restarts, parked again
                found.append(_JAN_GONE)
        except Exception:
            pass

    helper = threading.Thread(target=_receive, name="crane-dryrun-notify", daemon=True)
    helper.start()
    helper.join(0.5)
    return found[0] if found else None


def _jan_valid(listener, notif_id):
    """``SECCOMP_IOCTL_NOTIF_ID_VALID``: the parked call still waits for this answer."""
    value = _jan_ctypes.c_uint64(notif_id)
    request = _jan_ctypes.c_ulong(_JAN_NOTIF_ID_VALID)
    return _jsc_libc().ioctl(listener, request, _jan_ctypes.byref(value)) == 0


def _jan_answer(listener, notif_id, errno):
    """The parked call returns ``-errno`` (0: success); the kernel never runs it."""
    response = _jan_ctypes.create_string_buffer(_jan_struct.pack("QqiI", notif_id, 0, -errno, 0), 24)
    return _jsc_libc().ioctl(listener, _jan_ctypes.c_ulong(_JAN_NOTIF_SEND), response) == 0


def _jan_send(listener, notif_id, errno, log):
    """The answer: an error (``errno`` > 0), success (0), a semaphore's memfd (``_JSE_INJECT``) or
    a kept file's (``_JWR_INJECT``)."""
    if errno == _JSE_INJECT:
        return _jse_inject(listener, notif_id)
    if errno == _JWR_INJECT:
        return _jwr_inject(listener, notif_id, log)
    return _jan_answer(listener, notif_id, errno)


def _jan_decide(pid, number, args, log):
    """``(errno, class, what)`` when a rule answers the call, else None."""
    name = next((n for n, v in _JSC_X86_64.items() if v == number), "")
    rule = globals().get(_JAN_RULES.get(name, ""))
    if rule is None:
        return None
    try:
        return rule(pid, name, args, log)
    except Exception:
        return None  # when in doubt, the call ends the run


def _jan_listen(listener, log):
    """Handle the call parked on ``listener``: answer it (None) or say why the run ends."""
    parked = _jan_receive(listener)
    if parked == _JAN_GONE:  # a signal withdrew it: it restarts, and is parked again
        return None
    if parked is None:
        return "a forbidden system call"
    notif_id, pid, number, args = parked
    log.after = None
    decided = _jan_decide(pid, number, args, log)
    if decided is not None and _jan_send(listener, notif_id, decided[0], log):
        if log.after is not None:
            log.after()
        if decided[2]:  # housekeeping answers (a semaphore's temporary name) go unlisted
            log.answers.append(decided)
        return None
    if not _jan_valid(listener, notif_id):  # interrupted by a signal (what was read of its memory
        return None  # may be stale): it restarts and is parked again, or its thread is gone
    try:
        return _jsc_describe(pid, number, args)
    except Exception:
        return f"a forbidden system call ({number})"


def _jan_errnos(exc):
    """The errnos an exception and its causes and contexts carry (``OSError.errno`` and any
    ``[Errno N]`` in their text): where an answered call may show up in a traceback."""
    found: set[int] = set()
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 32:
        seen.add(id(exc))
        errno = getattr(exc, "errno", None)
        if isinstance(errno, int):
            found.add(errno)
        with _jan_contextlib.suppress(BaseException):  # a __str__ that fails
            found.update(int(n) for n in _JAN_ERRNO_TEXT.findall(str(exc)[:2000]))
        exc = exc.__cause__ or exc.__context__
    return sorted(found)


def _jan_note(answers):
    listed = []
    for errno, kind, what in answers:
        text = f"{what} -> {_JAN_ERRNO_NAMES.get(errno, errno)} ({kind})"
        if text not in listed:
            listed.append(text)
    more = len(listed) - _JAN_MAX_NOTES
    shown = "; ".join(listed[:_JAN_MAX_NOTES]) + (f"; and {more} more" if more > 0 else "")
    return f"answered by the jail without running them: {shown}"


def _jan_settle(result, log):
    """The verdict with the answered calls in its notes; a crash through a fallback answer, or
    after the cell saw the jail's own work, or through EINTR, or any verdict that may rest on a file
    kept in memory, is no verdict (``blocked``) with that reason."""
    errnos = set(result.pop("errnos", None) or ())
    kept = _jwr_settle({**result, "errnos": errnos}, log)  # a file kept in memory read back (jail_writes)
    _jwr_release(log)
    for key in ("read_back", "written", "files"):  # the child's report to jail_writes, not the verdict's
        result.pop(key, None)
    if log.answers:
        result["notes"] = [*(result.get("notes") or []), _jan_note(log.answers)]
    why = kept if result.get("outcome") in ("raised", "completed") else ""
    if not why and result.get("outcome") == "raised":
        why = _jan_why_not(result.get("exception") or "an exception", errnos, log)
    if why:
        result.update(outcome="blocked", exception=None, line=None, message=why)
    return result


def _jan_why_not(raised, errnos, log):
    """Why a crash is not the cell's own, or ''."""
    if _JAN_EINTR in errnos:  # a parked call is interruptible until the parent reads it; the real one
        return f"its {raised} (EINTR) may come from a call the jail held when a signal came"  # does not wait
    through = [what for errno, kind, what in log.answers if kind == _JAN_FALLBACK and errno in errnos]
    if through:
        return f"its {raised} follows a call the jail answered with an error ({through[0]})"
    shaped = [what for _errno, kind, what in log.answers if kind == _JAN_SHAPED]
    if shaped:
        return f"it raised {raised} after seeing the jail's own work ({shaped[0]})"
    return ""
