"""Shared mappings made private in the forked child before user code. STANDARD LIBRARY ONLY.

A fork keeps ``MAP_SHARED`` mappings shared: the child's writes to an ``np.memmap(mode='r+')``,
a ``multiprocessing.shared_memory`` block or a torch tensor after ``share_memory_()`` reach the
file and the kernel's own arrays. Every shared mapping (``s`` in ``/proc/self/maps``) is replaced,
at the same address, by a private one with the same content:

* a named file (incl. /dev/shm): the same file mapped ``MAP_PRIVATE`` over it (copy-on-write, no
  copy up front, so a 1 GiB memmap costs nothing until the child writes);
* anything else (memfd, SysV shm, anonymous shared): a private copy, moved into place by ``mremap``.

A shared mapping of a device (a GPU, a frame buffer) cannot be privatised. Where the run is a shape-level
one whose child makes no call into the GPU (standin.py, standin_tf.py: CUDA or TensorFlow's GPU in the
kernel), such a mapping is fenced instead: replaced at its address by an inaccessible anonymous one, as
if the child had ended (an exit unmaps it the same way), so nothing the child does can reach the device
through it. Otherwise the dry run refuses.

What the cell can notice: once it writes through such a file mapping, the file (and any other
mapping of it) no longer shows what it wrote, as it would in a real run. So the child watches
(an audit hook, only where a file mapping was made private) for the cell opening such a file, and
``_jmp_seen_own_work`` names a file that was both written through and read another way: a crash
after that may be the jail's doing (the dry run then gives no verdict).
Joined into the probe's private module: top-level names carry the ``_jmp_`` prefix.
"""

import ctypes as _jmp_ctypes
import os as _jmp_os
import struct as _jmp_struct
import sys as _jmp_sys

_JMP_PROT = {"r": 1, "w": 2, "x": 4}
_JMP_MAP_PRIVATE = 0x02
_JMP_MAP_FIXED = 0x10
_JMP_MAP_ANONYMOUS = 0x20
_JMP_MREMAP_MAYMOVE = 1
_JMP_MREMAP_FIXED = 2
#: the permission fields of shared mappings, with the spaces around them
_JMP_SHARED_PERMS = tuple(f" {r}{w}{x}s ".encode() for r in "r-" for w in "w-" for x in "x-")
_JMP_FAILED = _jmp_ctypes.c_void_p(-1).value
#: PROCMAP_QUERY (Linux 6.11): _IOWR('f', 17, struct procmap_query), 104 bytes
_JMP_PROCMAP_QUERY = 0xC0686611
_JMP_QUERY_FORMAT = "QQQQQQQQQIIIIQQ"
_JMP_QUERY_SHARED_NEXT = 0x08 | 0x10  # PROCMAP_QUERY_VMA_SHARED | PROCMAP_QUERY_COVERING_OR_NEXT_VMA
_JMP_ENOENT = 2
#: in the child: the file mappings made private, (start, end, path), and which of those files the
#: cell opened (any mode); empty in the kernel itself
_JMP_PRIVATE_FILES: list = []
_JMP_WATCHED_NAMES: set = set()  # their base names: the audit hook's cheap first test
_JMP_OPENED: set = set()
_JMP_FENCED: list = []  # in the child: the device mappings fenced off, (start, end, path)


class _JmpRefused(Exception):
    """A shared mapping that cannot be made private: the dry run must not run."""


_jmp_libc_cache: list = []


def _jmp_libc():
    """libc with the memory calls typed, made once (the kernel makes it before the fork)."""
    if not _jmp_libc_cache:
        _jmp_libc_cache.append(_jmp_typed_libc())
    return _jmp_libc_cache[0]


def _jmp_typed_libc():
    libc = _jmp_ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = _jmp_ctypes.c_void_p
    libc.mmap.argtypes = [_jmp_ctypes.c_void_p, _jmp_ctypes.c_size_t, _jmp_ctypes.c_int,
                          _jmp_ctypes.c_int, _jmp_ctypes.c_int, _jmp_ctypes.c_long]  # fmt: skip
    libc.mremap.restype = _jmp_ctypes.c_void_p
    libc.mremap.argtypes = [_jmp_ctypes.c_void_p, _jmp_ctypes.c_size_t, _jmp_ctypes.c_size_t,
                            _jmp_ctypes.c_int, _jmp_ctypes.c_void_p]  # fmt: skip
    libc.mprotect.argtypes = [_jmp_ctypes.c_void_p, _jmp_ctypes.c_size_t, _jmp_ctypes.c_int]
    libc.munmap.argtypes = [_jmp_ctypes.c_void_p, _jmp_ctypes.c_size_t]
    return libc


