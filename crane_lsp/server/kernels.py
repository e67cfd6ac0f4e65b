"""Which kernel each notebook reads, and surviving that kernel's death and restarts.

Order of precedence: a kernel the editor attached to this notebook (``crane/attachKernel``), the
``connectionFile`` setting, then discovery (the Jupyter server session of the notebook, else the
newest live kernel). A failed or lost attachment is never an error for the user, only "no kernel"
in the status; attaching is retried with a back-off, so a restarted kernel is picked up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelEvent, KernelLink

log = logging.getLogger(__name__)

RETRY_S = 3.0  # after a failed attach, wait this long before trying again, doubling up to RETRY_MAX_S
RETRY_MAX_S = 30.0


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", "vscode-notebook-cell", ""):
        return None
    return Path(unquote(parsed.path)) if parsed.path else None


@dataclass
class Attachment:
    """One notebook's kernel: where it is, the live link (None when not attached), why not."""

    explicit: str | None = None  # connection file named by the editor for this notebook
    link: KernelLink | None = None
    connection_file: str | None = None
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

    def attachment(self, notebook_uri: str) -> Attachment:
        return self._attachments.setdefault(notebook_uri, Attachment())

    def state(self, notebook_uri: str) -> str:
        att = self._attachments.get(notebook_uri)
        return att.state if att else "none"

    async def attach(self, notebook_uri: str, connection_file: str) -> str | None:
        """Attach ``connection_file`` to the notebook now; the error message, or None on success."""
        att = self.attachment(notebook_uri)
        async with att.lock:
            from crane_lsp.kernel.link import KernelLink

            try:  # the new kernel first: a failed attach keeps the kernel that was working
                link = await KernelLink.connect(connection_file)
            except Exception as exc:  # KernelDead and anything a broken file causes
                error = str(exc) or type(exc).__name__
                kept = " (the kernel attached before stays attached)" if att.link is not None else ""
                log.warning("could not attach %s to %s: %s%s", connection_file, notebook_uri, error, kept)
                if att.link is None:
                    att.error = error
                return error
            att.explicit = connection_file
            await self._drop(att)
            att.failures = 0
            self._adopt(notebook_uri, att, link, connection_file)
            return None

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
            path = await self._choose(notebook_uri, att)
            if path is not None:
                await self._connect(notebook_uri, att, path)
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

    async def _choose(self, notebook_uri: str, att: Attachment) -> str | None:
        """The connection file to try: explicit, setting, else discovery; None (and why) if none."""
        from crane_lsp.kernel.connection import ConnectionNotFound
        from crane_lsp.server.jupyter_sessions import discover_for_notebook  # a notebook's own session

        att.last_try = time.monotonic()
        explicit = att.explicit or self.default_connection_file
        try:
            # discovery reads files and may ask a Jupyter server over HTTP: keep it off the event loop
            found = await asyncio.to_thread(discover_for_notebook, explicit, uri_to_path(notebook_uri))
            return str(found)
        except ConnectionNotFound as exc:
            att.error = str(exc)
        except Exception as exc:  # discovery reads files and asks servers: never fatal
            att.error = f"kernel discovery failed: {exc}"
        return None

    async def _connect(self, notebook_uri: str, att: Attachment, path: str) -> str | None:
        from crane_lsp.kernel.link import KernelLink

        att.last_try = time.monotonic()
        try:
            link = await KernelLink.connect(path)
        except Exception as exc:  # KernelDead and anything a broken file causes
            att.error = str(exc) or type(exc).__name__
            log.info("could not attach %s to %s: %s", path, notebook_uri, att.error)
            return att.error
        self._adopt(notebook_uri, att, link, path)
        return None

    def _adopt(self, notebook_uri: str, att: Attachment, link: KernelLink, path: str) -> None:
        att.link, att.connection_file, att.error, att.unresponsive = link, path, None, False
        att.unsubscribe = link.add_listener(lambda event: self._on_event(notebook_uri, event))
        log.info("attached %s to %s", path, notebook_uri)

    @staticmethod
    async def _drop(att: Attachment) -> None:
        link, att.link = att.link, None
        if att.unsubscribe is not None:
            att.unsubscribe()
            att.unsubscribe = None
        if link is not None:
            with contextlib.suppress(Exception):
                await link.close()
