"""Real kernels for the jail tests: one as the test's own user (root in CI), one unprivileged.

The unprivileged kernel runs under ``setpriv`` as ``nobody`` with a work folder of its own, so the
jail is shown to hold without root (no CAP_DAC_OVERRIDE, no CAP_KILL, no CAP_SYS_PTRACE) and with
it (where a user namespace would have changed what the real run may read).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import TestKernel, start_test_kernel, stop_test_kernel
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from crane_lsp.kernel.probe_install import call_expression, install_code

NOBODY = 65534


@dataclass
class JailKernel:
    """A kernel with the probe installed, its work folder, and who it runs as."""

    kernel: TestKernel
    workdir: Path
    user: str
    pid: int

    def own(self, path: Path) -> Path:
        """Make a file the test created (an empty one if missing) belong to the kernel's user."""
        if not path.exists():
            path.touch()
        if self.user == "nobody":
            os.chown(path, NOBODY, NOBODY)
        return path

    def run(self, code: str, **kwargs: Any) -> dict[str, Any]:
        return self.kernel.run(code, **kwargs)

    def eval(self, expr: str) -> Any:
        return self.kernel.eval(expr)

    def call(self, function: str, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """A probe entry point through the raw protocol (a silent execute: the generation stays)."""
        client = self.kernel.client
        while client.iopub_channel.msg_ready():
            client.get_iopub_msg(timeout=1)
        expr = call_expression(function, payload)
        msg_id = client.execute("", silent=True, store_history=False, user_expressions={"r": expr})
        reply = self.kernel._reply(msg_id, timeout)
        value = reply["content"]["user_expressions"]["r"]
        assert value["status"] == "ok", value
        result: dict[str, Any] = value["data"]["application/json"]
        return result

    def prepare(self, **extra: Any) -> dict[str, Any]:
        """``dry_run_prepare``: a jailed child forked ahead, waiting for the next dry run."""
        return self.call("dry_run_prepare", extra)

    def dry_run(
        self, source: str, budget_s: float = 3.0, prepared: bool = False, **extra: Any
    ) -> dict[str, Any]:
        """The probe's dry_run through the raw protocol (no static screen: the jail alone); with
        ``prepared``, through a child prepared just before (and the result must say it was)."""
        if prepared:
            answer = self.prepare(**{k: v for k, v in extra.items() if k == "memory_mb"})
            assert answer["outcome"] == "prepared", answer
        result = self.call("dry_run", {"source": source, "budget_s": budget_s, **extra}, budget_s + 30)
        assert result.get("prepared", False) is prepared, result
        return result

    def iopub_messages(self, seconds: float = 0.3) -> list[dict[str, Any]]:
        out = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                out.append(self.kernel.client.get_iopub_msg(timeout=0.05))
            except Exception:
                continue
        return out

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return self.eval("1 + 1") == "2"


def _start_unprivileged(workdir: Path) -> tuple[TestKernel, subprocess.Popen[bytes]]:
    conn = workdir / "kernel.json"
    write_connection_file(str(conn), ip="127.0.0.1")
    os.chown(conn, NOBODY, NOBODY)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "MPLCONFIGDIR": str(workdir / ".mpl"),
    }
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    argv += [sys.executable, "-m", "ipykernel_launcher", "-f", str(conn)]
    log = open(workdir.parent / f"{workdir.name}.log", "wb")  # noqa: SIM115 - the kernel's lifetime
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    client = BlockingKernelClient()
    client.load_connection_file(str(conn))
    deadline = time.monotonic() + 120
    while True:  # a client without a manager calls a kernel whose heartbeat is not up yet dead
        if proc.poll() is not None:
            raise RuntimeError(f"the unprivileged kernel exited: {Path(log.name).read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", client.hb_port), 1):
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the unprivileged kernel did not open its ports")
        time.sleep(0.1)
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
    except RuntimeError as exc:
        proc.kill()
        raise RuntimeError(f"{exc}: {Path(log.name).read_text()[-2000:]}") from exc
    return TestKernel(SimpleNamespace(connection_file=str(conn)), client), proc  # type: ignore[arg-type]


#: Who holds the search bits ``searchable_interpreter`` added, across processes: pytest-xdist runs
#: several test modules with unprivileged kernels at once, and the first to finish must not take the
#: bit from a folder another still needs (its kernel's next import would fail). One JSON file, under
#: an exclusive lock: {folder: {"mode": the mode before, "holders": [pids]}}.
_SEARCH_HOLDERS = Path(tempfile.gettempdir()) / "crane-tests-searchable.json"


@contextlib.contextmanager
def _holders() -> Iterator[dict[str, Any]]:
    """The holders' record, read and written back under an exclusive lock."""
    import fcntl
    import json

    with open(f"{_SEARCH_HOLDERS}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(_SEARCH_HOLDERS.read_text())
        yield record
        _SEARCH_HOLDERS.write_text(json.dumps(record))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def searchable_interpreter() -> Iterator[None]:
    """Let ``nobody`` reach this interpreter and its packages (e.g. under /root or a 0700 temp
    folder): the search bit (o+x, not listing) on each ancestor lacking it, restored afterwards by
    the last process that needs it (``_SEARCH_HOLDERS``; a holder that died no longer counts)."""
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.executable, *sys.path) if p}
    folders = list(dict.fromkeys(f for root in roots for f in [root, *root.parents]))
    me = os.getpid()
    with _holders() as record:
        for folder in folders:
            key = str(folder)
            if key in record:  # another process added the bit: hold it too
                record[key]["holders"].append(me)
                continue
            try:
                mode = folder.stat().st_mode
            except OSError:
                continue
            if folder.is_dir() and not mode & stat.S_IXOTH:
                os.chmod(folder, stat.S_IMODE(mode) | stat.S_IXOTH)
                record[key] = {"mode": stat.S_IMODE(mode), "holders": [me]}
    try:
        yield
    finally:
        with _holders() as record:
            for key in sorted(record, key=len, reverse=True):  # deepest first, as they were opened
                entry = record[key]
                holders = list(entry["holders"])
                if me in holders:
                    holders.remove(me)  # one release: this process may hold it for two modules
                holders = [pid for pid in holders if pid == me or _alive(pid)]
                if holders:
                    entry["holders"] = holders
                    continue
                with contextlib.suppress(OSError):
                    os.chmod(key, entry["mode"])
                del record[key]


