"""What the server needs from the kernels it reads: the seam ``create_server(kernels=...)`` takes.

``server/kernels.Kernels`` is the real one (attach, discovery, back-off, restarts); tests where a
real kernel is not the point hand the server a small fake with the same shape instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelEvent, KernelLink
    from crane_lsp.server.kernels import Attachment

#: ``on_event(notebook_uri, event)``: a cell finished, the kernel restarted or died
KernelEvents = Callable[[str, "KernelEvent"], None]


class KernelPort(Protocol):
    """Which kernel each notebook reads (``Attachment``: the link, its file, why there is none)."""

    default_connection_file: str | None  # the ``connectionFile`` setting

    def attachment(self, notebook_uri: str) -> Attachment: ...

    def state(self, notebook_uri: str) -> str: ...  # none | attached | busy | unresponsive

    async def attach(self, notebook_uri: str, connection_file: str) -> str | None: ...  # the error

    async def link_for(self, notebook_uri: str) -> KernelLink | None: ...  # attaches when needed

    async def lost(self, notebook_uri: str, why: str, *, backoff: bool = True) -> None: ...

    async def close(self) -> None: ...


#: builds the server's kernels, given where their events go (``server.kernels.Kernels`` is one)
KernelsFactory = Callable[[KernelEvents], KernelPort]
