"""Where ``check`` gets its fresh kernels: on this machine, or on a Jupyter server (``--jupyter-server``).

A remote kernel is started through the server's REST API and always shut down afterwards, on an
error or Ctrl-C too (the link owns it: ``close()`` deletes it). The server's token comes from
``JUPYTER_TOKEN`` or ``--token-file``, never from a command-line value: any user of the machine can
read another's argv. A local kernel starts in the notebook's folder; a remote one where the server
starts it (its root), since the notebook's folder is on this machine.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.replay import ReplayReport
    from crane_lsp.notebook import Notebook


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jupyter-server",
        metavar="URL",
        default=None,
        help="replay on a kernel started on this Jupyter server (http(s)://HOST:PORT[/BASE]), shut down "
        "afterwards; its token from JUPYTER_TOKEN or --token-file",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        default=None,
        help="a file holding the Jupyter server's token (there is no option taking the token itself: "
        "other users can read a command line)",
    )


class KernelOptionError(ValueError):
    """A bad ``--jupyter-server`` / ``--token-file``: one line for the user, never the token."""


def read_token_file(path: str) -> str:
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise KernelOptionError(f"--token-file: cannot read {path} ({exc.strerror or exc})") from exc
    token = text.strip()
    if not token or len(token.split()) != 1:
        raise KernelOptionError(f"--token-file: {path} must hold the token alone, on one line")
    return token


@dataclass(frozen=True)
class KernelSource:
    """Starts the kernels one ``check`` run replays on; ``server_url`` None: a local kernel."""

    server_url: str | None = None
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> KernelSource:
        server = getattr(args, "jupyter_server", None)
        token_file = getattr(args, "token_file", None)
        if not server:
            if token_file:
                raise KernelOptionError("--token-file is for --jupyter-server")
            return cls()
        if not server.lower().startswith(("http://", "https://")):
            raise KernelOptionError(f"--jupyter-server: give an http(s):// URL, not {server.split('?')[0]!r}")
        if "?" in server or "#" in server:
            raise KernelOptionError("--jupyter-server: give the server's URL without a query (no ?token=)")
        token = read_token_file(token_file) if token_file else os.environ.get("JUPYTER_TOKEN") or None
        return cls(server.rstrip("/") + "/", token)

    @property
    def remote(self) -> bool:
        return self.server_url is not None

    async def start(self, folder: Path) -> KernelLink:
        """A fresh kernel: in ``folder`` here, or on the server (the caller closes it: shut down)."""
        from crane_lsp.kernel.link import KernelLink

        if self.server_url is None:
            return await KernelLink.start(folder, quiet=True)
        return await KernelLink.start_remote(self.server_url, self.token)

    async def replay(
        self, notebook: Notebook, target: int, console: Console, *, quiet: bool, cell_timeout: float
    ) -> tuple[KernelLink, ReplayReport]:
        """A fresh kernel holding the state ``target`` would see (the caller closes it)."""
        from crane_lsp.commands.common import replay_with_progress

        if self.server_url is None:
            return await replay_with_progress(
                notebook, target, console, quiet=quiet, cell_timeout=cell_timeout
            )
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from crane_lsp.kernel.replay import ReplayProgress, replay

        link = await self.start(Path.cwd())
        try:
            columns = (
                TextColumn("replaying {task.description} on the server"),
                BarColumn(),
                MofNCompleteColumn(),
            )
            with Progress(*columns, console=console, transient=True, disable=quiet) as progress:
                task = progress.add_task("cells", total=len(notebook.replay_order(target)))

                def on_progress(p: ReplayProgress) -> None:
                    progress.update(task, completed=p.done, description=f"code cell {p.index + 1}")

                report = await replay(
                    link, notebook, target, on_progress=on_progress, cell_timeout=cell_timeout
                )
        except BaseException:  # Ctrl-C too: the server's kernel never outlives the run
            await link.close()
            raise
        return link, report
