"""The link's errors and the records it hands out (``link.py`` re-exports them).

Kept apart so that modules which only catch a link error or read an event need not import the link.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal


class KernelLinkError(RuntimeError):
    """Base of the link's errors; ``str()`` is a message fit for a user."""


class KernelBusy(KernelLinkError):
    """A cell is running and the kernel cannot answer beside it (no subshells)."""


class KernelDead(KernelLinkError):
    """The kernel process is gone, or the connection file or URL leads nowhere."""


class KernelRefused(KernelDead):
    """A Jupyter Server refused the token (401/403): retrying with the same token cannot help."""


class ProbeError(KernelLinkError):
    """The probe answered something unusable (an exception, or JSON that is not a snapshot)."""


class KernelTimeout(ProbeError):
    """The kernel is alive but did not answer in time (a ``ProbeError``: no usable answer came)."""


@dataclass(frozen=True)
class ExecutedCell:
    """One cell of the kernel's own history, as it was run."""

    execution_count: int
    source: str


@dataclass(frozen=True)
class ProbeAnswer:
    """A probe entry point's JSON answer and how it was obtained."""

    data: dict[str, Any]
    taken_while_busy: bool
    elapsed_ms: float
    epoch: int | None = None  # ``KernelLink.state_epoch`` when the kernel started on it (main shell only)


@dataclass(frozen=True)
class KernelEvent:
    """What listeners hear: a cell started / finished (by anyone but this link's probes) or a restart."""

    kind: Literal["cell_started", "cell_finished", "restarted"]
    generation: int | None
    msg_id: str | None = None


Listener = Callable[[KernelEvent], None]
