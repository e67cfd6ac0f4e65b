"""Find the connection file of the kernel a user is working in.

Three places, in the order ``discover`` tries them: an explicit path; a Jupyter server's
``/api/sessions`` (notebook path -> kernel id -> ``kernel-<id>.json``), which is the only way to pick
the right kernel when several run; the newest live ``kernel-*.json`` in the runtime directories
(``jupyter_runtime_dir()`` and ``$XDG_RUNTIME_DIR/jupyter/runtime``, where VS Code writes
``kernel-v3*.json``). Files whose kernel is cheaply provable dead are skipped: stale files pile up
there after crashes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ConnectionNotFound(LookupError):
    """No usable connection file; the message says where we looked, for the user."""


@dataclass(frozen=True)
class JupyterServer:
    """A running Jupyter server, as its ``jpserver-<pid>.json`` describes it."""

    url: str
    token: str
    root_dir: Path | None
    runtime_dir: Path
    pid: int | None = None


@dataclass(frozen=True)
class ServerSession:
    """One notebook open on a Jupyter server, and the kernel serving it."""

    notebook_path: Path | None  # absolute when the server's root dir is known
    kernel_id: str
    kernel_name: str | None
    execution_state: str | None
    connection_file: Path | None  # None when the kernel's file is not in the server's runtime dir


def runtime_dirs() -> list[Path]:
    """The directories kernels announce themselves in, without duplicates, existing or not."""
    from jupyter_core.paths import jupyter_runtime_dir

    dirs = [Path(jupyter_runtime_dir())]
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        dirs.append(Path(xdg) / "jupyter" / "runtime")
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


#: a kernel connection file is a few hundred bytes; anything much larger is not one
MAX_CONNECTION_FILE_BYTES = 1 << 20


def read_small_file(path: str | Path, limit: int = MAX_CONNECTION_FILE_BYTES) -> bytes:
    """The bytes of a small regular file, without ever blocking: opened non-blocking, and a FIFO, a
    device or a directory is refused (``OSError``) instead of waited on; at most ``limit + 1`` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, limit + 1)
    finally:
        os.close(fd)


def read_connection_info(path: str | Path) -> dict[str, Any]:
    """The JSON of a connection file; ``ConnectionNotFound`` with a clear message otherwise.

    Never blocks (``read_small_file``): a FIFO named as connection file is refused, not waited on.
    """
    p = Path(path)
    try:
        raw = read_small_file(p)
    except FileNotFoundError as exc:
        raise ConnectionNotFound(f"connection file {p} does not exist") from exc
    except OSError as exc:
        raise ConnectionNotFound(f"connection file {p} cannot be read ({exc})") from exc
    if len(raw) > MAX_CONNECTION_FILE_BYTES:
        raise ConnectionNotFound(f"{p} is too large to be a kernel connection file")
    try:
        info = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise ConnectionNotFound(f"connection file {p} is not readable JSON ({exc})") from exc
    if not isinstance(info, dict) or "shell_port" not in info:
        raise ConnectionNotFound(f"{p} is not a kernel connection file (no shell_port)")
    return info


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


_LOCAL_HOSTS = {"127.0.0.1", "localhost", "0.0.0.0", "::1", "*"}


def kernel_alive(info: dict[str, Any], timeout: float = 0.2) -> bool | None:
    """Whether the kernel behind ``info`` is alive: True/False when cheaply provable, None when unknown.

    A ``pid`` in the file decides; otherwise a TCP connect to the shell port of a local kernel (refused
    means nobody listens there), or the socket file of an ``ipc`` kernel.
    """
    pid = info.get("pid") or info.get("kernel_pid")
    if isinstance(pid, int) and pid > 0:
        return _pid_alive(pid)
    transport = info.get("transport", "tcp")
    ip = str(info.get("ip", "127.0.0.1"))
    port = info.get("shell_port")
    if transport == "ipc":
        return Path(f"{ip}-{port}").exists()
    if ip not in _LOCAL_HOSTS or not isinstance(port, int):
        return None
    host = "127.0.0.1" if ip in ("0.0.0.0", "*", "localhost") else ip
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return False
    except OSError:
        return None


def _alive_file(path: Path) -> bool:
    try:
        return kernel_alive(read_connection_info(path)) is not False
    except ConnectionNotFound:
        return False


