"""Which kernel each notebook reads, and surviving that kernel's death and restarts.

Order of precedence: a kernel the editor attached to this notebook (``crane/attachKernel``), the
``connectionFile`` setting (a file or a kernel URL), the notebook's session on the ``jupyterServerUrl``
server (with ``jupyterToken`` / ``JUPYTER_TOKEN``), then discovery (the notebook's session on a local
Jupyter server: its connection file, else its kernel through that server's API, as in gateway mode;
else the newest live kernel). A failed or lost attachment is never an error for the user, only "no
kernel" in the status; attaching is retried with a back-off, so a restarted kernel is picked up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crane_lsp.server.kernel_target import KernelTarget, is_url, shown, uri_to_path

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelEvent, KernelLink
    from crane_lsp.kernel.transport_relay import RelayTarget

log = logging.getLogger(__name__)

RETRY_S = 3.0  # after a failed attach, wait this long before trying again, doubling up to RETRY_MAX_S
RETRY_MAX_S = 30.0


@dataclass
class Attachment:
    """One notebook's kernel: where it is, the live link (None when not attached), why not."""

    explicit: str | None = None  # connection file or kernel URL named by the editor for this notebook
    link: KernelLink | None = None
    connection_file: str | None = None  # where the link reads: a file's path or a kernel URL (no token)
    target: KernelTarget | RelayTarget | None = None
    relay: RelayTarget | None = None  # the editor relays its kernel: re-attached the same way when lost
    error: str | None = None
    last_try: float = 0.0
    failures: int = 0
    unsubscribe: Callable[[], None] | None = None
    unresponsive: bool = False  # attached, but the heartbeat went unanswered
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def state(self) -> str:
        if self.link is None:
            return "none"
        if self.unresponsive:
            return "unresponsive"
        return "busy" if self.link.busy else "attached"


