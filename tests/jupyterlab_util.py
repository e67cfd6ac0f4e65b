"""A real Jupyter server (``jupyter server`` or ``jupyter lab``) for the JupyterLab tests.

Every Jupyter directory is private (config, data, runtime), the server listens on 127.0.0.1 with a
token, and the runtime directory can be shared with a crane-lsp process under test, which then finds
the server's ``jpserver-*.json`` and its kernels' ``kernel-<id>.json`` exactly as in real use.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.ports import free_port


def write_notebook(path: Path, sources: list[str]) -> None:
    cells = [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [], "source": src}
        for i, src in enumerate(sources)
    ]
    for cell in cells:
        cell["execution_count"] = None
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb), encoding="utf-8")


#: ceiling (not a delay) for a kernel's first answer: a kernel's first start on a cold machine (a fresh
#: venv, first imports of ipykernel and its dependencies, a loaded CPU) can take minutes; warm, ~1 s
KERNEL_READY_S = 240.0


def wait_kernel_ready(client: Any, timeout: float = KERNEL_READY_S) -> None:
    """Until the kernel answers ``kernel_info`` and its IOPub messages reach ``client``.

    jupyter_client's ``wait_for_ready`` without its heartbeat check, which can fail while ipykernel 7
    still starts. Without this, an execute sent to a kernel still starting can be handled before the
    IOPub subscription is in place: its status messages are lost and ``execute_interactive`` waits
    for output until it raises TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        client.kernel_info()
        try:
            reply = client.get_shell_msg(timeout=1)
        except queue.Empty:
            reply = None
        if reply is not None and reply["msg_type"] == "kernel_info_reply":
            try:
                client.get_iopub_msg(timeout=1)
                break
            except queue.Empty:
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel did not answer kernel_info within {timeout:g} s")
    while True:  # what IOPub still holds belongs to kernel_info
        try:
            client.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            return


#: every Jupyter process this test worker started, for the logs of a failed test (``logs_for_failure``)
STARTED: list[JupyterProc] = []
#: the characters of each log a failed test's report shows (its end: where the server and crane-lsp
#: said what happened last)
LOG_TAIL_CHARS = 6_000


def logs_for_failure(since: float) -> str:
    """The log ends of the Jupyter servers a failed test may have used: those still running, and
    those stopped since ``since`` (time.monotonic()) — a test often stops its own in a ``finally``."""
    parts = []
    for proc in STARTED:
        if proc.proc is None and proc.stopped_at < since:
            continue
        where = proc.dirs / f"{proc.app}.log"
        parts.append(f"--- jupyter {proc.app} on port {proc.port} ({where}), its end:\n")
        parts.append(proc.log_text()[-LOG_TAIL_CHARS:])
    return "\n".join(parts)


@dataclass
class JupyterProc:
    root: Path
    dirs: Path
    app: str = "server"  # "server" | "lab" | "notebook"
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    proc: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)
    stopped_at: float = 0.0  # time.monotonic() at stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def runtime_dir(self) -> Path:
        return self.dirs / "runtime"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
        env.update(
            JUPYTER_CONFIG_DIR=str(self.dirs / "config"),
            JUPYTER_DATA_DIR=str(self.dirs / "data"),
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
            JUPYTER_PLATFORM_DIRS="1",
            IPYTHONDIR=str(self.dirs / "ipython"),
            XDG_RUNTIME_DIR=str(self.dirs / "xdg"),
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 180.0) -> None:
        for sub in ("config", "data", "runtime", "ipython", "xdg"):
            (self.dirs / sub).mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            {"server": "jupyter_server", "lab": "jupyterlab", "notebook": "notebook"}[self.app],
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.allow_remote_access=False",
        ]
        cmd += self.extra_args
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        if self.app != "server":
            cmd.append("--LabApp.news_url=")  # no network
        log = open(self.dirs / f"{self.app}.log", "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(cmd, env=self.env(), cwd=self.root, stdout=log, stderr=subprocess.STDOUT)
        STARTED.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter {self.app} exited: {self.log_text()[-3000:]}")
            try:
                self.api("GET", "api/status")
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"jupyter {self.app} did not start: {self.log_text()[-3000:]}")

    def log_text(self) -> str:
        try:
            return (self.dirs / f"{self.app}.log").read_text(errors="replace")
        except OSError:
            return ""

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def start_session(self, notebook: str) -> dict[str, Any]:
        body = {"path": notebook, "type": "notebook", "kernel": {"name": "python3"}}
        return dict(self.api("POST", "api/sessions", body))

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            for session in self.api("GET", "api/sessions", timeout=5):
                self.api("DELETE", f"api/sessions/{session['id']}", timeout=10)
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None
        self.stopped_at = time.monotonic()
