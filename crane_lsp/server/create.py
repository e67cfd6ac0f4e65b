"""The one place a server is put together: ``CraneServer`` plus every handler registered.

Kept apart from ``app`` so that the handlers may import the server class without ``app``
importing them back (no import cycle).
"""

from __future__ import annotations

from crane_lsp.server import handlers, jupyter_commands
from crane_lsp.server.app import CraneServer
from crane_lsp.server.kernel_port import KernelsFactory


def create_server(kernels: KernelsFactory | None = None) -> CraneServer:
    """A fresh server (one per process; tests build their own); ``kernels`` as ``CraneServer`` takes it."""
    server = CraneServer(kernels)
    handlers.register(server)
    jupyter_commands.register(server)  # the structured verdict and run guard (JupyterLab)
    return server
