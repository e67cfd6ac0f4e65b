"""Files the dry run's copy writes, kept in its own memory. STANDARD LIBRARY ONLY.

Joined after ``jail_semaphores`` and before ``jail_answers`` (whose rules call these) into the
probe's private module: top-level names carry ``_jwr_``.

A cell that saves its work (``df.to_csv``, ``np.save``, ``plt.savefig``, ``open(p, 'w')``) used to
end the dry run at that open, so nothing after it had a verdict, and no fix of a cell that saves
could be verified. Now the parent answers an open for writing itself; the kernel never runs it:

* Where the real open fails for a reason the parent can see by looking (a missing folder: ENOENT;
  a file in the folder path: ENOTDIR; a folder: EISDIR; ``O_EXCL`` on a name that exists: EEXIST),
  the answer is that error (``known outcome``): the crash it leads to is the real crash.
* Where the real open succeeds (a regular file, or a new name in a folder the kernel may write),
  the answer is a ``memfd`` injected as the open's result (``SECCOMP_IOCTL_NOTIF_ADDFD``), holding
  the file's bytes unless the open truncates. The copy writes into its own memory, and the memory
  goes with the copy. Opening the same path again (a loop that appends) reopens the same memfd.
  An ``O_TMPFILE`` file is a memfd too, and ``unlink`` of a name the copy made succeeds in the copy.
* A new folder (``os.makedirs('out')`` before a save into it) is made in the copy only, in name
  (``log.folders``): files opened in it are new kept files.
* Anything else still ends the run: a link as the last name, a device, a FIFO, /proc, /sys, /dev,
  a folder the kernel may not write, more than ``_JWR_MAX_FILES`` files, an existing file of more
  than ``_JWR_MAX_COPY`` bytes opened without truncating.

Reads are not parked, so a read of a kept file by its name would find the disk. In the child, from
its first write on, ``os.stat`` and ``open`` for reading of a kept file use the kept file instead
(``_jwr_shim_stat``). Below them (``os.open``, C libraries) the child cannot be shown the file: an
audit hook notes an ``os.open`` for reading of a path opened for writing before (``_jwr_report``),
and a crash about a kept file (its ``filename``, or its name in a C library's message), through
EFBIG, or after native code opened one, is no verdict (``_jwr_settle``). Each kept file may grow
to an eighth of the memory cap (``RLIMIT_FSIZE``; past it the write fails with EFBIG), so at most
the cap in all.
"""

import contextlib as _jwr_contextlib
import errno as _jwr_errno
import os as _jwr_os
import re as _jwr_re
import stat as _jwr_stat
import sys as _jwr_sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from jail_seccomp, joined before
    from crane_lsp.kernel.agent.jail.jail_seccomp import _jsc_addfd, _jsc_int, _jsc_path
    from crane_lsp.kernel.agent.jail.jail_semaphores import _JSE_KEPT

_JWR_KNOWN = "known outcome"  # jail_answers' class of the same words (_JAN_KNOWN)
_JWR_INJECT = -2  # the answer is the file's memfd, prepared in the log (``pending``)
_JWR_MAX_FILES = 8
_JWR_MAX_FOLDERS = 16
_JWR_MAX_COPY = 64 * 1024 * 1024  # an existing file opened without truncating: its bytes are copied
_JWR_AT_FDCWD = -100  # (os has no name for it)
_JWR_O_PATH_DIR = _jwr_os.O_PATH | _jwr_os.O_DIRECTORY | _jwr_os.O_CLOEXEC
_JWR_O_WRITES = _jwr_os.O_ACCMODE | _jwr_os.O_CREAT | _jwr_os.O_TRUNC | _jwr_os.O_APPEND
_JWR_ADDFD_SEND = 2  # SECCOMP_ADDFD_FLAG_SEND: the new descriptor is the call's result
_JWR_SYSTEM = ("/proc", "/sys", "/dev")
_JWR_MEMFD_NAME = "crane-kept:"
_JWR_WRITTEN: set[str] = set()  # the child: absolute paths the cell opened for writing (the audit hook)
_JWR_READ_BACK: list[str] = []  # the child: those it then opened for reading
_JWR_BUSY: list[int] = []  # the child: inside the shim's own lookup (no lookup within it)
_JWR_FOLDERS: set[str] = set()  # the child: folders the cell made (``os.mkdir``)


