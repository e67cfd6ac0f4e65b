"""Kernels behind a Jupyter Server: their URLs, the server's token, and the REST calls around them.

A kernel URL is ``http(s)://HOST:PORT[/BASE]/api/kernels/KERNEL_ID`` (also ``ws(s)://``, and the
websocket's own ``.../channels``). The token comes from the caller (a setting, the editor's secret
storage) or ``JUPYTER_TOKEN``; it is sent only as an ``Authorization`` header and never appears in a
message, a log line or ``KernelUrl``'s text.

REST goes through tornado's ``AsyncHTTPClient`` (tornado is already there: jupyter_client and ipykernel
need it; see ``transport_ws`` for why tornado).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = [
    "KernelUrl",
    "RemoteError",
    "RemoteRefused",
    "find_session_kernel",
    "parse_kernel_url",
    "resolve_token",
    "rest",
    "shutdown_kernel",
    "start_kernel",
]

_KERNEL_PATH = re.compile(r"^(?P<base>.*?)/api/kernels/(?P<id>[A-Za-z0-9._-]+)(?:/channels)?/?$")


class RemoteError(RuntimeError):
    """A Jupyter Server could not be reached or answered an error; one line, without the token."""


class RemoteRefused(RemoteError):
    """The server refused the token (401 or 403)."""


@dataclass(frozen=True)
class KernelUrl:
    """One kernel on one Jupyter Server. ``base_url``: ``http(s)://host:port[/base]``, no slash at the end."""

    base_url: str
    kernel_id: str

    def __str__(self) -> str:
        return f"{self.base_url}/api/kernels/{self.kernel_id}"

    @property
    def rest_url(self) -> str:
        return str(self)

    @property
    def channels_url(self) -> str:
        """The kernel websocket (``ws`` for ``http``, ``wss`` for ``https``)."""
        scheme, rest = self.base_url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/api/kernels/{self.kernel_id}/channels"


def _server_url(text: str) -> str:
    """``http(s)://host:port[/base]`` of a server URL, ws(s) mapped to http(s), query and slash dropped."""
    parts = urlsplit(text.strip())
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    netloc = parts.netloc.rsplit("@", 1)[-1]  # credentials in a URL are never kept (nor printed)
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def parse_kernel_url(text: str) -> KernelUrl | None:
    """The ``KernelUrl`` of ``text``, or None when it is no kernel URL (e.g. a connection file path)."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        return None
    match = _KERNEL_PATH.match(parts.path)
    if not match:
        return None
    base = _server_url(urlunsplit((parts.scheme, parts.netloc, match["base"], "", "")))
    return KernelUrl(base, match["id"])


def resolve_token(explicit: str | None) -> str | None:
    """The token to send: the explicit one (a setting, the editor's secret store), else ``JUPYTER_TOKEN``."""
    if explicit:
        return explicit
    return os.environ.get("JUPYTER_TOKEN") or None


def refusal(server: str, token: str | None, code: int) -> str:
    """The one message for a 401/403: a wrong token, or none where the server needs one."""
    if not token:
        why = "set JUPYTER_TOKEN or the jupyterToken setting"
        return f"the Jupyter server at {server} needs a token ({code}): {why}"
    return f"the Jupyter server at {server} refused the token ({code})"


def headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"token {token}"} if token else {}


async def rest(
    server_url: str, token: str | None, method: str, path: str, body: Any = None, timeout: float = 10.0
) -> Any:
    """One REST call to a Jupyter Server; its JSON (None when empty). ``RemoteRefused`` on 401/403,
    ``RemoteError`` (with ``.code``) on any other failure; messages name the server, never the token."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

    base = _server_url(server_url)
    request = HTTPRequest(
        base + path,
        method=method,
        headers={**headers(token), "Content-Type": "application/json"},
        body=json.dumps(body) if body is not None else ("" if method in ("POST", "PATCH", "PUT") else None),
        connect_timeout=timeout,
        request_timeout=timeout,
        follow_redirects=False,
    )
    try:
        response = await AsyncHTTPClient().fetch(request)
    except HTTPClientError as exc:
        if exc.code in (401, 403):
            raise RemoteRefused(refusal(base, token, exc.code)) from None
        error = RemoteError(f"the Jupyter server at {base} answered {exc.code} to {method} {path}")
        error.code = exc.code  # type: ignore[attr-defined]
        raise error from None
    except OSError as exc:
        raise RemoteError(f"the Jupyter server at {base} is not reachable ({exc.strerror or exc})") from None
    raw = response.body or b""
    return json.loads(raw) if raw.strip() else None


async def find_session_kernel(server_url: str, token: str | None, notebook_path: str) -> KernelUrl | None:
    """The kernel of the server's session for ``notebook_path`` (``GET /api/sessions``), or None.

    The path matches relative to the server's root (``notebook_path`` may be absolute and end with the
    session's path), else by file name when exactly one session has it."""
    sessions = await rest(server_url, token, "GET", "/api/sessions")
    if not isinstance(sessions, list):
        return None
    want = PurePosixPath(notebook_path.replace("\\", "/"))
    by_name: list[str] = []
    for session in sessions:
        kernel = (session or {}).get("kernel") or {}
        path = (session or {}).get("path") or (session.get("notebook") or {}).get("path")
        if not kernel.get("id") or not path:
            continue
        rel = PurePosixPath(str(path))
        if want == rel or (want.is_absolute() and want.parts[-len(rel.parts) :] == rel.parts):
            return KernelUrl(_server_url(server_url), str(kernel["id"]))
        if rel.name == want.name:
            by_name.append(str(kernel["id"]))
    if len(by_name) == 1:
        return KernelUrl(_server_url(server_url), by_name[0])
    return None


async def start_kernel(server_url: str, token: str | None, name: str = "python3") -> KernelUrl:
    """Start a kernel on the server (``POST /api/kernels``)."""
    answer = await rest(server_url, token, "POST", "/api/kernels", {"name": name}, timeout=60.0)
    if not isinstance(answer, dict) or not answer.get("id"):
        raise RemoteError(f"the Jupyter server at {_server_url(server_url)} started no kernel")
    return KernelUrl(_server_url(server_url), str(answer["id"]))


async def shutdown_kernel(url: KernelUrl, token: str | None) -> None:
    """Delete the kernel on its server (``DELETE /api/kernels/<id>``); a kernel already gone is fine."""
    try:
        await rest(url.base_url, token, "DELETE", f"/api/kernels/{quote(url.kernel_id)}", timeout=30.0)
    except RemoteError as exc:
        if getattr(exc, "code", None) != 404:
            raise
