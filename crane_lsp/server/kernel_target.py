"""Where a notebook's kernel is: a connection file, or a kernel's URL on a Jupyter server and its token.

Why one type: every place that takes a connection file (the ``connectionFile`` setting, the
``crane.attachKernel`` command, the ``crane/attachKernel`` notification, discovery) also takes a kernel
URL, ``http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID``. The token travels beside the URL, never in it,
and never in ``where`` (what the status, notices and logs show): from a local Jupyter server's
``jpserver-<pid>.json`` when the URL is that server's, else the ``jupyterToken`` setting, else
``JUPYTER_TOKEN``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlparse, urlsplit, urlunsplit

if TYPE_CHECKING:
    from crane_lsp.kernel.connection import JupyterServer
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.remote import KernelUrl

_SCHEMES = ("http://", "https://", "ws://", "wss://")


def uri_to_path(uri: str) -> Path | None:
    """The local path of a notebook's (or cell's) URI; None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", "vscode-notebook-cell", ""):
        return None
    return Path(unquote(parsed.path)) if parsed.path else None


def is_url(text: str) -> bool:
    """Whether a ``connectionFile`` value names a kernel URL rather than a file."""
    return text.strip().lower().startswith(_SCHEMES)


@dataclass(frozen=True)
class KernelTarget:
    """A kernel to attach: ``where`` is the file's path or the URL (shown to the user, no token)."""

    where: str
    url: KernelUrl | None = None
    token: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        from crane_lsp.server.redact import add_secret

        add_secret(self.token)  # whichever way crane learnt it, no log line shows it

    @property
    def connection_file(self) -> str | None:
        return None if self.url is not None else self.where

    @property
    def kernel_url(self) -> str | None:
        return self.where if self.url is not None else None

    @property
    def label(self) -> str:
        """How messages name it: the file's path, or ``kernel at <url>``."""
        return f"kernel at {self.where}" if self.url is not None else self.where

    async def connect(self) -> KernelLink:
        from crane_lsp.kernel.link import KernelLink

        if self.url is None:
            return await KernelLink.connect(self.where)
        return await KernelLink.connect_url(self.url, self.token)


def _origin(url: str) -> tuple[str, str, str]:
    """(scheme as http/https, host:port, base path with one trailing slash) of a server or kernel URL."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme.lower(), parts.scheme.lower())
    host = (parts.hostname or "").lower()
    host = "127.0.0.1" if host in ("localhost", "::1", "0.0.0.0") else host
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, f"{host}:{port}", parts.path.rstrip("/") + "/"


def same_server(server_url: str, kernel_url: KernelUrl) -> bool:
    """Whether ``kernel_url`` is a kernel of the server at ``server_url`` (localhost spelt any way)."""
    return _origin(server_url) == _origin(kernel_url.base_url)


def local_server_for(url: KernelUrl, servers: list[JupyterServer]) -> JupyterServer | None:
    """The running Jupyter server on this host that serves ``url`` (its token is in its runtime file)."""
    return next((s for s in servers if same_server(s.url, url)), None)


def shown(where: str) -> str:
    """``where`` fit for a message: a URL without its query, fragment or user:password part (a
    pasted ``?token=...`` never reaches a log or the screen)."""
    if not is_url(where):
        return where
    parts = urlsplit(where.strip())
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def split_token(text: str) -> tuple[str, str | None]:
    """(the URL without query or credentials, the ``token`` its query carried if any)."""
    tokens = parse_qs(urlsplit(text.strip()).query).get("token")
    return shown(text), (tokens[0] if tokens and tokens[0] else None)


def url_target(text: str, token: str | None, servers: list[JupyterServer] | None = None) -> KernelTarget:
    """The target for a kernel URL the user gave; ``ValueError`` (one line) for a malformed one.

    A token in the URL's query (as Jupyter prints its URLs) wins; then a local Jupyter server serving
    the URL lends its own (gateway mode, zero-config); else ``token`` (``jupyterToken`` or
    ``JUPYTER_TOKEN``).
    """
    from crane_lsp.kernel.remote import parse_kernel_url

    bare, in_url = split_token(text)
    url = parse_kernel_url(bare)
    if url is None:
        raise ValueError(f"{bare} is not a kernel URL (http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID)")
    local = local_server_for(url, servers) if servers else None
    lent = (local.token or None) if local is not None else None
    return KernelTarget(where=display(url), url=url, token=in_url or lent or token)


def kernel_on_server(server: JupyterServer, kernel_id: str) -> KernelTarget:
    """The kernel ``kernel_id`` reached through the local Jupyter ``server``'s own API (no
    connection file on this host: the server runs in gateway mode, or as another user)."""
    from crane_lsp.kernel.remote import KernelUrl

    url = KernelUrl(shown(server.url).rstrip("/"), kernel_id)
    return KernelTarget(where=display(url), url=url, token=server.token or None)


def display(url: KernelUrl) -> str:
    """The URL as the user reads it: ``http://host:port/base/api/kernels/<id>``, never a token."""
    return str(url)
