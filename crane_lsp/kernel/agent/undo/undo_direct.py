"""An array the cell changed in place, written back from the copy's memory: STANDARD LIBRARY ONLY,
joined after ``undo_hold.py``.

The held copy is a fork: an ndarray's bytes before the cell sit in the copy at the very address the
kernel's array still uses (same object, same buffer, same shape and dtype). ``process_vm_readv``
reads them chunk by chunk into a small scratch buffer, and only the chunks that differ are written
into the kernel's array: no pickling, no pipe, no second copy of the array, and the pages the cell
did not write are never touched (touching them would first copy them, copy-on-write, while the copy
lives). The array keeps its identity, so every other reference sees the old contents again.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.dryrun import _sb_sys

_UDD_CHUNK = 4 * 2**20


def _udd_eligible(was, current):
    """Whether ``current`` is the array fingerprinted as ``was`` before the cell, with the same
    buffer, shape and dtype, plain bytes (no objects), contiguous and writeable."""
    numpy = _sb_sys.modules.get("numpy")
    if numpy is None or type(current) is not numpy.ndarray or not was or not was.get("data"):
        return False
    if list(current.shape) != was.get("shape") or str(current.dtype) != was.get("dtype"):
        return False
    if current.dtype.hasobject or not current.flags.c_contiguous or not current.flags.writeable:
        return False
    return bool(current.__array_interface__["data"][0] == was["data"])


def _udd_restore(pid, address, current):
    """Write the copy's bytes at ``address`` back into ``current`` where they differ; False when a
    read fails (the array may then be partly written: the caller restores it whole)."""
    try:
        import ctypes

        numpy = _sb_sys.modules["numpy"]
        read = ctypes.CDLL(None, use_errno=True).process_vm_readv
        read.restype = ctypes.c_ssize_t
        flat = current.reshape(-1).view(numpy.uint8)
        words = flat[: flat.size - flat.size % 8].view(numpy.uint64)  # compared 8 bytes at a time
        scratch = numpy.empty(_UDD_CHUNK // 8, numpy.uint64)
        local = (ctypes.c_size_t * 2)()  # struct iovec {void *base; size_t len}
        remote = (ctypes.c_size_t * 2)()
        local[0] = scratch.__array_interface__["data"][0]
        for start in range(0, flat.size, _UDD_CHUNK):
            n = min(_UDD_CHUNK, flat.size - start)
            local[1] = n
            remote[0], remote[1] = address + start, n
            if read(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) != n:
                return False
            whole, tail = divmod(n, 8)
            ours, theirs = words[start // 8 : start // 8 + whole], scratch[:whole]
            if not numpy.array_equal(ours, theirs):
                ours[...] = theirs
            if tail:  # the last few bytes of an array whose size is not a multiple of 8
                flat[start + n - tail : start + n] = scratch.view(numpy.uint8)[n - tail : n]
        return True
    except Exception:
        return False
