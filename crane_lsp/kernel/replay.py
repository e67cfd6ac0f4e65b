"""Rebuild a notebook's recorded kernel state for one target cell, in a fresh kernel.

The cells run in ``Notebook.replay_order(target)`` (execution-count order, so out-of-order state
reproduces), in the notebook's folder so relative paths resolve as they did. Package installs and
downloads (``!pip``, ``%conda``, ``!wget`` ...) are replaced by ``pass``: replay must work offline and
must not change the environment. A cell that fails is reported and, by default, replay goes on, as a
user who ignored the error would have.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crane_lsp.kernel.link import ExecutionResult, KernelLink
from crane_lsp.notebook import Notebook

_SKIPPED = re.compile(r"^(\s*)[!%]{1,2}\s*(pip|pip3|conda|mamba|apt|apt-get|wget|curl|kaggle|gdown|git)\b.*$")


def sanitize(source: str) -> str:
    """``source`` with install/download shell lines turned into ``pass`` (same line count)."""
    return "\n".join(
        _SKIPPED.sub(r"\1pass  # crane: skipped during replay", line) for line in source.split("\n")
    )


@dataclass
class CellRun:
    """One replayed cell: its position among the code cells (0-based) and what happened."""

    index: int
    recorded_count: int | None
    result: ExecutionResult

    @property
    def label(self) -> str:
        rec = f" [In {self.recorded_count}]" if self.recorded_count else ""
        return f"code cell {self.index + 1}{rec}"

    def describe_failure(self) -> str:
        r = self.result
        where = f" on line {r.line + 1}" if r.line is not None else ""
        if r.status == "timeout":
            return f"{self.label} did not finish in time and was interrupted"
        return f"{self.label} raised {r.ename}{where}: {r.evalue}"


@dataclass(frozen=True)
class ReplayProgress:
    """Sent to the progress callback before (``result`` None) and after each cell."""

    done: int
    total: int
    index: int
    result: ExecutionResult | None = None


@dataclass
class ReplayReport:
    target: int
    order: list[int]
    runs: list[CellRun] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def failures(self) -> list[CellRun]:
        return [r for r in self.runs if not r.result.ok]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.stopped_early


ProgressCallback = Callable[[ReplayProgress], None]


async def replay(
    link: KernelLink,
    notebook: Notebook,
    target: int,
    *,
    on_progress: ProgressCallback | None = None,
    stop_on_error: bool = False,
    cell_timeout: float = 600.0,
) -> ReplayReport:
    """Run the cells that precede ``target`` (an index into ``notebook.code_cells``) in ``link``."""
    cells = notebook.code_cells
    order = notebook.replay_order(target)
    report = ReplayReport(target=target, order=order)
    for done, index in enumerate(order):
        if on_progress:
            on_progress(ReplayProgress(done, len(order), index))
        result = await link.execute(sanitize(cells[index].source), timeout=cell_timeout)
        run = CellRun(index, cells[index].execution_count, result)
        report.runs.append(run)
        if on_progress:
            on_progress(ReplayProgress(done + 1, len(order), index, result))
        if not result.ok and (stop_on_error or result.status == "timeout"):
            report.stopped_early = done + 1 < len(order)
            break
    return report


async def start_and_replay(
    notebook: Notebook,
    target: int,
    *,
    kernel_name: str = "python3",
    cwd: str | Path | None = None,
    on_progress: ProgressCallback | None = None,
    stop_on_error: bool = False,
    cell_timeout: float = 600.0,
) -> tuple[KernelLink, ReplayReport]:
    """A fresh kernel in the notebook's folder (or ``cwd``) holding the state ``target`` would see.

    The caller owns the returned link and must ``close()`` it (that shuts the kernel down).
    """
    folder = cwd if cwd is not None else (notebook.path.parent if notebook.path else None)
    link = await KernelLink.start(folder, kernel_name=kernel_name, quiet=True)
    try:
        report = await replay(
            link,
            notebook,
            target,
            on_progress=on_progress,
            stop_on_error=stop_on_error,
            cell_timeout=cell_timeout,
        )
    except BaseException:
        await link.close()
        raise
    return link, report