def _jmp_shared(maps):
    """(start, end, prot, offset, path) of every shared mapping in ``maps`` (/proc/self/maps).

    Found with ``bytes.find`` on the eight shared permission fields rather than line by line: a
    torch kernel has thousands of mappings and the child runs on a copy-on-write heap."""
    found = []
    for perms in _JMP_SHARED_PERMS:
        at = maps.find(perms)
        while at >= 0:
            start = maps.rfind(b"\n", 0, at) + 1
            end = maps.find(b"\n", at)
            end = len(maps) if end < 0 else end
            if b" " not in maps[start:at]:  # the permissions field, right after the address range
                parts = maps[start:end].split(None, 5)
                low, high = (int(x, 16) for x in parts[0].split(b"-"))
                prot = sum(_JMP_PROT[c] for c in parts[1][:3].decode() if c in _JMP_PROT)
                path = parts[5].strip().decode("utf-8", "surrogateescape") if len(parts) > 5 else ""
                found.append((low, high, prot, int(parts[2], 16), path))
            at = maps.find(perms, end)
    return sorted(found)


def _jmp_query_shared(libc):
    """The shared mappings as ``_jmp_shared`` lists them, asked of the kernel one by one with
    PROCMAP_QUERY (only the shared ones: a few ioctls instead of rendering thousands of lines of
    /proc/self/maps); None where the kernel cannot answer (older than 6.11, a name too long)."""
    fd = _jmp_os.open("/proc/self/maps", _jmp_os.O_RDONLY | _jmp_os.O_CLOEXEC)
    found: list[tuple[int, int, int, int, str]] = []
    name = _jmp_ctypes.create_string_buffer(4096)
    query = _jmp_ctypes.create_string_buffer(_jmp_struct.calcsize(_JMP_QUERY_FORMAT))
    address = 0
    try:
        while True:
            fields_in = (len(query), _JMP_QUERY_SHARED_NEXT, address, 0, 0, 0, 0, 0, 0, 0, 0, len(name), 0)
            _jmp_struct.pack_into(_JMP_QUERY_FORMAT, query, 0, *fields_in, _jmp_ctypes.addressof(name), 0)
            if libc.ioctl(fd, _jmp_ctypes.c_ulong(_JMP_PROCMAP_QUERY), query) != 0:
                return found if _jmp_ctypes.get_errno() == _JMP_ENOENT else None
            fields = _jmp_struct.unpack_from(_JMP_QUERY_FORMAT, query, 0)
            low, high, flags, offset, name_size = fields[3], fields[4], fields[5], fields[7], fields[11]
            path = name.raw[: max(name_size - 1, 0)].decode("utf-8", "surrogateescape")
            found.append((low, high, flags & 7, offset, path))  # READABLE 1, WRITABLE 2, EXECUTABLE 4
            address = high
    finally:
        _jmp_os.close(fd)


def _jmp_find_shared(libc):
    mappings = _jmp_query_shared(libc)
    if mappings is None:
        with open("/proc/self/maps", "rb") as f:
            mappings = _jmp_shared(f.read())
    return mappings


def _jmp_privatise(maps=None, fence_devices=False):
    """Replace every shared mapping by a private one; return how many were replaced. ``maps``:
    the text of /proc/self/maps, else the kernel is asked (PROCMAP_QUERY, or that text).
    ``fence_devices``: a device's shared mapping is made inaccessible instead of refused (a
    shape-level run, which makes no call into the device)."""
    libc = _jmp_libc()
    mappings = _jmp_shared(maps) if maps is not None else _jmp_find_shared(libc)
    if not mappings:
        return 0
    for start, end, prot, offset, path in mappings:
        size = end - start
        if path.startswith("/dev/") and not path.startswith(("/dev/shm/", "/dev/zero")):
            if not fence_devices:
                raise _JmpRefused(f"the kernel maps the device {path} shared")
            _jmp_fence(libc, start, size, path)
            continue
        if (
            path.startswith("/")
            and not path.endswith(" (deleted)")
            and _jmp_remap_file(libc, start, size, prot, offset, path)
        ):
            _JMP_PRIVATE_FILES.append((start, end, path))
            continue
        _jmp_copy(libc, start, size, prot)
    if _JMP_PRIVATE_FILES:
        _JMP_WATCHED_NAMES.update(_jmp_os.path.basename(path) for _start, _end, path in _JMP_PRIVATE_FILES)
        _jmp_sys.addaudithook(_jmp_watch_opens)  # the child only: it is thrown away after the run
    return len(mappings)


