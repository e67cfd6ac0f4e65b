"""What every editor shows: ``window/showMessage`` and a log line when a notebook's kernel changes.

``crane/status`` is a custom notification only the VS Code and JupyterLab clients read; Neovim,
Emacs or Helix users would never learn that no kernel was found, that the connection file is
missing, that the kernel was lost or stopped answering, or that an attach failed. Each change of a
notebook's kernel state is said once (not on every status update, i.e. not per keystroke).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from lsprotocol import types

log = logging.getLogger(__name__)


def _name(uri: str) -> str:
    return PurePosixPath(unquote(urlparse(uri).path)).name or uri


def _where(connection_file: str | None) -> str:
    """A connection file's path, or ``kernel at <url>`` for a kernel on a Jupyter server (no token)."""
    from crane_lsp.server.kernel_target import is_url, shown

    if connection_file and is_url(connection_file):
        return f"kernel at {shown(connection_file)}"
    return str(connection_file)


@dataclass(frozen=True)
class _Said:
    kernel: str  # "attached" | "none" | "unresponsive"
    why: str | None
    connection_file: str | None


class Notices:
    """Says a notebook's kernel state when it changes; ``show(type, message)`` sends it."""

    def __init__(self, show: Callable[[types.MessageType, str], None]) -> None:
        self._show = show
        self._said: dict[str, _Said] = {}

    def kernel(self, notebook_uri: str, kernel: str, why: str | None, connection_file: str | None) -> None:
        kernel = "attached" if kernel == "busy" else kernel
        if kernel == "none" and not why:
            return  # nothing tried yet: nothing to say
        now = _Said(kernel, why if kernel != "attached" else None, connection_file)
        before = self._said.get(notebook_uri)
        if before == now or (before is None and kernel == "attached" and not why):
            self._said[notebook_uri] = now
            if before is None:
                log.info("crane: %s reads the kernel of %s", _name(notebook_uri), _where(connection_file))
            return
        self._said[notebook_uri] = now
        name = _name(notebook_uri)
        if kernel == "attached":
            again = " again" if before is not None and before.kernel != "attached" else ""
            self._say(
                types.MessageType.Info, f"crane: {name} reads its kernel{again} ({_where(connection_file)})"
            )
        elif kernel == "unresponsive":
            self._say(types.MessageType.Warning, f"crane: the kernel of {name} does not answer: {why}")
        else:
            lost = before is not None and before.kernel != "none"
            what = "lost its kernel" if lost else "has no kernel"
            self._say(
                types.MessageType.Warning,
                f"crane: {name} {what}: {why}; only checks that need no kernel run "
                "(attach one with the crane.attachKernel command or the connectionFile setting: "
                "a connection file or a kernel URL)",
            )

    def attach_failed(self, notebook_uri: str, connection_file: str, why: str, kept: str | None) -> None:
        """An explicit attach failed; ``kept``: the connection file of the kernel that stays."""
        keep = f"; still reading {_where(kept)}" if kept else ""
        self._say(
            types.MessageType.Error,
            f"crane: could not attach {_where(connection_file)} to {_name(notebook_uri)}: {why}{keep}",
        )

    def _say(self, kind: types.MessageType, message: str) -> None:
        log.warning("%s", message)  # the default log level shows it, in any editor's log
        self._show(kind, message)

    def forget(self, notebook_uri: str) -> None:
        self._said.pop(notebook_uri, None)
