"""The kernel link as the server uses it: probes counted (the count feeds ``crane/status``), what the
probe read kept while the kernel stands still (``kernel/snapshot_reuse.py``: a keystroke asks only for
what it adds), the history cached per kernel generation, and the empty probe the watcher asks for the
generation.

The link itself takes concurrent requests; this wrapper only adds the server's bookkeeping, and
offers the pipeline exactly what it may ask of a kernel (``layers.KernelReader``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crane_lsp.kernel.snapshot_reuse import SnapshotReuse

if TYPE_CHECKING:
    from crane_lsp.kernel.link import ExecutedCell, KernelLink
    from crane_lsp.snapshot import ProbeQuery, Snapshot

WATCH_TIMEOUT_S = 5.0


@dataclass
class Stats:
    predictions: int = 0  # check jobs that reached a verdict (one per cell text checked)
    second_phase: int = 0  # dry-run / LLM follow-ups
    probes: int = 0
    checking: int = 0
    last_latency_ms: float | None = None
    kernel_busy: bool = False


class CountedLink:
    """One notebook's ``KernelLink`` with the server's counters around it."""

    def __init__(self, link: KernelLink, stats: Stats) -> None:
        self.link = link
        self._stats = stats
        self._history_key: tuple[int | None, int] | None = None
        self._history: list[ExecutedCell] = []
        self.reuse = SnapshotReuse()

    @property
    def busy(self) -> bool:
        return self.link.busy

    @property
    def cell_seconds(self) -> Mapping[str, float]:
        """The kernel's own cell timings (text -> seconds), read by the dry run (issue 23)."""
        return getattr(self.link, "cell_seconds", {})

    async def snapshot(self, query: ProbeQuery, timeout: float | None = None) -> Snapshot:
        self._stats.probes += 1
        snap = await self.reuse.snapshot(self.link, query, timeout)
        self._stats.kernel_busy = bool(snap.taken_while_busy)
        return snap

    async def call(
        self, function: str, payload: dict[str, Any], timeout: float = 10.0, *, allow_busy: bool | None = None
    ) -> dict[str, Any]:
        return await self.link.call(function, payload, timeout, allow_busy=allow_busy)

    async def is_alive(self) -> bool:
        return await self.link.is_alive()

    async def responsive(self, timeout: float = 2.0) -> bool:
        return await self.link.responsive(timeout)

    async def history(self, timeout: float = 10.0) -> list[ExecutedCell]:
        """The kernel's history, fetched again only when its generation (or a restart) moved on."""
        key = (self.link.generation, self.link.restarts)
        if key[0] is not None and key == self._history_key:
            return self._history
        history = await self.link.history(timeout)
        self._history_key, self._history = key, history
        return history

    async def generation(self) -> int | None:
        """The kernel's execution count, from an empty probe (not counted as a cell's probe)."""
        from crane_lsp.snapshot import ProbeQuery

        snap = await self.link.snapshot(ProbeQuery(request_budget_s=0.5), timeout=WATCH_TIMEOUT_S)
        return snap.generation