def _jmp_watch_opens(event, args):
    """Audit hook: note the cell opening a file whose mapping was made private. Never raises (an
    exception here would become the cell's)."""
    if event != "open" or not args or isinstance(args[0], int):
        return
    try:
        path = _jmp_os.fsdecode(args[0])
        if _jmp_os.path.basename(path) in _JMP_WATCHED_NAMES:
            _JMP_OPENED.add(_jmp_os.path.realpath(path))
    except Exception:
        pass


def _jmp_seen_own_work():
    """A file the cell wrote through (its private mapping has dirty pages) and also read another
    way (opened it, or mapped it twice): what the cell read differs from a real run. Else ''."""
    paths = [path for _start, _end, path in _JMP_PRIVATE_FILES]
    watched = {path for path in paths if path in _JMP_OPENED or paths.count(path) > 1}
    if not watched:
        return ""
    try:
        with open("/proc/self/smaps", "rb") as f:
            smaps = f.read()
    except OSError:
        return ""
    ranges = [(start, end, path) for start, end, path in _JMP_PRIVATE_FILES if path in watched]
    current = ""
    for line in smaps.split(b"\n"):
        head = line.split(b" ", 1)[0]
        if b"-" in head and not head.endswith(b":"):
            try:
                low, high = (int(x, 16) for x in head.split(b"-"))
            except ValueError:
                continue
            current = next((path for start, end, path in ranges if low < end and start < high), "")
        elif current and line.startswith(b"Private_Dirty:") and line.split()[1] != b"0":
            how = "opened it again" if current in _JMP_OPENED else "read it through another mapping"
            return f"writing through {current}, a file mapping the jail made private, and the cell {how}"
    return ""


def _jmp_remap_file(libc, start, size, prot, offset, path):
    try:
        fd = _jmp_os.open(path, _jmp_os.O_RDONLY | _jmp_os.O_CLOEXEC)
    except OSError:
        return False
    try:
        where = libc.mmap(start, size, prot, _JMP_MAP_PRIVATE | _JMP_MAP_FIXED, fd, offset)
    finally:
        _jmp_os.close(fd)
    if where != start:
        raise _JmpRefused(f"cannot map {path} privately: {_jmp_os.strerror(_jmp_ctypes.get_errno())}")
    return True


def _jmp_fence(libc, start, size, path):
    """The device mapping at ``start`` replaced by an inaccessible private one (``PROT_NONE``)."""
    where = libc.mmap(start, size, 0, _JMP_MAP_PRIVATE | _JMP_MAP_ANONYMOUS | _JMP_MAP_FIXED, -1, 0)
    if where != start:
        raise _JmpRefused(f"cannot fence off the device mapping of {path}")
    _JMP_FENCED.append((start, start + size, path))


def _jmp_copy(libc, start, size, prot):
    fresh = libc.mmap(None, size, 1 | 2, _JMP_MAP_PRIVATE | _JMP_MAP_ANONYMOUS, -1, 0)
    if fresh in (None, _JMP_FAILED):
        raise _JmpRefused(f"no memory for a private copy of {size} bytes")
    if prot & 1:
        _jmp_ctypes.memmove(fresh, start, size)
    moved = libc.mremap(fresh, size, size, _JMP_MREMAP_MAYMOVE | _JMP_MREMAP_FIXED, start)
    if moved != start:
        libc.munmap(fresh, size)
        raise _JmpRefused(f"cannot replace a shared mapping: {_jmp_os.strerror(_jmp_ctypes.get_errno())}")
    if libc.mprotect(start, size, prot) != 0:
        raise _JmpRefused("cannot restore a mapping's protection")