def _jwr_begin(payload):
    """In the child, before the jail: a kept file may grow to an eighth of the memory cap, and the
    audit hook watches the cell's opens. Python ignores SIGXFSZ, so a write past it is EFBIG."""
    import resource

    cap = int(payload.get("memory_mb", 4096)) * 1024 * 1024 // _JWR_MAX_FILES
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    _jwr_sys.addaudithook(_jwr_watch)  # the child only: it is thrown away after the run


def _jwr_watch(event, args):
    """Audit hook: note a path opened for writing, and a later open of it for reading; a folder
    made, and a later listing of it. Never raises (an exception here would become the cell's)."""
    if event in ("os.mkdir", "os.listdir", "os.scandir"):
        _jwr_watch_folder(event, args)
        return
    if event != "open" or len(args) < 3 or isinstance(args[0], int):
        return
    try:
        flags = args[2] if isinstance(args[2], int) else 0
        writes = flags & _JWR_O_WRITES
        if not writes and not _JWR_WRITTEN:
            return
        _jwr_seen(_jwr_real(args[0]), bool(writes), _JWR_WRITTEN)
    except Exception:
        pass


def _jwr_real(raw):
    """``raw`` as the parent names it (``realpath``, which stats through the shim: no lookup of a
    kept file meanwhile)."""
    _JWR_BUSY.append(1)
    try:
        return _jwr_os.path.realpath(_jwr_os.fsdecode(_jwr_os.fspath(raw)))
    finally:
        _JWR_BUSY.pop()


def _jwr_seen(path, made, store):
    """``path`` made (into ``store``; the shim goes in with the first), or read: a read back when
    ``store`` holds it."""
    if made:
        if not _JWR_WRITTEN and not _JWR_FOLDERS:
            _jwr_shim_stat()
        store.add(path)
    elif path in store and path not in _JWR_READ_BACK:
        _JWR_READ_BACK.append(path)


def _jwr_watch_folder(event, args):
    """``os.mkdir`` of a path (the parent may make it in the copy only), ``os.listdir`` and
    ``os.scandir`` of one made so: the disk has no such folder."""
    try:
        if not args or args[0] is None or isinstance(args[0], int):
            return
        if len(args) > 2 and args[2] not in (None, -1):  # relative to a descriptor: not followed
            return
        if event == "os.mkdir" or _JWR_FOLDERS:
            _jwr_seen(_jwr_real(args[0]), event == "os.mkdir", _JWR_FOLDERS)
    except Exception:
        pass


def _jwr_made_folder(path, error, real_stat):
    """The stat of a folder the copy made (``error``: the real stat's, re-raised otherwise): its
    nearest ancestor on the disk stands for it (a folder, with the kernel's permissions)."""
    try:
        absolute = _jwr_real(path)
    except Exception:
        raise error from None
    if absolute not in _JWR_FOLDERS:
        raise error
    above = _jwr_os.path.dirname(absolute)
    while above in _JWR_FOLDERS:
        above = _jwr_os.path.dirname(above)
    return real_stat(above)


def _jwr_keeper(path):
    """The child's descriptor of the kept file at ``path`` (the parent injected it, named after
    the path: ``_jwr_memfd``), or None."""
    if isinstance(path, int) or not _JWR_WRITTEN:
        return None
    raw = _jwr_os.fsdecode(_jwr_os.fspath(path))
    if _jwr_os.path.basename(raw) not in {_jwr_os.path.basename(p) for p in _JWR_WRITTEN}:
        return None  # most stats and opens: no ``realpath`` (several syscalls) for them
    absolute = _jwr_os.path.realpath(raw)  # (the shim's caller is BUSY)
    if absolute not in _JWR_WRITTEN:
        return None
    wanted = f"/memfd:{_JWR_MEMFD_NAME}{absolute} (deleted)"
    for name in _jwr_os.listdir("/proc/self/fd"):
        with _jwr_contextlib.suppress(OSError):
            if _jwr_os.readlink(f"/proc/self/fd/{name}") == wanted:
                return int(name)
    return None


