"""Connection-file discovery: runtime directories, liveness, and a Jupyter server's /api/sessions.

The server is a real HTTP server on 127.0.0.1 speaking the Jupyter Server sessions JSON; the kernel
files point at the real conftest kernel (alive) or at ports nobody listens on (dead).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from crane_lsp.kernel.connection import (
    ConnectionNotFound,
    discover,
    find_for_notebook,
    kernel_alive,
    list_kernel_files,
    list_servers,
    newest_kernel_file,
    read_connection_info,
    runtime_dirs,
    server_sessions,
)
from tests.conftest import TestKernel
from tests.ports import free_port

TOKEN = "secret-token-for-tests"


def _dead_file(path: Path) -> Path:
    ports = {f"{n}_port": free_port() for n in ("shell", "iopub", "stdin", "control", "hb")}
    path.write_text(json.dumps({**ports, "ip": "127.0.0.1", "key": "k", "transport": "tcp"}))
    return path


def _touch(path: Path, mtime: float) -> None:
    os.utime(path, (mtime, mtime))


def test_read_connection_info_errors(tmp_path: Path) -> None:
    with pytest.raises(ConnectionNotFound, match="does not exist"):
        read_connection_info(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConnectionNotFound, match="not readable JSON"):
        read_connection_info(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(ConnectionNotFound, match="not a kernel connection file"):
        read_connection_info(tmp_path / "other.json")


def test_kernel_alive(kernel: TestKernel, tmp_path: Path) -> None:
    assert kernel_alive(read_connection_info(kernel.connection_file)) is True
    assert kernel_alive(read_connection_info(_dead_file(tmp_path / "kernel-dead.json"))) is False
    assert kernel_alive({"shell_port": 1, "pid": os.getpid()}) is True
    assert kernel_alive({"shell_port": 1, "ip": "10.1.2.3"}) is None  # remote: cannot tell cheaply


def test_runtime_dirs_include_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert tmp_path / "jupyter" / "runtime" in runtime_dirs()


def test_newest_live_kernel_file_wins(kernel: TestKernel, tmp_path: Path) -> None:
    jupyter_dir, vscode_dir = tmp_path / "jupyter", tmp_path / "xdg"
    jupyter_dir.mkdir()
    vscode_dir.mkdir()
    old_live = jupyter_dir / "kernel-1111.json"
    shutil.copy(kernel.connection_file, old_live)
    _touch(old_live, 1_000_000)
    new_live = vscode_dir / "kernel-v3abc.json"
    shutil.copy(kernel.connection_file, new_live)
    _touch(new_live, 2_000_000)
    dead = _dead_file(jupyter_dir / "kernel-dead.json")  # newest of all, but nobody listens
    _touch(dead, 3_000_000)
    (jupyter_dir / "kernel-broken.json").write_text("{")
    _touch(jupyter_dir / "kernel-broken.json", 500_000)
    dirs = [jupyter_dir, vscode_dir]
    assert list_kernel_files(dirs) == [new_live, old_live]
    assert list_kernel_files(dirs, alive_only=False)[0] == dead
    assert newest_kernel_file(dirs) == new_live
    assert discover(dirs=dirs) == new_live
    assert discover(str(old_live), dirs=dirs) == old_live
    assert discover("kernel-1111.json", dirs=dirs) == old_live  # bare name: looked up in runtime dirs
    with pytest.raises(ConnectionNotFound, match="does not exist"):
        discover(str(tmp_path / "missing.json"), dirs=dirs)
    with pytest.raises(ConnectionNotFound, match="no running Jupyter kernel"):
        discover(dirs=[tmp_path / "empty"])


class _SessionsHandler(BaseHTTPRequestHandler):
    sessions: list[dict[str, Any]] = []
    requests: list[str] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        if self.headers.get("Authorization") != f"token {TOKEN}":
            self.send_response(403)
            self.end_headers()
            return
        if self.path.split("?")[0] != "/api/sessions":
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps(type(self).sessions).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def jupyter_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SessionsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _session(path: str, kernel_id: str) -> dict[str, Any]:
    return {
        "id": f"s-{kernel_id}",
        "path": path,
        "name": Path(path).name,
        "type": "notebook",
        "kernel": {"id": kernel_id, "name": "python3", "execution_state": "idle", "connections": 1},
        "notebook": {"path": path, "name": Path(path).name},
    }


def test_server_sessions_map_notebook_to_kernel_file(
    kernel: TestKernel, tmp_path: Path, jupyter_server: ThreadingHTTPServer
) -> None:
    runtime, root = tmp_path / "runtime", tmp_path / "root"
    runtime.mkdir()
    (root / "sub").mkdir(parents=True)
    notebook = root / "sub" / "analysis.ipynb"
    notebook.write_text("{}")
    port = jupyter_server.server_address[1]
    _SessionsHandler.sessions = [_session("other.ipynb", "aaaa"), _session("sub/analysis.ipynb", "bbbb")]
    _SessionsHandler.requests = []
    server_file = {
        "url": f"http://127.0.0.1:{port}/",
        "token": TOKEN,
        "root_dir": str(root),
        "pid": os.getpid(),
    }
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(server_file))
    # a stale server file (dead pid) is ignored
    (runtime / "jpserver-999999.json").write_text(json.dumps({**server_file, "pid": 2**22 + 12345}))
    target = runtime / "kernel-bbbb.json"
    shutil.copy(kernel.connection_file, target)
    newer = runtime / "kernel-zzzz.json"
    shutil.copy(kernel.connection_file, newer)
    _touch(target, 1_000_000)
    _touch(newer, 2_000_000)

    servers = list_servers([runtime])
    assert len(servers) == 1 and servers[0].root_dir == root
    sessions = server_sessions(servers[0])
    assert [s.kernel_id for s in sessions] == ["aaaa", "bbbb"]
    assert sessions[1].notebook_path == root / "sub" / "analysis.ipynb"
    assert sessions[1].connection_file == target and sessions[0].connection_file is None
    assert find_for_notebook(notebook, [runtime]) == target
    # the notebook's own session beats the newest kernel file; other notebooks fall back to the newest
    assert discover(notebook=notebook, dirs=[runtime]) == target
    assert discover(notebook=root / "elsewhere.ipynb", dirs=[runtime]) == newer
    assert _SessionsHandler.requests and all(r.startswith("/api/sessions") for r in _SessionsHandler.requests)


def test_wrong_token_or_dead_server_yields_no_sessions(
    tmp_path: Path, jupyter_server: ThreadingHTTPServer
) -> None:
    port = jupyter_server.server_address[1]
    runtime = tmp_path
    (runtime / "jpserver-1.json").write_text(
        json.dumps({"url": f"http://127.0.0.1:{port}/", "token": "wrong", "pid": os.getpid()})
    )
    (runtime / "jpserver-2.json").write_text(
        json.dumps({"url": f"http://127.0.0.1:{free_port()}/", "token": TOKEN, "pid": os.getpid()})
    )
    servers = list_servers([runtime])
    assert len(servers) == 2
    assert all(server_sessions(s, timeout=1.0) == [] for s in servers)
