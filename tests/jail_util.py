"""Real kernels for the jail tests: one as the test's own user (root in CI), one unprivileged.

The unprivileged kernel runs under ``setpriv`` as ``nobody`` with a work folder of its own, so the
jail is shown to hold without root (no CAP_DAC_OVERRIDE, no CAP_KILL, no CAP_SYS_PTRACE) and with
it (where a user namespace would have changed what the real run may read).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def searchable_interpreter() -> Iterator[None]:
    """Let ``nobody`` reach this interpreter and its packages (e.g. under /root or a 0700 temp
    folder): the search bit (o+x, not listing) on each ancestor lacking it, restored afterwards."""
    changed: list[tuple[Path, int]] = []
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.executable, *sys.path) if p}
    try:
        for root in roots:
            for folder in [root, *root.parents]:
                try:
                    mode = folder.stat().st_mode
                except OSError:
                    continue
                if folder.is_dir() and not mode & stat.S_IXOTH and (folder, mode) not in changed:
                    changed.append((folder, mode))
                    os.chmod(folder, stat.S_IMODE(mode) | stat.S_IXOTH)
        yield
    finally:
        for folder, mode in reversed(changed):
            os.chmod(folder, stat.S_IMODE(mode))


def jail_kernels(user: str) -> Iterator[JailKernel]:
    """A module-scoped kernel as ``user`` ("root": the test's own user; "nobody": unprivileged)."""
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
        yield JailKernel(kernel, workdir, user, pid)
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


def verdict(result: dict) -> tuple:
    """A dry run's answer as (outcome, exception, line, message), for assertions and their messages."""
    return result["outcome"], result.get("exception"), result.get("line"), result.get("message")
