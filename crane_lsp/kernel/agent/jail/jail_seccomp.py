"""The dry run's first wall: a seccomp-BPF filter, assembled here. STANDARD LIBRARY ONLY (ctypes).

Joined with the probe and the dry run into one private module (see ``probe_install.py``), so every
top-level name carries the ``_jsc_`` prefix.

The filter lets through what computing needs (reading, memory, threads, pipes of the child's own)
and stops every syscall that could act outside the forked child. A stopped syscall does not fail:
it is parked by the kernel (``SECCOMP_RET_USER_NOTIF``) and the parent, which holds the listener,
reads which syscall it was and kills the child before it runs another instruction — so the first
blocked operation ends the run, whatever the cell would have done with an error. Where the kernel
has no user notification, the same syscalls kill the child outright (``SECCOMP_RET_KILL_PROCESS``).
A few syscalls that libc probes and falls back from (``clone3``, ``openat2``, ``close_range``,
io_uring, syscalls newer than this table) answer ``ENOSYS`` instead.
"""

import ctypes as _jsc_ctypes
import os as _jsc_os
import platform as _jsc_platform
import struct as _jsc_struct

#: x86_64 syscall numbers (asm/unistd_64.h), ``name:number``; the only architecture this filter knows.
_JSC_TABLE = """
    read:0 write:1 open:2 close:3 ioctl:16 pread64:17 pwrite64:18 readv:19 writev:20 dup2:33
    sendfile:40 socket:41 connect:42 accept:43 sendto:44 recvfrom:45 sendmsg:46 recvmsg:47
    bind:49 listen:50 socketpair:53 clone:56 fork:57 vfork:58 execve:59 kill:62 semget:64
    semop:65 semctl:66 shmdt:67 msgget:68 msgsnd:69 msgrcv:70 msgctl:71 shmget:29 shmat:30
    shmctl:31 fcntl:72 flock:73 fsync:74 fdatasync:75 truncate:76 ftruncate:77 rename:82
    mkdir:83 rmdir:84 creat:85 link:86 unlink:87 symlink:88 chmod:90 fchmod:91 chown:92
    fchown:93 lchown:94 ptrace:101 syslog:103 setpriority:141 sched_setparam:142 setrlimit:160
    sched_setscheduler:144 rt_sigqueueinfo:129 utime:132 mknod:133 uselib:134 vhangup:153
    pivot_root:155 _sysctl:156 adjtimex:159 chroot:161 acct:163 settimeofday:164 mount:165
    umount2:166 swapon:167 swapoff:168 reboot:169 sethostname:170 setdomainname:171 iopl:172
    ioperm:173 init_module:175 delete_module:176 quotactl:179 nfsservctl:180 setxattr:188
    lsetxattr:189 fsetxattr:190 removexattr:197 lremovexattr:198 fremovexattr:199 tkill:200
    sched_setaffinity:203 lookup_dcookie:212 remap_file_pages:216 clock_settime:227
    epoll_wait:232 epoll_ctl:233 tgkill:234 utimes:235 mq_open:240 mq_unlink:241
    mq_timedsend:242 mq_timedreceive:243 mq_notify:244 mq_getsetattr:245 kexec_load:246
    add_key:248 request_key:249 keyctl:250 ioprio_set:251 migrate_pages:256 openat:257
    mkdirat:258 mknodat:259 fchownat:260 futimesat:261 unlinkat:263 renameat:264 linkat:265
    symlinkat:266 fchmodat:268 splice:275 tee:276 sync_file_range:277 vmsplice:278
    move_pages:279 utimensat:280 epoll_pwait:281 fallocate:285 accept4:288 dup3:292 preadv:295
    pwritev:296 rt_tgsigqueueinfo:297 perf_event_open:298 recvmmsg:299 fanotify_init:300
    fanotify_mark:301 prlimit64:302 open_by_handle_at:304 clock_adjtime:305 sendmmsg:307
    setns:308 process_vm_writev:311 finit_module:313 sched_setattr:314 renameat2:316
    kexec_file_load:320 bpf:321 execveat:322 userfaultfd:323 copy_file_range:326 preadv2:327
    pwritev2:328 semtimedop:220 io_uring_setup:425 io_uring_enter:426 io_uring_register:427
    open_tree:428 move_mount:429 fsopen:430 fsconfig:431 fsmount:432 fspick:433
    pidfd_send_signal:424 clone3:435 close_range:436 openat2:437 pidfd_getfd:438
    process_madvise:440 epoll_pwait2:441 mount_setattr:442 quotactl_fd:443 memfd_secret:447
    process_mrelease:448 fchmodat2:452 setxattrat:463 removexattrat:466 open_tree_attr:467
    file_setattr:469 unshare:272 shutdown:48 getsockname:51 getpeername:52 setsockopt:54
    getsockopt:55
"""
_JSC_X86_64 = {name: int(number) for name, _, number in (pair.partition(":") for pair in _JSC_TABLE.split())}
#: syscalls newer than 447 that only read or wait (futex_waitv, cachestat, futex_*, statmount,
#: listmount, lsm_get_self_attr, lsm_list_modules, mseal, getxattrat, listxattrat, file_getattr)
_JSC_NEW_READERS = (449, 451, 454, 455, 456, 457, 458, 459, 461, 462, 464, 465, 468)
_JSC_FIRST_UNKNOWN = 448