def _jwr_shim_stat():
    """``os.stat``/``os.lstat`` (so ``os.path.exists``, ``getsize``, ``Path.stat``) of a kept file
    describe the kept file, as after the real write: ``np.savetxt`` creates the file, then checks
    that it exists. In the child only, from its first write on; C code still sees the disk."""
    real_stat, real_lstat = _jwr_os.stat, _jwr_os.lstat

    def kept_for(path, dir_fd):
        if dir_fd is not None or _JWR_BUSY:  # ``realpath`` in ``_jwr_keeper`` calls ``os.lstat``
            return None
        _JWR_BUSY.append(1)
        try:
            return _jwr_keeper(path)
        except Exception:  # whatever ``path`` is, the real call says what is wrong with it
            return None
        finally:
            _JWR_BUSY.pop()

    def stat(path, *, dir_fd=None, follow_symlinks=True):
        kept = kept_for(path, dir_fd)
        if kept is not None:
            return _jwr_os.fstat(kept)
        try:
            return real_stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        except FileNotFoundError as exc:
            if dir_fd is not None or not _JWR_FOLDERS or _JWR_BUSY:
                raise
            return _jwr_made_folder(path, exc, real_stat)

    def lstat(path, *, dir_fd=None):
        kept = kept_for(path, dir_fd)
        if kept is not None:
            return _jwr_os.fstat(kept)
        try:
            return real_lstat(path, dir_fd=dir_fd)
        except FileNotFoundError as exc:
            if dir_fd is not None or not _JWR_FOLDERS or _JWR_BUSY:
                raise
            return _jwr_made_folder(path, exc, real_stat)

    _jwr_os.stat, _jwr_os.lstat = stat, lstat
    _jwr_shim_open(kept_for)


def _jwr_shim_open(kept_for):
    """``open``/``io.open`` for reading of a kept file read the kept file (a new open of the child's
    handle, from its start), as the real run reads what it wrote: ``pd.read_csv`` of the CSV the
    cell just saved, ``np.load`` of its ``.npy``. Other modes, and ``os.open``, go on as they were."""
    import builtins
    import io

    real_open = io.open

    def open(file, mode="r", *args, **kwargs):
        reads = isinstance(mode, str) and not any(c in mode for c in "wax+")
        kept = kept_for(file, None) if reads else None
        if kept is None:
            return real_open(file, mode, *args, **kwargs)
        return real_open(f"/proc/self/fd/{kept}", mode, *args, **kwargs)

    io.open = builtins.open = open


def _jwr_report(result):
    """The child's answer names the files Python opened for writing, and those it read back by name
    (the parent, which knows what it kept, decides)."""
    if _JWR_WRITTEN:
        result["written"] = sorted(_JWR_WRITTEN)[:64]
    if _JWR_READ_BACK:
        result["read_back"] = _JWR_READ_BACK[:5]


def _jwr_folder(pid, dirfd, path):
    """An ``O_PATH`` descriptor of the folder ``path`` is relative to, as the child resolves it."""
    if path.startswith("/"):
        base = "/"
    elif dirfd == _JWR_AT_FDCWD:
        base = f"/proc/{pid}/cwd"
    else:
        base = f"/proc/{pid}/fd/{dirfd}"
    return _jwr_os.open(base, _JWR_O_PATH_DIR)


def _jwr_where(pid, dirfd, path, log=None):
    """``(folder fd, leaf, absolute path)`` for ``path``, or an errno the real open would fail
    with, or None (not a case answered here). The folder descriptor is None for a folder the copy
    made (``log.folders``: it is not on the disk); else the caller closes it."""
    head, leaf = _jwr_os.path.split(path)
    if leaf in ("", ".", ".."):
        return None
    base = _jwr_folder(pid, dirfd, path)
    try:
        try:
            info = _jwr_os.stat(head or ".", dir_fd=base)
        except OSError as exc:
            made = _jwr_os.path.normpath(_jwr_os.path.join(_jwr_os.readlink(f"/proc/self/fd/{base}"), head))
            if exc.errno == _jwr_errno.ENOENT and log is not None and made in log.folders:
                return None, leaf, _jwr_os.path.join(made, leaf)
            return exc.errno if exc.errno in (_jwr_errno.ENOENT, _jwr_errno.ENOTDIR) else None
        if not _jwr_stat.S_ISDIR(info.st_mode):
            return _jwr_errno.ENOTDIR
        folder = _jwr_os.open(head or ".", _JWR_O_PATH_DIR, dir_fd=base)
    finally:
        _jwr_os.close(base)
    real = _jwr_os.readlink(f"/proc/self/fd/{folder}")
    if any(real == top or real.startswith(top + "/") for top in _JWR_SYSTEM):
        _jwr_os.close(folder)
        return None
    return folder, leaf, _jwr_os.path.join(real, leaf)


