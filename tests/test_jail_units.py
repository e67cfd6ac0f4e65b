"""The jail's walls one at a time, in forked children of the test process (no kernel needed).

Each case forks, applies one mechanism, attempts an operation and reports through the exit status,
so the walls are shown to hold on their own: Landlock without seccomp, the seccomp filter against
arguments crafted to slip past a careless comparison (high 32 bits set), the descriptor and mapping
replacement against the parent's view.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import faulthandler
import json
import mmap
import os
import platform
import signal
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crane_lsp.kernel.agent.jail import jail_fds, jail_landlock, jail_maps, jail_seccomp
from crane_lsp.kernel.probe_install import PROBE_SOURCE

REPO = Path(__file__).resolve().parents[1]


def _in_child(body: Callable[[], int]) -> int:
    """Run ``body`` in a fork; its return value (or 99 for an exception) is the exit status."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _kill_mode_filter(**kwargs: object) -> None:
    """The real filter, with KILL_PROCESS as the blocked action (no listener needed in a test)."""
    program = jail_seccomp._jsc_build(os.getpid(), jail_seccomp._JSC_RET_KILL_PROCESS, **kwargs)  # type: ignore[arg-type]
    jail_seccomp._jsc_install(program, listener=False)


def test_landlock_alone_refuses_writes(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"

    def body() -> int:
        ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)
        if not jail_landlock._jll_restrict():
            return 77
        try:
            open(target, "w")  # noqa: SIM115
        except PermissionError:
            return 0 if Path("/etc/hostname").read_text() is not None else 2
        return 1

    code = _in_child(body)
    if code == 77:
        pytest.skip("this kernel has no Landlock")
    assert code == 0
    assert not target.exists()


@pytest.mark.parametrize(
    "attempt",
    [
        "kill_parent_high_bits",
        "open_write",
        "openat2",
        "clone3",
        "fork",
        "inherited_fd_high_bits",
        "fsetown",
        "priority",
        "raise_limit",
    ],
)
def test_seccomp_filter_cases(attempt: str, tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "30"])  # a failing filter must not kill the test process
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r, w = os.pipe()  # an "inherited" pipe: poisoned like the kernel's sockets

    def body() -> int:
        _kill_mode_filter(shared_fds=[w], pinned_fds=[w])
        if attempt == "kill_parent_high_bits":  # the kernel reads pid_t: the high bits are ignored
            libc.syscall(62, ctypes.c_long(victim.pid + (1 << 32)), signal.SIGTERM)
        elif attempt == "open_write":
            os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
        elif attempt == "openat2":  # flags hidden in a struct: answered ENOSYS, never run
            rc = libc.syscall(437, -100, b"/tmp", None, 0)
            return 0 if rc == -1 and ctypes.get_errno() == errno.ENOSYS else 1
        elif attempt == "clone3":
            rc = libc.syscall(435, None, 0)
            return 0 if rc == -1 and ctypes.get_errno() == errno.ENOSYS else 1
        elif attempt == "fork":
            libc.fork()
        elif attempt == "inherited_fd_high_bits":
            libc.syscall(1, ctypes.c_long(w + (1 << 32)), b"x", 1)
        elif attempt == "fsetown":
            import fcntl

            fcntl.fcntl(r, fcntl.F_SETOWN, victim.pid)
        elif attempt == "priority":  # real-time priority as root would starve the machine
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        elif attempt == "raise_limit":
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_AS)  # reading passes
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return 3  # still alive: the filter let it through

    code = _in_child(body)
    if attempt in ("openat2", "clone3"):
        assert code == 0
    else:
        assert code == -signal.SIGSYS, f"{attempt}: exit {code}"
    os.set_blocking(r, False)
    with pytest.raises(BlockingIOError):
        os.read(r, 1)  # nothing reached the pipe
    assert not (tmp_path / "f").exists()
    assert victim.poll() is None, "the other process must still run"
    victim.kill()
    victim.wait()
    os.close(r)
    os.close(w)


def test_the_filter_lets_ordinary_work_through(tmp_path: Path) -> None:
    source = tmp_path / "data.txt"
    source.write_text("abc")

    def body() -> int:
        _kill_mode_filter()
        import threading

        box: list[str] = []
        t = threading.Thread(target=lambda: box.append(source.read_text()))
        t.start()
        t.join()
        r, w = os.pipe()
        os.write(w, b"ok")
        os.kill(os.getpid(), 0)
        return 0 if box == ["abc"] and os.read(r, 2) == b"ok" else 1

    assert _in_child(body) == 0