_JSC_AUDIT_ARCH_X86_64 = 0xC000003E
_JSC_X32_BIT = 0x40000000
_JSC_RET_KILL_PROCESS = 0x80000000
_JSC_RET_ERRNO = 0x00050000
_JSC_RET_USER_NOTIF = 0x7FC00000
_JSC_RET_ALLOW = 0x7FFF0000
_JSC_ENOSYS = 38
_JSC_EBADF = 9
_JSC_ENOTSOCK = 88
#: harmless on any socket of the child's own; on a descriptor the jail replaced, they see /dev/null
_JSC_REPLACED_SOCKET_CALLS = ("shutdown", "getsockname", "getpeername", "setsockopt", "getsockopt")
_JSC_O_WRITES = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000  # WRONLY RDWR CREAT TRUNC APPEND TMPFILE
_JSC_CLONE_THREAD = 0x00010000
_JSC_AF_OK = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6 (creating one is harmless; connecting is not)
_JSC_F_LOCKS = (6, 7, 37, 38)  # F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW
#: F_SETOWN, F_SETSIG, F_SETOWN_EX: SIGIO (or any signal) to another process; F_SETLEASE: stalls
#: other processes' opens of a file until the lease breaks
_JSC_F_ROUTING = (8, 10, 15, 1024)
#: ioctls that act outside the child whatever the descriptor: TIOCSTI/TIOCLINUX type into a
#: terminal, FIOSETOWN/SIOCSPGRP/TIOCSPGRP route signals, FS_IOC_SETFLAGS (64/32-bit),
#: FS_IOC_FSSETXATTR and FS_IOC_SETVERSION change a file's attributes through a read-only handle
_JSC_IOCTL_OUTSIDE = (0x5412, 0x541C, 0x8901, 0x8902, 0x5410, 0x40086602, 0x40046602, 0x401C5820,
                      0x40087602, 0x40047602)  # fmt: skip