def list_kernel_files(dirs: list[Path] | None = None, *, alive_only: bool = True) -> list[Path]:
    """``kernel-*.json`` files in ``dirs`` (default: ``runtime_dirs()``), newest first."""
    files: list[tuple[float, Path]] = []
    for d in dirs if dirs is not None else runtime_dirs():
        for f in d.glob("kernel-*.json"):
            with contextlib.suppress(OSError):
                files.append((f.stat().st_mtime, f))
    ordered = [f for _, f in sorted(files, key=lambda t: t[0], reverse=True)]
    return [f for f in ordered if _alive_file(f)] if alive_only else ordered


def newest_kernel_file(dirs: list[Path] | None = None) -> Path | None:
    """The most recently written live kernel connection file, or None."""
    files = list_kernel_files(dirs)
    return files[0] if files else None


def list_servers(dirs: list[Path] | None = None) -> list[JupyterServer]:
    """Running Jupyter servers found through their ``jpserver-*.json`` files (dead pids skipped)."""
    servers: list[JupyterServer] = []
    for d in dirs if dirs is not None else runtime_dirs():
        for f in sorted(d.glob("jpserver-*.json")):
            try:
                info = json.loads(read_small_file(f).decode("utf-8"))
            except (OSError, ValueError):
                continue
            pid = info.get("pid")
            if isinstance(pid, int) and not _pid_alive(pid):
                continue
            url = str(info.get("url") or "")
            if not url:
                continue
            root = info.get("root_dir") or info.get("notebook_dir")
            servers.append(
                JupyterServer(
                    url=url if url.endswith("/") else url + "/",
                    token=str(info.get("token") or ""),
                    root_dir=Path(root) if root else None,
                    runtime_dir=d,
                    pid=pid if isinstance(pid, int) else None,
                )
            )
    return servers


def server_sessions(server: JupyterServer, timeout: float = 2.0) -> list[ServerSession]:
    """The server's ``/api/sessions``; an unreachable server yields ``[]`` (it may have just exited)."""
    import urllib.parse  # HTTP machinery only when a Jupyter server is asked (slow to import)
    import urllib.request

    url = urllib.parse.urljoin(server.url, "api/sessions")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if server.token:
        request.add_header("Authorization", f"token {server.token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return []
    sessions: list[ServerSession] = []
    for s in data if isinstance(data, list) else []:
        kernel = s.get("kernel") or {}
        kid = kernel.get("id")
        if not kid:
            continue
        rel = s.get("path") or (s.get("notebook") or {}).get("path")
        nb_path: Path | None = None
        if rel:
            nb_path = (
                Path(rel) if Path(rel).is_absolute() or server.root_dir is None else server.root_dir / rel
            )
        cf = server.runtime_dir / f"kernel-{kid}.json"
        sessions.append(
            ServerSession(
                notebook_path=nb_path,
                kernel_id=str(kid),
                kernel_name=kernel.get("name"),
                execution_state=kernel.get("execution_state"),
                connection_file=cf if cf.exists() else None,
            )
        )
    return sessions


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def find_for_notebook(notebook: str | Path, dirs: list[Path] | None = None) -> Path | None:
    """The connection file of the kernel a Jupyter server runs for ``notebook``, or None."""
    target = Path(notebook)
    for server in list_servers(dirs):
        for session in server_sessions(server):
            if (
                session.connection_file
                and session.notebook_path
                and _same_file(session.notebook_path, target)
            ):
                return session.connection_file
    return None


def discover(
    explicit: str | Path | None = None, *, notebook: str | Path | None = None, dirs: list[Path] | None = None
) -> Path:
    """The connection file to use: explicit path, else the notebook's server session, else the newest.

    An explicit path is returned as given (a dead kernel there is reported when connecting, as
    ``KernelDead``); ``ConnectionNotFound`` when nothing is found, saying where we looked.
    """
    if explicit:
        p = Path(explicit).expanduser()
        if not p.exists():
            # a bare file name is looked up in the runtime directories, like ``jupyter console --existing``
            for d in dirs if dirs is not None else runtime_dirs():
                if (d / p.name).exists() and p.name == str(explicit):
                    return d / p.name
            raise ConnectionNotFound(f"connection file {p} does not exist")
        return p
    if notebook is not None:
        found = find_for_notebook(notebook, dirs)
        if found:
            return found
    newest = newest_kernel_file(dirs)
    if newest:
        return newest
    where = ", ".join(str(d) for d in (dirs if dirs is not None else runtime_dirs()))
    raise ConnectionNotFound(f"no running Jupyter kernel found (looked in {where}); pass a connection file")
