"""What the server needs from the kernels it reads: the seam ``create_server(kernels=...)`` takes.

``server/kernels.Kernels`` is the real one (attach, discovery, back-off, restarts); tests where a
real kernel is not the point hand the server a small fake with the same shape instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelEvent, KernelLink
    from crane_lsp.kernel.transport_relay import RelayTarget
    from crane_lsp.server.kernel_target import KernelTarget
    from crane_lsp.server.kernels import Attachment
    from crane_lsp.settings import Settings

#: ``on_event(notebook_uri, event)``: a cell finished, the kernel restarted or died
KernelEvents = Callable[[str, "KernelEvent"], None]


class KernelPort(Protocol):
    """Which kernel each notebook reads (``Attachment``: the link, its file, why there is none)."""

    default_connection_file: str | None  # the ``connectionFile`` setting: a file or a kernel URL
    jupyter_server_url: str | None  # ``jupyterServerUrl``: a notebook's session there is its kernel
    jupyter_token: str | None  # ``jupyterToken``, else ``JUPYTER_TOKEN``: never logged or sent

    def attachment(self, notebook_uri: str) -> Attachment: ...

    def state(self, notebook_uri: str) -> str: ...  # none | attached | busy | unresponsive

    #: a file or kernel URL, or the editor's relayed connection; the error message, or None
    async def attach(self, notebook_uri: str, connection_file: str | RelayTarget) -> str | None: ...

    async def link_for(self, notebook_uri: str) -> KernelLink | None: ...  # attaches when needed

    async def lost(self, notebook_uri: str, why: str, *, backoff: bool = True) -> None: ...

    async def close(self) -> None: ...


#: builds the server's kernels, given where their events go (``server.kernels.Kernels`` is one)
KernelsFactory = Callable[[KernelEvents], KernelPort]


def remote_settings(kernels: KernelPort, settings: Settings) -> bool:
    """Hand the Jupyter server settings to ``kernels`` (the token: the setting, else ``JUPYTER_TOKEN``,
    as ``kernel.remote.resolve_token`` reads it); whether they changed. Each token is registered with
    the log redaction, so no log line can show it."""
    from crane_lsp.server.redact import add_secret

    secret = settings.jupyter_token.get_secret_value() if settings.jupyter_token else None
    token = secret or os.environ.get("JUPYTER_TOKEN") or None
    add_secret(token)
    url = settings.jupyter_server_url or None
    before = (getattr(kernels, "jupyter_server_url", None), getattr(kernels, "jupyter_token", None))
    kernels.jupyter_server_url, kernels.jupyter_token = url, token
    return before != (url, token)


def where_payload(target: KernelTarget | RelayTarget | None) -> dict[str, Any]:
    """``crane/status``'s kernel location: ``connectionFile`` for a file, ``kernelUrl`` for a kernel
    on a Jupyter server (never a token), ``relayed`` for the editor's own kernel."""
    from crane_lsp.server.kernel_target import shown

    url = target.kernel_url if target is not None else None
    return {
        "connectionFile": target.connection_file if target is not None else None,
        "kernelUrl": shown(url) if url else None,
        "relayed": target is not None and target.url is None and target.connection_file is None,
    }
