"""What the terminal commands share: one-line messages and replaying a notebook with a progress bar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.replay import ReplayReport
    from crane_lsp.notebook import Notebook


#: what ``check`` and ``inspect`` read: a Jupyter notebook or a ``# %%`` percent-format script
NOTEBOOK_SUFFIXES = (".ipynb", ".py")


def read_user_notebook(path: str) -> Notebook:
    """The notebook at ``path``; NotebookError (one line for the user) for any other kind of file."""
    from pathlib import Path

    from crane_lsp.notebook import NotebookError, read_notebook

    suffix = Path(path).suffix.lower()
    if suffix not in NOTEBOOK_SUFFIXES:
        raise NotebookError(
            f"{path}: not a notebook: give a .ipynb file or a .py script with '# %%' cells"
            + (f" (not {suffix})" if suffix else "")
        )
    return read_notebook(path)


def settings_error(exc: Exception) -> str:
    """One line for invalid settings: ``--votes: must be at least 1``, never pydantic's multi-line dump."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    parts = []
    for error in errors():
        field = ".".join(str(p) for p in error.get("loc", ()))
        option = "--" + field.replace("_", "-") if field else "settings"
        parts.append(f"{option}: {error.get('msg', 'invalid value')}")
    return "; ".join(parts) or "invalid settings"


def say(console: Console, label: str, message: str, style: str = "yellow") -> None:
    """One unwrapped line (tests and scripts grep it); the message is never read as rich markup."""
    console.print(Text.assemble((label, style), " ", message), soft_wrap=True)


async def replay_with_progress(
    notebook: Notebook,
    target: int,
    console: Console,
    *,
    kernel_name: str = "python3",
    stop_on_error: bool = False,
    cell_timeout: float = 600.0,
    quiet: bool = False,
) -> tuple[KernelLink, ReplayReport]:
    """A fresh kernel holding the state ``target`` would see, with a progress bar on ``console``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from crane_lsp.kernel.replay import ReplayProgress, start_and_replay

    with Progress(
        TextColumn("replaying {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
    ) as progress:
        task = progress.add_task("cells", total=len(notebook.replay_order(target)))

        def on_progress(p: ReplayProgress) -> None:
            progress.update(task, completed=p.done, description=f"code cell {p.index + 1}")

        return await start_and_replay(
            notebook,
            target,
            kernel_name=kernel_name,
            on_progress=on_progress,
            stop_on_error=stop_on_error,
            cell_timeout=cell_timeout,
        )


def report_replay_failures(console: Console, report: ReplayReport) -> None:
    for failed in report.failures:
        say(console, "replay:", failed.describe_failure())
    if report.stopped_early:
        say(console, "replay:", "stopped early; the state below is partial")
