"""A real Jupyter Server whose kernels run as another user, reached only through its API and token.

Why another user: a kernel behind someone else's server has its connection file in a runtime dir crane
does not use (and normally cannot read); the only way in is the server's REST API and kernel websocket.
That user cannot run an interpreter under ``/root`` (the dev venv's pyenv), so it gets its own venv built
from Debian's ``/usr/bin/python3`` in ``/opt/crane-remote-venv`` (ipykernel, jupyter_server, pandas,
numpy from PyPI), kept across runs: the build is skipped when the venv already imports them all.

Run as a script to build the venv ahead of the tests: ``python -m tests.remote_server_util``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.ports import free_port

USER = "crane-remote"
VENV = Path(os.environ.get("CRANE_REMOTE_VENV", "/opt/crane-remote-venv"))
BASE_PYTHON = "/usr/bin/python3"
PACKAGES = ["ipykernel", "jupyter_server", "pandas", "numpy"]
_IMPORTS = "import ipykernel, jupyter_server, pandas, numpy"
_STAMP = VENV / ".crane-remote-packages"


def ensure_user() -> pwd.struct_passwd:
    """The unprivileged user the server runs as (created once, with a home of its own)."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        return pwd.getpwnam(USER)


def venv_ready() -> bool:
    python = VENV / "bin" / "python"
    if not python.exists() or not _STAMP.exists() or _STAMP.read_text() != " ".join(PACKAGES):
        return False
    return subprocess.run([str(python), "-c", _IMPORTS], capture_output=True).returncode == 0


def ensure_venv() -> Path:
    """The remote user's interpreter; builds the venv (minutes, once) when missing or incomplete."""
    if venv_ready():
        return VENV / "bin" / "python"
    if not Path(BASE_PYTHON).exists():
        raise RuntimeError(f"{BASE_PYTHON} is missing: install Debian's python3 and python3-venv")
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([BASE_PYTHON, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *PACKAGES], check=True)
    _STAMP.write_text(" ".join(PACKAGES))
    for root, dirs, files in os.walk(VENV):  # readable by everyone (umask may have been strict)
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                extra = 0o055 if name in dirs else 0o044
                os.chmod(path, os.stat(path).st_mode | extra)
    os.chmod(VENV, 0o755)
    return VENV / "bin" / "python"


