"""What the terminal commands share: one-line messages and replaying a notebook with a progress bar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.replay import ReplayReport
    from crane_lsp.notebook import Notebook


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
