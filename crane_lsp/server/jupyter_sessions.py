"""The kernel of one notebook on a Jupyter server: its session's kernel, never merely the newest.

A JupyterLab user has several notebooks open, each with its own kernel; attaching the newest
``kernel-*.json`` would read another notebook's variables. When a Jupyter server serves the
notebook's directory, only that notebook's session counts (no session yet: "no kernel", said once
in the status); the newest-kernel fallback is kept for notebooks no Jupyter server serves (VS Code,
a console). Connection files are named by kernel id (``kernel-<id>.json``) in the runtime dirs.

A session whose kernel has no connection file here (a server in gateway mode: the kernel runs in
Enterprise Gateway; or a kernel another user started) is reached through that server's own API, with
the token from its ``jpserver-<pid>.json``: zero-config, as with a local kernel. With a
``jupyterServerUrl`` (a remote server, JupyterHub), the notebook's session there is the kernel.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crane_lsp.kernel.connection import (
    ConnectionNotFound,
    discover,
    list_servers,
    runtime_dirs,
    server_sessions,
)
from crane_lsp.server.jupyter_documents import notebook_path
from crane_lsp.server.kernel_target import KernelTarget, display, kernel_on_server, shown, uri_to_path

_KERNEL_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$")


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (OSError, ValueError):
        return False
    return True


def connection_file_for_kernel(kernel_id: str, dirs: list[Path] | None = None) -> Path | None:
    """``kernel-<id>.json`` of a kernel the Jupyter server started, in the runtime directories."""
    if not _KERNEL_ID.match(kernel_id):
        return None
    for d in dirs if dirs is not None else runtime_dirs():
        candidate = d / f"kernel-{kernel_id}.json"
        if candidate.exists():
            return candidate
    return None


def session_kernel(notebook: Path, dirs: list[Path] | None = None) -> tuple[Path | None, bool]:
    """(connection file of the notebook's session kernel, whether a Jupyter server serves it)."""
    found, served = session_target(notebook, dirs, files_only=True)
    return (Path(found.where) if found is not None else None), served


def session_target(
    notebook: Path, dirs: list[Path] | None = None, *, files_only: bool = False
) -> tuple[KernelTarget | None, bool]:
    """(the notebook's session kernel on a local Jupyter server, whether one serves it): its
    connection file, else (not ``files_only``) the kernel through that server's API."""
    target = notebook_path(notebook)
    served = False
    for server in list_servers(dirs):
        if server.root_dir is not None and not _under(target, server.root_dir):
            continue
        served = True
        for session in server_sessions(server):
            if session.notebook_path is None or session.notebook_path.resolve() != target.resolve():
                continue
            found = session.connection_file or connection_file_for_kernel(session.kernel_id, dirs)
            if found is not None:
                return KernelTarget(str(found)), True
            if not files_only and _KERNEL_ID.match(session.kernel_id):
                return kernel_on_server(server, session.kernel_id), True
    return None, served


def discover_for_notebook(
    explicit: str | Path | None, notebook: Path | None, dirs: list[Path] | None = None
) -> Path:
    """``discover`` with Jupyter notebooks bound to their own session's kernel."""
    if explicit or notebook is None:
        return discover(explicit, notebook=notebook, dirs=dirs)
    found, served = session_kernel(notebook, dirs)
    if found is not None:
        return found
    if served:
        raise ConnectionNotFound(f"no kernel yet for {notebook_path(notebook).name} (start its kernel)")
    return discover(None, notebook=notebook_path(notebook), dirs=dirs)


def discover_target(
    explicit: str | Path | None, notebook: Path | None, dirs: list[Path] | None = None
) -> KernelTarget:
    """The kernel a notebook reads: an explicit connection file; else its session on a local Jupyter
    server (its file, or that server's API); else the newest live kernel. ``ConnectionNotFound`` why not."""
    if explicit or notebook is None:
        return KernelTarget(str(discover(explicit, notebook=notebook, dirs=dirs)))
    found, served = session_target(notebook, dirs)
    if found is not None:
        return found
    if served:
        raise ConnectionNotFound(f"no kernel yet for {notebook_path(notebook).name} (start its kernel)")
    return KernelTarget(str(discover(None, notebook=notebook_path(notebook), dirs=dirs)))


async def server_session_target(server_url: str, token: str | None, notebook: Path | None) -> KernelTarget:
    """The notebook's session kernel on the ``jupyterServerUrl`` server (a remote server, JupyterHub);
    ``ConnectionNotFound`` when it has none (a refused token: ``RemoteRefused``)."""
    from crane_lsp.kernel.remote import find_session_kernel

    if notebook is None:
        raise ConnectionNotFound(f"no notebook path to look up on {shown(server_url)}")
    path = notebook_path(notebook)
    url = await find_session_kernel(server_url, token, str(path))
    if url is None:
        raise ConnectionNotFound(
            f"no kernel yet for {path.name} on {shown(server_url)} (open it there and start its kernel)"
        )
    return KernelTarget(display(url), url, token)


def with_connection_file(args: dict[str, Any], dirs: list[Path] | None = None) -> dict[str, Any]:
    """``crane/attachKernel`` arguments with ``kernelId`` (or a bare ``kernel-<id>.json``) resolved
    to the connection file's path, as JupyterLab knows only its kernels' ids; a kernel with no
    connection file here (gateway mode) to its URL on the local Jupyter server serving the notebook.
    A ``kernelUrl`` field is the kernel's URL (the token is looked up when attaching, never sent)."""
    url = args.get("kernelUrl")
    if isinstance(url, str) and url.strip():
        return {**args, "connectionFile": url.strip()}
    path = args.get("connectionFile")
    kernel_id = args.get("kernelId")
    if isinstance(path, str) and path and ("/" in path or Path(path).exists()):
        return args
    if not isinstance(kernel_id, str) and isinstance(path, str):
        m = re.fullmatch(r"kernel-(.+)\.json", path)
        kernel_id = m.group(1) if m else None
    if isinstance(kernel_id, str):
        found = connection_file_for_kernel(kernel_id, dirs)
        if found is not None:
            return {**args, "connectionFile": str(found)}
        remote = kernel_url_on_local_server(kernel_id, args.get("notebookUri"), dirs)
        if remote is not None:
            return {**args, "connectionFile": remote}
    return args


def kernel_url_on_local_server(
    kernel_id: str, notebook_uri: Any, dirs: list[Path] | None = None
) -> str | None:
    """The URL of kernel ``kernel_id`` on the local Jupyter server that serves the notebook (the one
    whose root holds it; else the only one running), or None."""
    if not _KERNEL_ID.match(kernel_id):
        return None
    servers = list_servers(dirs)
    path = uri_to_path(notebook_uri) if isinstance(notebook_uri, str) else None
    serving = [
        s
        for s in servers
        if path is not None and s.root_dir is not None and _under(notebook_path(path), s.root_dir)
    ]
    chosen = serving[0] if serving else (servers[0] if len(servers) == 1 else None)
    return kernel_on_server(chosen, kernel_id).where if chosen is not None else None