#: what a stopped syscall attempted, for the verdict
_JSC_WHAT = {
    "writes a file": "open openat creat truncate ftruncate fallocate write pwrite64 writev pwritev "
    "pwritev2 fsync fdatasync sync_file_range copy_file_range splice tee vmsplice sendfile",
    "deletes a file or folder": "unlink unlinkat rmdir",
    "renames a file": "rename renameat renameat2",
    "creates a folder, link or device": "mkdir mkdirat link linkat symlink symlinkat mknod mknodat",
    "changes permissions, ownership or times": "chmod fchmod fchmodat fchmodat2 chown fchown lchown "
    "fchownat setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr setxattrat "
    "removexattrat utime utimes utimensat futimesat file_setattr",
    "signals another process": "kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal",
    "runs a program": "execve execveat",
    "starts a process": "fork vfork clone",
    "talks to the network or another process": "socket connect bind listen accept accept4 sendto "
    "sendmsg sendmmsg recvfrom recvmsg recvmmsg",
    "uses a descriptor shared with the kernel": "read readv pread64 preadv preadv2 ioctl epoll_ctl "
    "epoll_wait epoll_pwait epoll_pwait2 dup2 dup3 flock fcntl",
    "reaches into another process": "ptrace process_vm_writev pidfd_getfd process_madvise "
    "migrate_pages move_pages sched_setaffinity",
    "changes its priority or limits (it runs niced and capped)": "setpriority sched_setparam "
    "sched_setscheduler sched_setattr ioprio_set setrlimit prlimit64",
    "uses shared memory or message queues": "shmget shmat shmctl semget semop semctl msgget msgsnd "
    "msgrcv msgctl semtimedop mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr",
    "changes the system": "mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig "
    "fsmount fspick mount_setattr open_tree_attr setns unshare bpf perf_event_open keyctl add_key "
    "request_key reboot swapon swapoff init_module finit_module delete_module kexec_load "
    "kexec_file_load acct settimeofday clock_settime clock_adjtime adjtimex sethostname "
    "setdomainname iopl ioperm quotactl quotactl_fd syslog vhangup fanotify_init fanotify_mark "
    "open_by_handle_at lookup_dcookie nfsservctl uselib _sysctl remap_file_pages userfaultfd",
}
#: the argument that names the path, for the verdict
_JSC_PATH_ARG = {
    "open": 0, "creat": 0, "truncate": 0, "unlink": 0, "rmdir": 0, "rename": 0, "mkdir": 0,
    "link": 0, "symlink": 1, "mknod": 0, "chmod": 0, "chown": 0, "lchown": 0, "utime": 0,
    "utimes": 0, "setxattr": 0, "lsetxattr": 0, "removexattr": 0, "lremovexattr": 0, "execve": 0,
    "openat": 1, "unlinkat": 1, "renameat": 1, "renameat2": 1, "mkdirat": 1, "linkat": 1,
    "symlinkat": 2, "mknodat": 1, "fchmodat": 1, "fchmodat2": 1, "fchownat": 1, "utimensat": 1,
    "futimesat": 1, "execveat": 1,
}  # fmt: skip


class _JscUnavailable(Exception):
    """seccomp cannot confine the child here: the dry run refuses instead of running unconfined."""


class _JscProgram:
    """A BPF program under assembly: ``jeq``/``jset`` jump over one instruction, ``ja`` to labels."""

    def __init__(self):
        self.code = []  # [opcode, jt, jf, k, label-or-None]
        self.labels = {}

    def ld(self, offset):
        self.code.append([0x20, 0, 0, offset, None])  # BPF_LD | BPF_W | BPF_ABS

    def ret(self, value):
        self.code.append([0x06, 0, 0, value, None])  # BPF_RET | BPF_K

    def skip_unless(self, op, k):
        """Run the next instruction only when ``A op k``; else jump over it."""
        self.code.append([{"eq": 0x15, "ge": 0x35, "set": 0x45}[op], 0, 1, k, None])

    def skip_if(self, op, k):
        self.code.append([{"eq": 0x15, "ge": 0x35, "set": 0x45}[op], 1, 0, k, None])

    def check(self, arg, values, then, otherwise, op="eq"):
        """Load argument ``arg``; return ``then`` when ``A op value`` for one of ``values``, else
        ``otherwise`` (None: go on with the next instruction)."""
        self.ld(_jsc_arg(arg))
        for value in values:
            self.skip_unless(op, value)
            self.ret(then)
        if otherwise is not None:
            self.ret(otherwise)

    def zero_only(self, arg, otherwise):
        """Allow when the whole 64-bit argument ``arg`` is 0 (both halves), else ``otherwise``."""
        for high in (False, True):
            self.ld(_jsc_arg(arg, high))
            self.skip_if("eq", 0)
            self.ret(otherwise)
        self.ret(_JSC_RET_ALLOW)

    def goto(self, label):
        self.code.append([0x05, 0, 0, 0, label])  # BPF_JMP | BPF_JA

    def label(self, name):
        self.labels[name] = len(self.code)

    def assemble(self):
        out = []
        for index, (op, jt, jf, k, label) in enumerate(self.code):
            if label is not None:
                k = self.labels[label] - index - 1
            out.append(_jsc_struct.pack("HBBI", op, jt, jf, k & 0xFFFFFFFF))
        if len(out) > 4096:
            raise _JscUnavailable(f"the filter has {len(out)} instructions (at most 4096)")
        return b"".join(out)


def _jsc_arg(i, high=False):
    return 16 + 8 * i + (4 if high else 0)


