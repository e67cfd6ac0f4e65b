"""Verified fixes in the server: after a crash's verdict is published, its candidate fixes are dry-run
in the background and the cell's result is published again with the fixes that passed.

Never before the squiggle: ``start`` is called after ``publish``. One task per cell, cancelled when the
cell is checked again (a new text or state), one verification at a time across the server (the kernel
runs one dry-run child at a time, and the next cell's own verdict must not wait behind many forks), at
most ``LIMIT_TYPING`` candidates while typing and ``LIMIT_EXPLICIT`` on Re-check.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from crane_lsp.pipeline import Pipeline
    from crane_lsp.server.scheduler import Stamp


class Publisher(Protocol):
    """What the verifier needs of the server (``server/app.py``'s ``CraneServer``; not imported here:
    the server owns the verifier)."""

    def _current(self, nb: Any, key: str, stamp: Stamp) -> bool: ...

    def publish(self, nb: Any, uri: str) -> None: ...


log = logging.getLogger(__name__)

#: the verdicts whose fixes are verified: a check proved the crash, or the dry run saw it
VERIFIED_FOR = ("certain", "observed")


class FixVerifier:
    """The server's background verifications, one per cell key."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._one = asyncio.Semaphore(1)

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    def cancel_all(self) -> None:
        for key in list(self._tasks):
            self.cancel(key)

    def start(
        self,
        server: Publisher,
        nb: Any,
        key: str,
        stamp: Stamp,
        pipeline: Pipeline,
        source: str,
        explicit: bool,
    ) -> None:
        """Verify the fixes of the result just published for ``key`` (nothing when it is no crash)."""
        from crane_lsp.dryrun import DryRunner

        result = nb.results.get(key)
        runner = pipeline.dryrun
        if result is None or not isinstance(runner, DryRunner) or runner.settings.dry_run == "off":
            return
        p = result.prediction
        if not p.crash or p.certainty not in VERIFIED_FOR or p.fixes:
            return
        self.cancel(key)
        task = asyncio.get_running_loop().create_task(
            self._run(server, nb, key, stamp, runner, source, explicit), name=f"crane-fix:{key}"
        )
        self._tasks[key] = task
        task.add_done_callback(
            lambda done: self._tasks.pop(key, None) if self._tasks.get(key) is done else None
        )

    async def _run(
        self,
        server: Publisher,
        nb: Any,
        key: str,
        stamp: Stamp,
        runner: Any,
        source: str,
        explicit: bool,
    ) -> None:
        from crane_lsp.fixes import offer_fixes

        try:
            async with self._one:
                result = nb.results.get(key)
                if result is None or not server._current(nb, key, stamp):
                    return
                later = _cells_below(nb, key)
                fixed = await offer_fixes(runner, source, result.prediction, explicit=explicit, later=later)
            if fixed is result.prediction or nb.results.get(key) is not result:
                return
            if not server._current(nb, key, stamp):
                return
            nb.results[key] = dataclasses.replace(result, prediction=fixed, stamp=stamp)
            cell = nb.view.cell(key)
            if cell is not None:
                server.publish(nb, cell.uri)
        except asyncio.CancelledError:
            raise
        except Exception:  # a fix is a bonus: never lose the verdict to it
            log.exception("verifying the fixes of %s failed", key)


def _cells_below(nb: Any, key: str) -> list[str]:
    """The notebook's code cells below cell ``key``, in order (a ``# %%`` script's too)."""
    cells = nb.view.code_cells
    at = next((i for i, c in enumerate(cells) if c.key == key), None)
    return [] if at is None else [c.text for c in cells[at + 1 :]]