def jail_kernels(user: str, warm: Callable[[JailKernel], object] | None = None) -> Iterator[JailKernel]:
    """A module-scoped kernel as ``user`` ("root": the test's own user; "nobody": unprivileged),
    ``warm``-ed before it is handed out (libraries imported once, their folders made)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"crane-jail-{user}-"))
    proc = None
    if user == "nobody":
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            pytest.skip("an unprivileged kernel needs root and setpriv to start it")
        os.chmod(workdir, 0o755)
        os.chown(workdir, NOBODY, NOBODY)
        searchable = searchable_interpreter()
        searchable.__enter__()
        try:
            kernel, proc = _start_unprivileged(workdir)
        except Exception:
            searchable.__exit__(None, None, None)
            shutil.rmtree(workdir, ignore_errors=True)
            Path(f"{workdir}.log").unlink(missing_ok=True)
            raise
    else:
        kernel = start_test_kernel(workdir)
    msg_id = kernel.client.execute(install_code(), silent=True, store_history=False)
    assert kernel._reply(msg_id, 60)["content"]["status"] == "ok"
    pid = int(kernel.eval("__import__('os').getpid()"))
    try:
        jk = JailKernel(kernel, workdir, user, pid)
        if warm is not None:
            warm(jk)
        yield jk
    finally:
        if proc is None:
            stop_test_kernel(kernel)
        else:
            kernel.client.stop_channels()
            proc.kill()
            proc.wait(10)
            searchable.__exit__(None, None, None)
        shutil.rmtree(workdir, ignore_errors=True)
        Path(f"{workdir}.log").unlink(missing_ok=True)


def _processes() -> Iterator[tuple[int, list[str]]]:
    """``(pid, the fields of /proc/<pid>/stat after the command name)`` for every process now."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), fields


def no_process_in_group(pgid: int) -> bool:
    """No process is left in the dry run's process group (no grandchild outlived it)."""
    return all(int(fields[2]) != pgid for _pid, fields in _processes())


def settles(condition: Callable[[], bool], within_s: float = 3.0) -> bool:
    """Whether ``condition()`` holds within ``within_s`` (a child's teardown is not instant)."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def children_of(pid: int) -> list[tuple[int, str]]:
    """``(pid, state)`` of every process whose parent is ``pid`` (a zombie shows as ``Z``)."""
    return [(child, fields[0]) for child, fields in _processes() if int(fields[1]) == pid]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def real_run(jk: JailKernel, cell: str) -> tuple[str, str | None, int | None]:
    """The cell run for real in the kernel: (outcome, exception, line of the cell's frame)."""
    content = jk.run(cell, allow_error=True, timeout=300)
    if content["status"] != "error":
        return "completed", None, None
    text = _ANSI.sub("", "\n".join(content["traceback"]))
    found = re.search(r"Cell In\[\d+\], line (\d+)", text)
    return "raised", content["ename"], int(found.group(1)) if found else None


def verdict(result: dict) -> tuple:
    """A dry run's answer as (outcome, exception, line, message), for assertions and their messages."""
    return result["outcome"], result.get("exception"), result.get("line"), result.get("message")


#: What multiprocessing and joblib leave on the machine: named semaphores (/dev/shm) and worker folders.
WORKER_TEMP = re.compile(r"^(pymp-|joblib|loky-|tmp.*joblib)")


def machine_leftovers() -> set[str]:
    """The entries of /dev/shm and the worker folders of /tmp that exist now (paths)."""
    shm = {f"/dev/shm/{n}" for n in os.listdir("/dev/shm")}
    return shm | {f"/tmp/{n}" for n in os.listdir("/tmp") if WORKER_TEMP.match(n)}


def assert_nothing_left_since(before: set[str], settle_s: float = 10.0) -> None:
    """No entry of ``machine_leftovers`` that was not there ``before`` stays. A dry run's copy never
    cleans up (it is killed), so what it left stays; other test modules' real runs (pytest-xdist
    workers, running at the same time) make such entries too, but only while their pools live,
    so a new entry is given ``settle_s`` to go before it counts."""
    deadline = time.monotonic() + settle_s
    while True:
        new = machine_leftovers() - before
        if not new:
            return
        assert time.monotonic() < deadline, f"left on the machine: {sorted(new)}"
        time.sleep(0.1)


def set_up_kernels(setup: str) -> Iterator[JailKernel]:
    """A module-scoped kernel of the test's own user with ``setup`` run in it (a fixture's body)."""
    for kernel in jail_kernels("root"):
        kernel.run(setup)
        yield kernel


def forced_dry_run(jk: JailKernel, cell: str, budget_s: float) -> dict[str, Any]:
    """A shape-level dry run forced from the payload (``CRANE_DRYRUN_STANDIN=force``), as the server and
    ``crane-lsp check`` send it; it must say it ran forced."""
    result = jk.dry_run(cell, budget_s=budget_s, standin="force")
    assert result.get("standin", {}).get("why") == "forced", result
    return result