@dataclass
class RemoteServer:
    """A ``jupyter server`` run as ``USER`` on 127.0.0.1:``port`` with ``token``; restartable on its port."""

    port: int
    token: str
    root: Path
    gateway_legacy: bool = False  # force the legacy JSON framing (as a server in gateway mode does)
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    extra_args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> None:
        user = ensure_user()
        python = ensure_venv()
        home = Path(user.pw_dir)
        env = {
            "PATH": f"{VENV / 'bin'}:/usr/bin:/bin",
            "HOME": str(home),
            "USER": USER,
            "LANG": "C.UTF-8",
            "JUPYTER_RUNTIME_DIR": str(home / ".crane-remote-runtime"),
            "JUPYTER_CONFIG_DIR": str(home / ".crane-remote-config"),
            "JUPYTER_DATA_DIR": str(home / ".crane-remote-data"),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
        args = [
            str(python), "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
            "--port-retries=0", f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={self.token}",
            *self.extra_args,
        ]  # fmt: skip
        if self.gateway_legacy:
            args.append("--ZMQChannelsWebsocketConnection.kernel_ws_protocol=")
        self.log_path = self.root.parent / f"server-{self.port}.log"
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it open
        self.proc = subprocess.Popen(
            args, cwd=self.root, env=env, user=user.pw_uid, group=user.pw_gid, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited: {self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise RuntimeError(f"jupyter server did not start within {timeout:g} s: {self.log_tail()}")

    def stop(self) -> None:
        """Stop the server (SIGTERM: it shuts its kernels down, as a real restart does)."""
        if self.proc is None:
            return
        with _suppress():
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def remove(self) -> None:
        """Stop for good and delete the folder ``make_root`` made (its log beside the root)."""
        self.stop()
        if self.root.parent.name.startswith("crane-remote-"):
            shutil.rmtree(self.root.parent, ignore_errors=True)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path else ""

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def start_kernel(self) -> str:
        answer = self.api("POST", "/api/kernels", {"name": "python3"})
        assert isinstance(answer, dict)
        return str(answer["id"])

    def connection_file(self, kernel_id: str) -> Path:
        """The kernel's connection file in the remote user's runtime dir: for the tests' own observer
        only (as root it can read it); crane never gets this path."""
        return Path(ensure_user().pw_dir) / ".crane-remote-runtime" / f"kernel-{kernel_id}.json"


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], ProcessLookupError | OSError)  # type: ignore[arg-type]


#: what "the kernel's state" means for the trace-free checks: names, execution count, history
STATE_EXPR = (
    "repr((sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count,"
    " len(In), len(get_ipython().history_manager.input_hist_raw)))"
)
#: the global ``random`` state (its position and a few words)
RNG_EXPR = "repr((__import__('random').getstate()[1][-1], __import__('random').getstate()[1][:4]))"


class Observer:
    """The test's own eyes on a remote kernel, through its connection file (ZeroMQ, never the server's
    websocket, which would nudge the kernel with ``kernel_info``). It only evaluates ``user_expressions``
    silently, so it moves nothing it measures; ``run`` is a user cell, for setting up state."""

    def __init__(self, connection_file: Path) -> None:
        from jupyter_client.blocking.client import BlockingKernelClient

        self.client = BlockingKernelClient()
        self.client.load_connection_file(str(connection_file))
        self.client.start_channels()  # no wait_for_ready: its kernel_info would move ``random``

    def _reply(self, msg_id: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.client.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.01))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def eval(self, expr: str, timeout: float = 60.0) -> str:
        msg_id = self.client.execute("", silent=True, store_history=False, user_expressions={"v": expr})
        value = self._reply(msg_id, timeout)["content"]["user_expressions"]["v"]
        if value["status"] != "ok":
            raise RuntimeError(f"{value['ename']}: {value['evalue']}")
        return str(value["data"]["text/plain"])

    def state(self) -> str:
        """Names, execution count, history and the ``random`` state."""
        return self.eval(STATE_EXPR) + self.eval(RNG_EXPR)

    def state_but_rng(self) -> str:
        return self.eval(STATE_EXPR)

    def rng(self) -> str:
        return self.eval(RNG_EXPR)

    def run(self, code: str, timeout: float = 120.0) -> dict[str, Any]:
        msg_id = self.client.execute(code, allow_stdin=False)
        content: dict[str, Any] = self._reply(msg_id, timeout)["content"]
        return content

    def start(self, code: str) -> str:
        """Start a user cell without waiting (a busy kernel); its msg_id."""
        return str(self.client.execute(code, allow_stdin=False))

    def wait(self, msg_id: str, timeout: float = 60.0) -> dict[str, Any]:
        return dict(self._reply(msg_id, timeout)["content"])

    def close(self) -> None:
        self.client.stop_channels()


class TcpProxy:
    """A TCP forwarder on 127.0.0.1:``port`` to ``target_port`` (a reverse proxy in front of the server,
    as JupyterHub's): ``stop`` drops every connection and the port, ``start`` takes the same port again."""

    def __init__(self, target_port: int, port: int | None = None) -> None:
        self.target_port = target_port
        self.port = port or free_port()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        # the test's loop may close with the proxy's connections open
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for w in list(self._writers):
                w.close()
            self._writers.clear()
            await self._server.wait_closed()
            self._server = None


def make_root(label: str = "server") -> Path:
    """A notebook root the remote user owns (its kernels start there), in a fresh folder under /tmp that
    it can reach (pytest's own tmp dirs are private to root)."""
    user = ensure_user()
    parent = Path(tempfile.mkdtemp(prefix=f"crane-remote-{label}-", dir="/tmp"))
    os.chmod(parent, 0o755)
    root = parent / "root"
    root.mkdir()
    os.chown(root, user.pw_uid, user.pw_gid)
    return root


def new_token() -> str:
    return secrets.token_hex(16)


if __name__ == "__main__":
    ensure_user()
    print(ensure_venv(), file=sys.stderr)
