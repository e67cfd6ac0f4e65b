"""``crane-lsp serve`` with fake kernels: for tests where a real kernel is not the point.

``python tests/fake_kernels_server.py`` serves LSP on stdio exactly as ``crane-lsp serve`` does,
except that the server reads kernels through ``NoKernels`` (``create_server(kernels=...)``): no
notebook ever has one, and an attach is refused with a message that names the fake.
"""

from __future__ import annotations

import sys
from pathlib import Path

from crane_lsp.kernel.link import KernelLink
from crane_lsp.server.kernel_port import KernelEvents, KernelPort
from crane_lsp.server.kernels import Attachment

REFUSED = "the fake kernels refuse"
NONE_HERE = "fake kernels: no kernel for this notebook"


class NoKernels:
    """A ``KernelPort`` with no kernel anywhere; it remembers which notebooks were asked about."""

    def __init__(self, on_event: KernelEvents) -> None:
        self.on_event = on_event
        self.default_connection_file: str | None = None
        self.asked: list[str] = []
        self._attachments: dict[str, Attachment] = {}

    def attachment(self, notebook_uri: str) -> Attachment:
        return self._attachments.setdefault(notebook_uri, Attachment(error=NONE_HERE))

    def state(self, notebook_uri: str) -> str:
        return "none"

    async def attach(self, notebook_uri: str, connection_file: str) -> str | None:
        return f"{REFUSED} {Path(connection_file).name}"

    async def link_for(self, notebook_uri: str) -> KernelLink | None:
        self.asked.append(notebook_uri)
        return None

    async def lost(self, notebook_uri: str, why: str, *, backoff: bool = True) -> None:
        self.attachment(notebook_uri).error = why

    async def close(self) -> None:
        self._attachments.clear()


def _port(on_event: KernelEvents) -> KernelPort:
    return NoKernels(on_event)  # mypy: the fake has the shape the server takes


def main() -> None:
    from crane_lsp.server.create import create_server
    from crane_lsp.server.protocol import serve_stdio

    serve_stdio(create_server(kernels=_port))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