def _jsc_build(pid, notify, shared_fds=(), written_fds=(), pinned_fds=(), handover_fd=-1):
    """The filter for child ``pid``.

    ``shared_fds``: inherited non-files now on /dev/null (sockets, pipes, epoll, eventfd): any use
    is stopped. ``written_fds``: inherited writable files now reopened read-only: writing or locking
    is stopped. ``pinned_fds`` (all of those plus the handover socket): ``close`` pretends to succeed
    and ``dup2`` onto them is stopped, so their numbers never come back to mean something else.
    ``handover_fd``: the one socket on which ``sendmsg`` may pass the listener to the parent.
    Descriptor and pid arguments are compared on their low 32 bits only, as the kernel reads them.
    """
    nr = _JSC_X86_64
    p = _JscProgram()
    p.ld(4)
    p.skip_if("eq", _JSC_AUDIT_ARCH_X86_64)
    p.ret(_JSC_RET_KILL_PROCESS)  # another ABI (i386 int 0x80): nothing here is allowed
    p.ld(0)
    p.skip_unless("set", _JSC_X32_BIT)
    p.ret(_JSC_RET_KILL_PROCESS)
    # fast path: the hottest harmless syscalls allowed first (mmap munmap brk futex ...)
    for hot in (9, 11, 12, 202, 10, 13, 14, 24, 228, 230, 39, 186, 35, 5, 4, 6, 262, 8, 7):
        p.skip_unless("eq", hot)
        p.ret(_JSC_RET_ALLOW)
    shared = sorted(set(shared_fds))
    written = sorted(set(written_fds))
    pinned = sorted(set(pinned_fds))

    def fd_rule(name, arg, fds, action=notify):
        if not fds:
            return
        then = name if name in ("ioctl", "sendto", "sendmsg") else None  # its argument rule follows
        label = f"fd:{arg}:{','.join(map(str, fds))}:{action}:{then}"  # one body per distinct check
        p.skip_unless("eq", nr[name])
        p.goto(label)
        if label not in bodies:
            bodies[label] = (arg, fds, action, then)

    bodies: dict[str, tuple[int, list[int], int, str | None]] = {}
    # descriptors inherited from the kernel
    for name in ("read", "readv", "pread64", "preadv", "preadv2", "recvfrom", "recvmsg", "recvmmsg",
                 "ioctl", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2"):  # fmt: skip
        fd_rule(name, 0, shared)
    for name in ("write", "writev", "pwrite64", "pwritev", "pwritev2", "ftruncate", "fallocate",
                 "fsync", "fdatasync", "sync_file_range", "flock", "sendto", "sendmsg",
                 "sendmmsg", "sendfile", "vmsplice"):  # fmt: skip
        fd_rule(name, 0, shared + written)
    fd_rule("copy_file_range", 2, shared + written)
    fd_rule("splice", 2, shared + written)
    fd_rule("tee", 1, shared + written)
    # socket calls on a replaced descriptor: the parent answers them as /dev/null does and notes
    # that the cell saw the jail's work (``jail_answers``); without a listener the filter answers
    for name in _JSC_REPLACED_SOCKET_CALLS:
        fd_rule(name, 0, shared, notify if notify == _JSC_RET_USER_NOTIF else _JSC_RET_ERRNO | _JSC_ENOTSOCK)
    fd_rule("close", 0, pinned, _JSC_RET_ERRNO | 0)
    fd_rule("dup2", 1, pinned)
    fd_rule("dup3", 1, pinned)
    # fcntl: signal routing and leases on any descriptor, locks on inherited ones
    p.skip_unless("eq", nr["fcntl"])
    p.goto("fcntl")
    # arguments that decide
    for name, label in (("open", "open"), ("openat", "openat"), ("clone", "clone"),
                        ("socket", "socket"), ("sendto", "sendto"), ("sendmsg", "sendmsg"),
                        ("kill", "kill"), ("rt_sigqueueinfo", "tgid"), ("tgkill", "tgid"),
                        ("rt_tgsigqueueinfo", "tgid"), ("tkill", "tgid"), ("prlimit64", "prlimit"),
                        ("sched_setaffinity", "self0"), ("ioctl", "ioctl"),
                        ("migrate_pages", "self0"), ("move_pages", "self0")):  # fmt: skip
        p.skip_unless("eq", nr[name])
        p.goto(label)
    enosys = ("clone3", "openat2", "close_range", "io_uring_setup", "io_uring_enter",
              "io_uring_register", "memfd_secret", "process_mrelease")  # fmt: skip
    for name in enosys:
        p.skip_unless("eq", nr[name])
        p.ret(_JSC_RET_ERRNO | _JSC_ENOSYS)
    decided = {"open", "openat", "clone", "socket", "sendto", "sendmsg", "kill", "rt_sigqueueinfo",
               "tgkill", "rt_tgsigqueueinfo", "tkill", "prlimit64", "sched_setaffinity", "ioctl",
               "migrate_pages", "move_pages", "fcntl", "read", "readv",
               "pread64", "preadv", "preadv2", "recvfrom", "recvmsg", "recvmmsg", "epoll_ctl",
               "epoll_wait", "epoll_pwait", "epoll_pwait2", "write", "writev", "pwrite64",
               "pwritev", "pwritev2", "ftruncate", "fallocate", "fsync", "fdatasync",
               "sync_file_range", "flock", "sendfile", "vmsplice", "copy_file_range", "splice",
               "tee", "close", "dup2", "dup3", "socketpair", "shmdt", *enosys,
               *_JSC_REPLACED_SOCKET_CALLS}  # fmt: skip
    for name in sorted(nr, key=lambda n: nr[n]):
        if name not in decided:
            p.skip_unless("eq", nr[name])
            p.ret(notify)
    # syscalls newer than this table: the readers pass, the rest answer ENOSYS (libc falls back)
    for number in _JSC_NEW_READERS:
        p.skip_unless("eq", number)
        p.ret(_JSC_RET_ALLOW)
    p.skip_unless("ge", _JSC_FIRST_UNKNOWN)
    p.ret(_JSC_RET_ERRNO | _JSC_ENOSYS)
    p.ret(_JSC_RET_ALLOW)

    for label, (arg, fds, action, then) in bodies.items():
        p.label(label)
        p.check(arg, fds, action, _JSC_RET_ALLOW if then is None else None)
        if then is not None:
            p.goto(then)
    p.label("fcntl")
    p.check(1, _JSC_F_ROUTING, notify, None)
    if shared or written:
        for cmd in _JSC_F_LOCKS:
            p.skip_unless("eq", cmd)
            p.goto("fcntl:fd")
    p.ret(_JSC_RET_ALLOW)
    if shared or written:
        p.label("fcntl:fd")
        p.check(0, shared + written, notify, _JSC_RET_ALLOW)
    for label, arg in (("open", 1), ("openat", 2)):
        p.label(label)
        p.check(arg, [_JSC_O_WRITES], notify, _JSC_RET_ALLOW, op="set")
    p.label("clone")
    p.check(0, [_JSC_CLONE_THREAD], _JSC_RET_ALLOW, notify, op="set")  # a thread of the child
    p.label("socket")  # netlink, packet, vsock...: they talk to the system without connect()
    p.check(0, _JSC_AF_OK, _JSC_RET_ALLOW, notify)
    p.label("sendto")  # send() on a connected socket of the child's own (a socketpair) only
    p.zero_only(4, notify)
    p.label("sendmsg")
    p.check(0, [handover_fd & 0xFFFFFFFF], _JSC_RET_ALLOW, notify)
    p.label("kill")  # kill(self), kill(0) and kill(-self) reach the child's own group only; sig 0 tests
    p.check(1, [0], _JSC_RET_ALLOW, None)
    p.check(0, (pid, 0, -pid & 0xFFFFFFFF), _JSC_RET_ALLOW, notify)
    p.label("prlimit")  # reading limits passes; setting them (raising the memory cap as root) does not
    p.zero_only(2, notify)
    p.label("tgid")
    p.check(0, [pid], _JSC_RET_ALLOW, notify)
    p.label("self0")
    p.check(0, (pid, 0), _JSC_RET_ALLOW, notify)
    p.label("ioctl")
    p.check(1, _JSC_IOCTL_OUTSIDE, notify, _JSC_RET_ALLOW)
    return p.assemble()


_JSC_PID_MARK = 0x7FFFFFF0  # stands for the child's pid in a filter built before the fork
_jsc_prepared: dict[tuple, tuple] = {}  # the last filters built, by descriptor sets (rarely change)


def _jsc_prepare(notify, shared_fds, written_fds, pinned_fds, handover_fd):
    """The filter for a child not forked yet: built (or taken from the cache) with a placeholder
    pid, plus the offsets of the pid constants, so the child only patches a few words."""
    key = (notify, tuple(shared_fds), tuple(written_fds), tuple(sorted(pinned_fds)), handover_fd)
    found = _jsc_prepared.get(key)
    if found is None:
        program = _jsc_build(_JSC_PID_MARK, notify, shared_fds, written_fds, pinned_fds, handover_fd)
        marks = (_JSC_PID_MARK, -_JSC_PID_MARK & 0xFFFFFFFF)
        slots = [
            (at, k == marks[1])
            for at in range(0, len(program), 8)
            for op, _jt, _jf, k in [_jsc_struct.unpack_from("HBBI", program, at)]
            if op == 0x15 and k in marks
        ]
        while len(_jsc_prepared) >= 2:  # a cold dry run's descriptors and a prepared child's
            del _jsc_prepared[next(iter(_jsc_prepared))]
        found = _jsc_prepared[key] = (program, slots)
    return key, found


def _jsc_for_pid(prepared, pid):
    """A prepared filter with the child's pid written into its pid constants."""
    program, slots = prepared
    patched = bytearray(program)
    for at, negative in slots:
        _jsc_struct.pack_into("I", patched, at + 4, (-pid if negative else pid) & 0xFFFFFFFF)
    return bytes(patched)


class _JscFprog(_jsc_ctypes.Structure):
    _fields_ = [("len", _jsc_ctypes.c_ushort), ("filter", _jsc_ctypes.c_char_p)]


def _jsc_check_platform():
    """Why seccomp cannot confine here, or None."""
    if _jsc_platform.system() != "Linux":
        return "the dry-run jail needs Linux (seccomp)"
    if _jsc_platform.machine() not in ("x86_64", "AMD64"):
        return f"the dry-run jail knows the x86_64 syscall table only, not {_jsc_platform.machine()}"
    return None


_jsc_libc_cache: list = []


def _jsc_libc():
    """libc, loaded once (in the kernel, before the fork: a fresh CDLL costs the child ~0.4 ms)."""
    if not _jsc_libc_cache:
        libc = _jsc_ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = _jsc_ctypes.c_long
        libc.prctl, libc.ioctl  # noqa: B018 - resolved now, not in each child
        _jsc_libc_cache.append(libc)
    return _jsc_libc_cache[0]


def _jsc_install(program, listener):
    """Install ``program`` (bytes); return the listener fd when ``listener``, else -1."""
    libc = _jsc_libc()
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise _JscUnavailable(f"PR_SET_NO_NEW_PRIVS failed: {_jsc_os.strerror(_jsc_ctypes.get_errno())}")
    buffer = _jsc_ctypes.create_string_buffer(program, len(program))
    prog = _JscFprog(len(program) // 8, _jsc_ctypes.cast(buffer, _jsc_ctypes.c_char_p))
    # SECCOMP_FILTER_FLAG_NEW_LISTENER; and WAIT_KILLABLE_RECV (Linux 5.19): once the parent has read
    # a parked call, only a fatal signal interrupts it, so an unlink the parent answers cannot fail
    # with EINTR, which the real call never does, and the path it read stays in the child's memory
    flags = (8 | 32) if listener else 0
    fd = libc.syscall(317, 1, flags, _jsc_ctypes.byref(prog))  # seccomp(SET_MODE_FILTER)
    if fd < 0 and listener and _jsc_ctypes.get_errno() == 22:  # EINVAL: a kernel before 5.19
        fd = libc.syscall(317, 1, 8, _jsc_ctypes.byref(prog))
    if fd < 0:
        raise _JscUnavailable(f"seccomp() failed: {_jsc_os.strerror(_jsc_ctypes.get_errno())}")
    return fd if listener else -1


_jsc_listener_known: list[bool] = []  # the answer, once asked: the kernel cannot change it


def _jsc_probe_listener():
    """Whether this kernel supports seccomp user notification (checked without installing)."""
    if not _jsc_listener_known:
        _jsc_listener_known.append(_jsc_ask_listener())
    return _jsc_listener_known[0]


def _jsc_ask_listener():
    libc = _jsc_libc()
    # SECCOMP_GET_ACTION_AVAIL (2) answers 0 for an action the kernel knows
    action = _jsc_ctypes.c_uint32(_JSC_RET_USER_NOTIF)
    return libc.syscall(317, 2, 0, _jsc_ctypes.byref(action)) == 0


def _jsc_int(value):
    """A descriptor argument as the kernel reads it: the low 32 bits, signed."""
    return _jsc_ctypes.c_int32(value & 0xFFFFFFFF).value


def _jsc_addfd(listener, notif_id, fd, flags):
    """``SECCOMP_IOCTL_NOTIF_ADDFD``: ``fd`` becomes a descriptor of the parked child (close-on-exec);
    with ``flags`` SECCOMP_ADDFD_FLAG_SEND (2, Linux 5.14) it is also the parked call's result."""
    request = _jsc_struct.pack("QIIII", notif_id, flags, fd, 0, 0o2000000)  # O_CLOEXEC
    buffer = _jsc_ctypes.create_string_buffer(request, len(request))
    return _jsc_libc().ioctl(listener, _jsc_ctypes.c_ulong(0x40182103), buffer) >= 0


def _jsc_read(pid, address, size):
    """Bytes from the parked child's memory (empty when unreadable): the answering rules read
    paths with it (``jail_answers``, ``jail_semaphores``)."""
    try:
        fd = _jsc_os.open(f"/proc/{pid}/mem", _jsc_os.O_RDONLY | _jsc_os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return _jsc_os.pread(fd, size, address)
    except (OSError, OverflowError, ValueError):
        return b""
    finally:
        _jsc_os.close(fd)


def _jsc_path(pid, address):
    """A path argument, exactly as the kernel would read it (None when unreadable or unterminated)."""
    raw = _jsc_read(pid, address, 4096).split(b"\0", 1)
    return raw[0].decode("utf-8", "surrogateescape") if len(raw) == 2 and raw[0] else None


def _jsc_read_string(pid, address, limit=512):
    """A NUL-terminated string from the stopped child's memory (best effort, for the verdict)."""
    try:
        fd = _jsc_os.open(f"/proc/{pid}/mem", _jsc_os.O_RDONLY)
    except OSError:
        return None
    try:
        data = _jsc_os.pread(fd, limit, address)
    except (OSError, OverflowError, ValueError):
        return None
    finally:
        _jsc_os.close(fd)
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def _jsc_describe(pid, number, args):
    """``blocked`` message for a parked syscall: what it attempted, with the path where it has one."""
    name = next((n for n, v in _JSC_X86_64.items() if v == number), f"syscall {number}")
    what = next((w for w, names in _JSC_WHAT.items() if name in names.split()), "is not allowed")
    detail = ""
    if name in _JSC_PATH_ARG:
        path = _jsc_read_string(pid, args[_JSC_PATH_ARG[name]])
        if path is not None:
            detail = repr(path)
    elif name in ("kill", "tgkill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        target = _jsc_ctypes.c_int32(args[0] & 0xFFFFFFFF).value
        detail = f"pid {target}"
    elif name in ("fork", "vfork", "clone"):
        what = "starts a process"
    elif name in ("connect", "bind", "sendto"):
        detail = _jsc_address(pid, *((args[1], args[2]) if name != "sendto" else (args[4], args[5])))
    return f"{what}: {name}({detail})"


def _jsc_address(pid, address, size):
    """A socket address in the stopped child's memory, for the verdict: a path, @abstract, ip:port."""
    try:
        fd = _jsc_os.open(f"/proc/{pid}/mem", _jsc_os.O_RDONLY)
    except OSError:
        return ""
    try:
        raw = _jsc_os.pread(fd, min(size, 128), address) if size > 2 else b""
    except (OSError, OverflowError, ValueError):
        return ""
    finally:
        _jsc_os.close(fd)
    family = _jsc_struct.unpack_from("H", raw)[0] if len(raw) >= 2 else -1
    if family == 1:  # AF_UNIX: a path, or an abstract name after a NUL
        path = raw[2:]
        if path[:1] == b"\0":
            return repr("@" + path[1:].split(b"\0", 1)[0].decode("utf-8", "replace"))
        return repr(path.split(b"\0", 1)[0].decode("utf-8", "replace"))
    if family == 2 and len(raw) >= 8:  # AF_INET
        port = _jsc_struct.unpack_from("!H", raw, 2)[0]
        return f"{'.'.join(str(b) for b in raw[4:8])}:{port}"
    if family == 10 and len(raw) >= 24:  # AF_INET6
        port = _jsc_struct.unpack_from("!H", raw, 2)[0]
        return f"[{':'.join(raw[8:24].hex()[i : i + 4] for i in range(0, 32, 4))}]:{port}"
    return ""