def _jwr_decide(folder, leaf, flags):
    """What the real open of ``leaf`` in ``folder`` does: an errno, "new" (a file it creates),
    "keep" or "truncate" (an existing regular file), or None (not answered)."""
    if folder is None:  # in a folder the copy made: nothing of it is on the disk
        return "new" if flags & _jwr_os.O_CREAT else _jwr_errno.ENOENT
    try:
        info = _jwr_os.stat(leaf, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        if not flags & _jwr_os.O_CREAT:
            return _jwr_errno.ENOENT
        return "new" if _jwr_os.access(".", _jwr_os.W_OK | _jwr_os.X_OK, dir_fd=folder) else None
    if flags & _jwr_os.O_CREAT and flags & _jwr_os.O_EXCL:
        return _jwr_errno.EEXIST
    if _jwr_stat.S_ISDIR(info.st_mode):
        return _jwr_errno.EISDIR
    if not _jwr_stat.S_ISREG(info.st_mode) or not _jwr_os.access(leaf, _jwr_os.W_OK, dir_fd=folder):
        return None  # a link, a device, a FIFO, a file the kernel may not write
    return "truncate" if flags & _jwr_os.O_TRUNC else "keep"


def _jwr_open(pid, name, args, log):
    """An open for writing: answered with the real open's error, or the file's memfd."""
    dirfd, at, flags = (_JWR_AT_FDCWD, 0, args[1]) if name == "open" else (args[0], 1, args[2])
    dirfd = _jsc_int(dirfd)
    path = _jsc_path(pid, args[at])
    if path is None or flags & _jwr_os.O_PATH or flags & _jwr_os.O_ACCMODE == 3:
        return None
    if flags & _jwr_os.O_TMPFILE == _jwr_os.O_TMPFILE:
        return _jwr_tmpfile(pid, dirfd, path, flags, log)
    if flags & _jwr_os.O_DIRECTORY:
        return None
    where = _jwr_where(pid, dirfd, path, log)
    if where is None or isinstance(where, int):
        return None if where is None else (where, _JWR_KNOWN, f"{name}({path!r})")
    folder, leaf, absolute = where
    try:
        if absolute in log.folders:
            return _jwr_errno.EISDIR, _JWR_KNOWN, f"{name}({path!r})"
        kept = log.kept.get(absolute)
        if absolute in log.confirmed and flags & _jwr_os.O_CREAT and flags & _jwr_os.O_EXCL:
            return _jwr_errno.EEXIST, _JWR_KNOWN, f"{name}({path!r})"
        decided = "kept" if kept is not None else _jwr_decide(folder, leaf, flags)
        if decided is None or isinstance(decided, int):
            return None if decided is None else (decided, _JWR_KNOWN, f"{name}({path!r})")
        if kept is None:
            if len(log.kept) >= _JWR_MAX_FILES:
                return None
            kept = _jwr_memfd(folder, leaf if decided == "keep" else None, absolute)
            log.kept[absolute] = kept
            log.keeper = _jwr_reopen(kept, 0)  # the child's own handle, for its ``os.stat``
            if decided == "new":
                log.created.add(absolute)
        elif flags & _jwr_os.O_TRUNC:
            _jwr_os.ftruncate(kept, 0)
    finally:
        _jwr_close(folder)
    log.pending = _jwr_reopen(kept, flags)
    log.after = lambda: log.confirmed.add(absolute)  # the copy has it (an interrupted open restarts)
    return _JWR_INJECT, _JSE_KEPT, f"{name}({path!r}) for writing"


def _jwr_tmpfile(pid, dirfd, path, flags, log):
    """``O_TMPFILE`` (``tempfile.TemporaryFile``): an unnamed file in a folder the kernel may write."""
    where = _jwr_where(pid, dirfd, _jwr_os.path.join(path, "x"), log)  # the folder is ``path`` itself
    if not isinstance(where, tuple):
        return None if where is None else (where, _JWR_KNOWN, f"openat({path!r}, O_TMPFILE)")
    folder = where[0]
    try:
        writable = folder is None or _jwr_os.access(".", _jwr_os.W_OK, dir_fd=folder)
        if len(log.kept) >= _JWR_MAX_FILES or not writable:
            return None
        memfd = _jwr_memfd(folder, None, "")
    finally:
        _jwr_close(folder)
    log.kept[f"(unnamed {len(log.kept)})"] = memfd
    log.pending = _jwr_reopen(memfd, flags)
    return _JWR_INJECT, _JSE_KEPT, ""


def _jwr_memfd(folder, leaf, absolute):
    """A memfd holding ``leaf``'s bytes (None: empty), named after the file's ``absolute`` path
    (which the child's ``_jwr_keeper`` looks for; a path too long for a name is not found)."""
    name = _JWR_MEMFD_NAME + absolute if len(_JWR_MEMFD_NAME + absolute) < 240 else _JWR_MEMFD_NAME
    memfd = _jwr_os.memfd_create(name, _jwr_os.MFD_CLOEXEC)
    if leaf is None:
        return memfd
    try:  # never blocks (a FIFO put there since the check) and never copies more than a cap
        flags = _jwr_os.O_RDONLY | _jwr_os.O_CLOEXEC | _jwr_os.O_NOFOLLOW | _jwr_os.O_NONBLOCK
        source = _jwr_os.open(leaf, flags, dir_fd=folder)
        try:
            info = _jwr_os.fstat(source)
            if not _jwr_stat.S_ISREG(info.st_mode) or info.st_size > _JWR_MAX_COPY:
                raise OSError(f"{leaf}: not a regular file of at most {_JWR_MAX_COPY} bytes")
            size = info.st_size
            sent = 0
            while sent < size:
                count = _jwr_os.sendfile(memfd, source, sent, size - sent)
                if count <= 0:
                    break
                sent += count
        finally:
            _jwr_os.close(source)
        return memfd
    except BaseException:
        _jwr_os.close(memfd)
        raise


def _jwr_reopen(memfd, flags):
    """A new open of the memfd with the cell's access mode and ``O_APPEND`` (its own offset)."""
    mode = (flags & _jwr_os.O_ACCMODE) | (flags & _jwr_os.O_APPEND) | _jwr_os.O_CLOEXEC
    return _jwr_os.open(f"/proc/self/fd/{memfd}", mode)


def _jwr_unlink(pid, name, args, log):
    """``unlink`` of a file the copy made (a named temporary file): done, in the copy only."""
    dirfd, at = (_JWR_AT_FDCWD, 0) if name == "unlink" else (args[0], 1)
    dirfd = _jsc_int(dirfd)
    path = _jsc_path(pid, args[at])
    if path is None or not log.created:
        return None
    where = _jwr_where(pid, dirfd, path, log)
    if not isinstance(where, tuple):
        return None
    _jwr_close(where[0])
    if where[2] not in log.created:
        return None
    log.after = lambda: _jwr_forget(log, where[2])  # once answered (a restarted call decides again)
    return 0, _JSE_KEPT, ""


def _jwr_forget(log, path):
    """A kept file the copy unlinked: gone from the copy."""
    log.created.discard(path)
    log.confirmed.discard(path)
    _jwr_os.close(log.kept.pop(path))


def _jwr_mkdir(pid, name, args, log):
    """``mkdir`` of a new folder where the kernel may make one (``os.makedirs('out')`` before a
    save into it): done, in the copy only. Files opened in it are new kept files; the real
    ``mkdir``'s error where it would fail (a missing parent: ENOENT)."""
    dirfd, at = (_JWR_AT_FDCWD, 0) if name == "mkdir" else (args[0], 1)
    dirfd = _jsc_int(dirfd)
    path = _jsc_path(pid, args[at])
    if path is None:
        return None
    where = _jwr_where(pid, dirfd, path.rstrip("/") or path, log)
    if where is None or isinstance(where, int):
        return None if where is None else (where, _JWR_KNOWN, f"{name}({path!r})")
    folder, _leaf, absolute = where
    try:
        if absolute in log.folders or absolute in log.kept:
            return _jwr_errno.EEXIST, _JWR_KNOWN, f"{name}({path!r})"
        writable = folder is None or _jwr_os.access(".", _jwr_os.W_OK | _jwr_os.X_OK, dir_fd=folder)
        if not writable or len(log.folders) >= _JWR_MAX_FOLDERS:
            return None  # (a name that exists on the disk was answered EEXIST before this rule)
    finally:
        _jwr_close(folder)
    log.after = lambda: log.folders.add(absolute)  # once answered (a restarted call decides again)
    return 0, _JSE_KEPT, f"{name}({path!r})"


def _jwr_close(fd):
    if fd is not None:
        _jwr_os.close(fd)


def _jwr_inject(listener, notif_id, log):
    """Answer the parked open with the prepared descriptor; a new kept file's read-only handle goes
    in first, as a descriptor of the child's that the cell does not know (both closed here)."""
    fd, log.pending = log.pending, -1
    keeper, log.keeper = log.keeper, -1
    try:
        if keeper >= 0 and not _jsc_addfd(listener, notif_id, keeper, 0):
            return False
        return _jsc_addfd(listener, notif_id, fd, _JWR_ADDFD_SEND)
    finally:
        _jwr_os.close(fd)
        if keeper >= 0:
            _jwr_os.close(keeper)


def _jwr_release(log):
    """Close the parent's descriptors of the kept files (the copy's go with the copy)."""
    while log.kept:
        _, fd = log.kept.popitem()
        with _jwr_contextlib.suppress(OSError):
            _jwr_os.close(fd)
    for fd in (log.pending, log.keeper):
        if fd >= 0:
            _jwr_os.close(fd)
    log.pending = log.keeper = -1


def _jwr_settle(result, log):
    """Why the verdict cannot stand after a kept write, or ''. The cell read a kept file back below
    Python's ``open``; or it raised after native code opened one (SQLite, HDF5 look their files up
    by name, which finds the disk: the copy's ``os.stat`` is Python's), through EFBIG, or about a
    kept file or folder (its ``filename``, or its name in a C library's message)."""
    kept = [path for path in log.kept if not path.startswith("(")]
    if not log.kept and not log.folders:
        return ""
    read_back = result.get("read_back") or []
    if read_back and result.get("outcome") in ("raised", "completed"):
        return f"it read back {read_back[0]}, which the copy made only in its memory"
    if result.get("outcome") != "raised":
        return ""
    raised = result.get("exception") or "an exception"
    native = [path for path in kept if path not in (result.get("written") or ())]
    if native:
        return f"its {raised} follows native code writing {native[0]}, a file the copy keeps in memory"
    if _jwr_errno.EFBIG in (result.get("errnos") or ()):
        return f"its {raised} follows a file the copy wrote past its size cap (an eighth of the memory cap)"
    message = result.get("message") or ""
    files = set(result.get("files") or ())  # the files the exception chain is about (OSError.filename)
    about = [path for path in kept if path in files or _jwr_named(path, message)]
    if _jwr_errno.ENOENT in (result.get("errnos") or ()):  # the disk's view of a folder the copy made
        about += [path for path in sorted(log.folders) if path in files or _jwr_named(path, message)]
    if about:
        return f"its {raised} is about {about[0]}, which the copy made only in its memory"
    return ""


def _jwr_named(path, message):
    """Whether ``message`` names the file at ``path`` (its name as a whole word: a C library's
    error, which carries no ``filename``)."""
    name = _jwr_re.escape(_jwr_os.path.basename(path))
    return _jwr_re.search(rf"(?<![\w.-]){name}(?![\w-])", message) is not None


def _jwr_files(exc):
    """The files an exception and its causes and contexts are about (``OSError.filename`` and
    ``filename2``), as the parent names them; in the child."""
    found: list[str] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 32:
        seen.add(id(exc))
        for name in (getattr(exc, "filename", None), getattr(exc, "filename2", None)):
            if isinstance(name, str | bytes) and len(found) < 8:
                with _jwr_contextlib.suppress(Exception):
                    found.append(_jwr_real(name))
        exc = exc.__cause__ or exc.__context__
    return found
