"""After a real cell run with undo on: did it raise, and what had it changed (issue 37; docs/undo.md).

Apart from ``undo_command`` (the LSP commands, which import the server's class for pygls): the
server calls ``follow_run`` when a cell finishes, so this module must not import the server back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from crane_lsp import undo

log = logging.getLogger(__name__)

BUSY_WAIT_S = 10.0  # how long a command waits for a busy kernel (the server's own check) to be idle


@dataclass(frozen=True)
class UndoLine:
    """The last run raised, with undo on: what the crashed cell's hover shows, and where."""

    count: int  # its execution count (a notebook cell's ``execution_order``)
    raised: int  # the 1-based line it raised from
    text: str  # "Before raising at line 7 the cell rebound `model` ..."
    code: str = ""  # the code that ran: a ``# %%`` script's cell has no execution count, only its text


class RunNotebook(Protocol):
    """What the follow-up reads and writes of the server's notebook state."""

    kernel_generation: int | None
    undo_line: UndoLine | None  # the crashed cell's hover line


async def when_idle(work: Any, wait_s: float = BUSY_WAIT_S) -> Any:
    """``work()`` once the kernel is idle: a check of the server's own may be in flight (a short
    wait); never beside a running cell."""
    from crane_lsp.kernel.link import KernelBusy

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await work()
        except KernelBusy:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


FOLLOW_WAIT_S = 30.0  # how long the follow-up of a finished run waits for the kernel to be idle


async def follow_run(link: Any, nb: RunNotebook, count: int) -> None:
    """After cell ``[count]`` finished with undo on: did it raise (its traceback in the kernel), and
    if so what had it changed; kept as ``nb.undo_line`` for the crashed cell's hover, which never
    waits for it. Two silent requests per crashed run, one per clean run; never raises."""
    if link is None:
        return
    code = str(getattr(link, "last_cell_code", "") or "")  # the run that just finished
    try:
        # the server's own re-check of the notebook may hold the kernel for a moment, before or
        # between these two requests: each waits for it
        raised = await when_idle(lambda: undo.raised_at(link, count), FOLLOW_WAIT_S)
        if raised is None:
            return
        answer: undo.CellChanges = await when_idle(
            lambda: undo.changes(link, expect_count=count), FOLLOW_WAIT_S
        )
    except Exception as exc:  # a kernel gone or busy: no line, the command still answers
        log.debug("what cell [%s] changed is unknown: %s", count, exc)
        return
    last = nb.kernel_generation == count and getattr(link, "generation", count) == count  # none since
    if answer.refused is None and answer.cell == count and last:
        nb.undo_line = UndoLine(count, raised, undo.crash_line(answer, raised), code)