class Kernels:
    """Attachments per notebook URI; ``on_event(notebook_uri, event)`` hears cells finish and restarts."""

    def __init__(self, on_event: Callable[[str, KernelEvent], None]) -> None:
        self._on_event = on_event
        self._attachments: dict[str, Attachment] = {}
        self.default_connection_file: str | None = None
        self.jupyter_server_url: str | None = None
        # the setting, else JUPYTER_TOKEN (already here for an attach that comes before the settings)
        self.jupyter_token: str | None = os.environ.get("JUPYTER_TOKEN") or None

    def attachment(self, notebook_uri: str) -> Attachment:
        return self._attachments.setdefault(notebook_uri, Attachment())

    def state(self, notebook_uri: str) -> str:
        att = self._attachments.get(notebook_uri)
        return att.state if att else "none"

    async def attach(self, notebook_uri: str, connection_file: str | RelayTarget) -> str | None:
        """Attach ``connection_file`` (a file or a kernel URL, or the editor's relayed kernel) to the
        notebook now; the error message, or None on success."""
        att = self.attachment(notebook_uri)
        named = connection_file if isinstance(connection_file, str) else None
        relay = None if isinstance(connection_file, str) else connection_file
        async with att.lock:
            try:  # the new kernel first: a failed attach keeps the kernel that was working
                target: KernelTarget | RelayTarget
                target = relay if relay is not None else await asyncio.to_thread(self.target, str(named))
                link = await target.connect()
            except Exception as exc:  # KernelDead, a refused token, anything a broken file causes
                error = str(exc) or type(exc).__name__
                kept = " (the kernel attached before stays attached)" if att.link is not None else ""
                where = relay.label if relay is not None else shown(str(named))
                log.warning("could not attach %s to %s: %s%s", where, notebook_uri, error, kept)
                if att.link is None:
                    att.error = error
                    if named is not None and is_url(named):  # the kernel the user named: retried
                        att.explicit = named  # (back-off), not replaced by whatever discovery finds
                        att.failures, att.last_try = 1, time.monotonic()
                return error
            att.relay = relay
            att.explicit = named
            await self._drop(att)
            att.failures = 0
            self._adopt(notebook_uri, att, link, target)
            return None

    def target(self, where: str) -> KernelTarget:
        """A connection file or kernel URL as a target: a URL gets its token (a local server's own,
        else ``jupyterToken`` / ``JUPYTER_TOKEN``); ``ValueError`` for a malformed URL."""
        if not is_url(where):
            return KernelTarget(where)
        from crane_lsp.kernel.connection import list_servers
        from crane_lsp.server.kernel_target import url_target

        return url_target(where, self.jupyter_token, list_servers())

    async def link_for(self, notebook_uri: str) -> KernelLink | None:
        """The notebook's live link, attaching (with back-off) when there is none."""
        att = self.attachment(notebook_uri)
        if att.link is not None:
            return att.link
        if att.lock.locked():
            # an attach (the editor's, or another check's) is in progress: its outcome is the answer;
            # checking without the kernel meanwhile would publish crashing cells as clean
            async with att.lock:
                return att.link
        wait = min(RETRY_S * 2 ** max(att.failures - 1, 0), RETRY_MAX_S)
        if att.last_try and time.monotonic() - att.last_try < wait:
            return None
        async with att.lock:
            if att.link is not None:
                return att.link
            target = await self._choose(notebook_uri, att)
            if target is not None:
                await self._connect(notebook_uri, att, target)
            att.failures = 0 if att.link is not None else att.failures + 1
            att.last_try = time.monotonic()  # the back-off runs from the end of the failed attempt
            return att.link

    async def lost(self, notebook_uri: str, why: str, *, backoff: bool = True) -> None:
        """The kernel stopped answering (or another one was named): forget the link; a later check
        attaches again, after the back-off unless ``backoff`` is False."""
        att = self.attachment(notebook_uri)
        async with att.lock:
            await self._drop(att)
            att.error = why
            att.last_try = time.monotonic() if backoff else 0.0
            att.failures = 1 if backoff else 0

    async def forget(self, notebook_uri: str) -> None:
        att = self._attachments.pop(notebook_uri, None)
        if att is not None:
            await self._drop(att)

    async def close(self) -> None:
        for uri in list(self._attachments):
            await self.forget(uri)

    async def _choose(self, notebook_uri: str, att: Attachment) -> KernelTarget | RelayTarget | None:
        """The kernel to try: explicit, setting, the server's session, else discovery; None (and
        why) if none."""
        from crane_lsp.kernel.connection import ConnectionNotFound
        from crane_lsp.server.jupyter_sessions import discover_target, server_session_target

        att.last_try = time.monotonic()
        if att.relay is not None:  # the editor's kernel, relayed: the same way again after a loss
            return att.relay
        explicit = att.explicit or self.default_connection_file
        try:
            # discovery reads files and may ask a Jupyter server over HTTP: keep it off the event loop
            if explicit and is_url(explicit):
                return await asyncio.to_thread(self.target, explicit)
            notebook = uri_to_path(notebook_uri)
            if not explicit and self.jupyter_server_url:
                return await server_session_target(self.jupyter_server_url, self.jupyter_token, notebook)
            return await asyncio.to_thread(discover_target, explicit, notebook)
        except (ConnectionNotFound, ValueError) as exc:
            att.error = str(exc)
        except Exception as exc:  # discovery reads files and asks servers: never fatal
            att.error = f"kernel discovery failed: {exc}"
        return None

    async def _connect(
        self, notebook_uri: str, att: Attachment, target: KernelTarget | RelayTarget
    ) -> str | None:
        att.last_try = time.monotonic()
        try:
            link = await target.connect()
        except Exception as exc:  # KernelDead, a refused token, anything a broken file causes
            att.error = str(exc) or type(exc).__name__
            log.info("could not attach %s to %s: %s", target.label, notebook_uri, att.error)
            return att.error
        self._adopt(notebook_uri, att, link, target)
        return None

    def _adopt(
        self, notebook_uri: str, att: Attachment, link: KernelLink, target: KernelTarget | RelayTarget
    ) -> None:
        att.link, att.connection_file, att.error, att.unresponsive = link, target.where, None, False
        att.target = target
        att.unsubscribe = link.add_listener(lambda event: self._on_event(notebook_uri, event))
        log.info("attached %s to %s", target.label, notebook_uri)

    @staticmethod
    async def _drop(att: Attachment) -> None:
        link, att.link = att.link, None
        if att.unsubscribe is not None:
            att.unsubscribe()
            att.unsubscribe = None
        if link is not None:
            with contextlib.suppress(Exception):
                await link.close()
