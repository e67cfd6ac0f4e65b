"""When cells are checked: per-cell debounce, cancellation on edit, staleness, and which cells.

One asyncio task per cell at most. Scheduling a cell again cancels its task (the debounce sleep or
the prediction in flight, LLM request included), so an outdated text is never predicted to the end;
the ``Stamp`` check before publishing catches anything that slipped through an await.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from crane_lsp.server.documents import CellView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stamp:
    """What a prediction belongs to; when any part changes, the prediction is outdated."""

    text: str
    generation: int
    settings_rev: int


class Debouncer:
    """Runs ``job(key)`` once per key after ``delay`` of quiet; a new request for a key restarts it."""

    def __init__(self, job: Callable[[str], Awaitable[None]]) -> None:
        self._job = job
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._waiting: set[asyncio.Task[None]] = set()  # tasks still in their quiet period

    def schedule(self, key: str, delay_s: float) -> asyncio.Task[None]:
        self.cancel(key)
        task = asyncio.get_running_loop().create_task(self._run(key, delay_s), name=f"crane:{key}")
        self._tasks[key] = task
        return task

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    def cancel_all(self, keys: Iterable[str] | None = None) -> None:
        for key in list(self._tasks if keys is None else keys):
            self.cancel(key)

    def active(self, key: str) -> bool:
        """Scheduled or running: a new result for ``key`` is on its way."""
        task = self._tasks.get(key)
        return task is not None and not task.done()

    def waiting(self, key: str) -> bool:
        """Scheduled and still in its quiet period (the job itself has not started)."""
        return self._tasks.get(key) in self._waiting

    async def _run(self, key: str, delay_s: float) -> None:
        me = asyncio.current_task()
        assert me is not None
        try:
            if delay_s > 0:
                self._waiting.add(me)  # type: ignore[arg-type]
                try:
                    await asyncio.sleep(delay_s)
                finally:
                    self._waiting.discard(me)  # type: ignore[arg-type]
            await self._job(key)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failing check must never take the server down
            log.exception("checking %s failed", key)
        finally:
            if self._tasks.get(key) is me:
                del self._tasks[key]

    async def drain(self) -> None:
        """Wait for every scheduled job (tests and shutdown)."""
        while self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._tasks.values(), return_exceptions=True)


def cells_to_check(
    cells: list[CellView], pending: set[str], anchor: int | None, limit: int
) -> list[CellView]:
    """The pending cells (edited or never run since their last edit), nearest to ``anchor`` first.

    ``anchor`` is the index of the cell being edited or the last one executed; without one, the
    cells at the end of the notebook (where new work usually is) come first.
    """
    code = [c for c in cells if c.kind == "code" and c.key in pending and c.text.strip()]
    if anchor is None:
        anchor = cells[-1].index if cells else 0
    code.sort(key=lambda c: (abs(c.index - anchor), -c.index))
    return code[:limit]