def test_descriptors_and_mappings_are_replaced(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    book = tmp_path / "book.txt"
    book.write_text("one\ntwo\n")
    appender = open(log, "a")  # noqa: SIM115
    reader = open(book)  # noqa: SIM115
    reader.readline()
    shared = mmap.mmap(-1, 4096)
    shared[:2] = b"ok"

    def body() -> int:
        result = jail_fds._jfd_neutralise(set())
        with open("/proc/self/maps", "rb") as f:
            jail_maps._jmp_privatise(f.read())
        if appender.fileno() not in result.written:
            return 1
        with contextlib.suppress(OSError):  # a read-only reopen: the filter would stop this first
            os.write(appender.fileno(), b"x")
        os.lseek(reader.fileno(), 0, os.SEEK_SET)
        shared[:2] = b"no"
        return 0 if shared[:2] == b"no" else 2

    assert _in_child(body) == 0
    assert log.read_text() == ""
    assert reader.tell() == 4 and reader.readline() == "two\n"
    assert shared[:2] == b"ok"
    appender.close()
    reader.close()
    shared.close()


def test_a_forecast_filter_patched_with_the_pid_is_the_filter_built_for_it() -> None:
    sets = {"shared_fds": [5, 9], "written_fds": [7], "pinned_fds": [5, 7, 9, 11], "handover_fd": 11}
    notify = jail_seccomp._JSC_RET_USER_NOTIF
    _key, prepared = jail_seccomp._jsc_prepare(notify, *sets.values())  # type: ignore[arg-type]
    for pid in (2, 4242, 4_000_000):
        assert jail_seccomp._jsc_for_pid(prepared, pid) == jail_seccomp._jsc_build(pid, notify, **sets)  # type: ignore[arg-type]


def _probe_module() -> Any:
    """The probe + jail + sandbox as the kernel gets them, loaded into a private module here."""
    module = types.ModuleType("_crane_probe_test")
    exec(compile(PROBE_SOURCE, "<crane-probe>", "exec"), module.__dict__)
    return module


def _dry_run(module: Any, source: str) -> dict[str, Any]:
    result: dict[str, Any] = module.dry_run(json.dumps({"source": source, "budget_s": 5.0}))._data
    return result


def test_without_user_notification_a_blocked_call_kills_the_child(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    module = _probe_module()
    module._jsc_probe_listener = lambda: False  # a kernel older than 5.0: SECCOMP_RET_KILL_PROCESS
    result = _dry_run(module, f"import os\ntry:\n    os.unlink({str(victim)!r})\nexcept OSError:\n    pass")
    assert result["outcome"] == "blocked" and "killed" in result["message"], result
    assert victim.read_text() == "keep"


def test_no_unconfined_fallback_where_the_jail_cannot_be_built(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _probe_module()
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    result = _dry_run(module, "x = 1")
    assert result["outcome"] == "unavailable" and "x86_64" in result["message"], result
    monkeypatch.undo()
    module._jsc_install = lambda program, listener: (_ for _ in ()).throw(
        module._JscUnavailable("seccomp() failed: Operation not permitted")
    )
    result = _dry_run(module, "open('/tmp/crane-never-written', 'w')")
    assert result["outcome"] == "unavailable" and "seccomp() failed" in result["message"], result
    assert not os.path.exists("/tmp/crane-never-written")


def test_shared_mappings_asked_of_the_kernel_are_those_in_proc_maps(tmp_path: Path) -> None:
    backing = tmp_path / "shared.bin"
    backing.write_bytes(b"x" * 8192)
    with open(backing, "r+b") as f, mmap.mmap(f.fileno(), 8192) as on_file, mmap.mmap(-1, 1 << 20) as anon:
        libc = jail_maps._jmp_libc()
        asked = jail_maps._jmp_query_shared(libc)
        if asked is None:
            pytest.skip("PROCMAP_QUERY needs Linux 6.11; the jail reads /proc/self/maps instead")
        with open("/proc/self/maps", "rb") as maps:
            listed = jail_maps._jmp_shared(maps.read())
        assert asked == listed
        assert any(path == str(backing) for *_, path in asked)
        assert on_file[:1] == b"x" and len(anon) == 1 << 20


def test_pool_libraries_from_the_loader_are_those_in_proc_maps() -> None:
    """In a fork (the calling thread alone in its process) the loader is asked; with other threads
    the maps are read: the same libraries either way."""
    pytest.importorskip("numpy")
    from crane_lsp.kernel.agent.jail import jail_threads

    with open("/proc/self/maps", "rb") as maps:
        listed = {os.path.realpath(p) for p in jail_threads._jth_pool_libraries(maps.read())}
    assert listed, "numpy's BLAS keeps a pool"
    assert {os.path.realpath(p.path) for p in jail_threads._jth_pools()} == listed  # pytest's threads

    def body() -> int:
        if not jail_threads._jth_alone() or jail_threads._jth_loader() is None:
            return 1
        return 0 if {os.path.realpath(p.path) for p in jail_threads._jth_pools()} == listed else 2

    assert _in_child(body) == 0


POOLS_FROM_THREADS = """
import sys, threading, time
import numpy
from crane_lsp.kernel.agent.jail import jail_threads
sys.setswitchinterval(1e-6)  # the GIL changes hands as often as it can
until = time.monotonic() + 3.0
def ask():
    while time.monotonic() < until:
        jail_threads._jth_pools()
threads = [threading.Thread(target=ask) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print("done")
"""


def test_thread_pools_asked_from_several_threads_never_deadlock() -> None:
    """The shortened runs' helpers set up their forks side by side in the kernel. Had they asked
    the loader, whose callback into Python may give the GIL away while the loader's lock is held,
    one would wait for that lock holding the GIL: the kernel deadlocked so in CI. In a subprocess
    (a deadlock must not take the test's worker with it)."""
    pytest.importorskip("numpy")
    try:
        done = subprocess.run(
            [sys.executable, "-c", POOLS_FROM_THREADS], capture_output=True, text=True, timeout=60, cwd=REPO
        )
    except subprocess.TimeoutExpired:
        pytest.fail("three threads asking for the thread pools deadlocked")
    assert done.stdout.strip() == "done", done.stderr[-2000:]


def test_openblas_keeps_the_kernels_count_and_starts_no_worker() -> None:
    """OpenBLAS's setter restarts its pool after a fork, and a fresh worker spins ~0.1 s on a CPU:
    the jail never calls it. A pthreads OpenBLAS keeps the kernel's count (its pool restarts on the
    first threaded product, as in the kernel: a BLAS cell at the kernel's speed; fewer on a busy
    machine), any other is set to one in place; either way no worker exists before the cell, and
    a product then finishes."""
    np = pytest.importorskip("numpy")
    from crane_lsp.kernel.agent.jail import jail_threads

    a = np.random.default_rng(0).random((600, 600))
    (a @ a).sum()  # the kernel has used its pool before the fork
    pools = [p for p in jail_threads._jth_pools() if "openblas" in p.path and p.counters is not None]
    if not pools:
        pytest.skip("numpy here is not built on OpenBLAS")
    counts = [p.counters[1].value for p in pools]

    def body() -> int:
        spare = jail_threads._jth_spare_cpus()  # the idle CPUs: fewer threads on a busy machine
        touched = jail_threads._jth_single_thread()
        threads = len(os.listdir("/proc/self/task"))
        for pool, count in zip(pools, counts, strict=True):
            kept = pool.parallel is not None and pool.parallel() == 1
            expected = max(1, min(count, spare)) if kept else 1
            if pool.counters[1].value not in (expected, 1) or (pool.base in touched) != (
                pool.counters[1].value == 1
            ):
                return 1
        product = a @ a
        return 0 if threads == 1 and product.shape == (600, 600) else 2

    assert _in_child(body) == 0


def _maps_line_naming(region: mmap.mmap, path: str) -> bytes:
    """The /proc/self/maps line of ``region`` as if a device file were mapped there (a GPU's
    ``/dev/nvidia0`` cannot be had here; the fence acts on the address range the line gives)."""
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    return f"{start:x}-{start + len(region):x} rw-s 00000000 00:05 4242 {path}\n".encode()


@pytest.mark.parametrize("fence", [False, True], ids=["refused", "fenced"])
def test_a_device_mapping_is_refused_or_fenced_off(fence: bool) -> None:
    """A shared device mapping cannot be made private: refused, or (a shape-level run, which makes
    no call into the device) replaced by an inaccessible mapping, so that touching it kills only
    the child and the parent's mapping keeps its content."""
    region = mmap.mmap(-1, 8192)
    region[:2] = b"ok"
    line = _maps_line_naming(region, "/dev/nvidia0")

    def body() -> int:
        try:
            jail_maps._jmp_privatise(line, fence_devices=fence)
        except jail_maps._JmpRefused as exc:
            return 3 if "maps the device /dev/nvidia0 shared" in str(exc) else 4
        if jail_maps._JMP_FENCED[-1][2] != "/dev/nvidia0":
            return 5
        faulthandler.disable()  # the fault is expected: no stack dump in the test's output
        _ = region[0]  # the fence: a fault here
        return 6

    assert _in_child(body) == (-signal.SIGSEGV if fence else 3)
    assert region[:2] == b"ok"
    region.close()
