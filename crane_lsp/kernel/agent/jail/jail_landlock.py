"""The dry run's second wall: Landlock, where the kernel has it. STANDARD LIBRARY ONLY (ctypes).

A ruleset that handles every file-changing right (and, from ABI 4, TCP bind/connect; from ABI 6,
signals and abstract unix sockets outside the child) and grants none of them anywhere: reading
stays allowed, changing anything is refused by the LSM even if a syscall slipped past seccomp.
Unlike a user namespace it changes no permission semantics, so a root kernel still reads what it
reads. Joined into the probe's private module: top-level names carry the ``_jll_`` prefix.
"""

import ctypes as _jll_ctypes
import struct as _jll_struct

_JLL_CREATE, _JLL_RESTRICT = 444, 446  # x86_64 landlock_create_ruleset, landlock_restrict_self
_JLL_FS_ABI1 = sum(1 << bit for bit in (0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # all but READ_FILE/DIR
_JLL_FS_REFER = 1 << 13  # ABI 2
_JLL_FS_TRUNCATE = 1 << 14  # ABI 3
_JLL_FS_IOCTL_DEV = 1 << 15  # ABI 5
_JLL_NET_TCP = 1 | 2  # ABI 4: BIND_TCP, CONNECT_TCP
_JLL_SCOPES = 1 | 2  # ABI 6: ABSTRACT_UNIX_SOCKET, SIGNAL


_jll_libc_cache: list = []


def _jll_libc():
    """libc, made once (the kernel makes it before the fork)."""
    if not _jll_libc_cache:
        libc = _jll_ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = _jll_ctypes.c_long
        _jll_libc_cache.append(libc)
    return _jll_libc_cache[0]


def _jll_restrict():
    """Apply the ruleset to this process (no_new_privs must be set); return the ABI, 0 if none."""
    libc = _jll_libc()
    abi = libc.syscall(_JLL_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return 0
    fs = _JLL_FS_ABI1
    if abi >= 2:
        fs |= _JLL_FS_REFER
    if abi >= 3:
        fs |= _JLL_FS_TRUNCATE
    if abi >= 5:
        fs |= _JLL_FS_IOCTL_DEV
    if abi >= 6:
        attr = _jll_struct.pack("QQQ", fs, _JLL_NET_TCP, _JLL_SCOPES)
    elif abi >= 4:
        attr = _jll_struct.pack("QQ", fs, _JLL_NET_TCP)
    else:
        attr = _jll_struct.pack("Q", fs)
    buffer = _jll_ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_JLL_CREATE, buffer, len(attr), 0)
    if ruleset < 0:
        return 0
    try:
        if libc.syscall(_JLL_RESTRICT, int(ruleset), 0) != 0:
            return 0
    finally:
        libc.close(int(ruleset))
    return int(abi)
