"""The kernel of one notebook on a Jupyter server: its session's kernel, never merely the newest.

A JupyterLab user has several notebooks open, each with its own kernel; attaching the newest
``kernel-*.json`` would read another notebook's variables. When a Jupyter server serves the
notebook's directory, only that notebook's session counts (no session yet: "no kernel", said once
in the status); the newest-kernel fallback is kept for notebooks no Jupyter server serves (VS Code,
a console). Connection files are named by kernel id (``kernel-<id>.json``) in the runtime dirs.
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
                return found, True
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


def with_connection_file(args: dict[str, Any], dirs: list[Path] | None = None) -> dict[str, Any]:
    """``crane/attachKernel`` arguments with ``kernelId`` (or a bare ``kernel-<id>.json``) resolved
    to the connection file's path, as JupyterLab knows only its kernels' ids."""
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
    return args
