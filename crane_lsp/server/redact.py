"""No log line shows a secret: every record through the server's log handlers is scrubbed.

Why a filter rather than care at each call: a token can reach a log line indirectly (pygls at
DEBUG logs every message, ``workspace/configuration`` answers included; a library's exception text
may quote a URL with its query). The Jupyter token (``jupyterToken``, ``JUPYTER_TOKEN``, a token
pasted in a kernel URL, a local server's own) is registered here the moment crane learns it.
"""

from __future__ import annotations

import logging
import os
import re

MASK = "<token hidden>"
#: shorter strings would mask ordinary words; Jupyter's tokens are 48 hex digits
MIN_SECRET = 6
#: where a token shows before crane has read it (pygls logs ``initialize``'s options first): the
#: ``jupyterToken`` setting in any quoting, a URL's ``?token=``, an ``Authorization: token`` header
_SHAPES = (
    re.compile(r"""(jupyter_?token['"]?\s*[:=]\s*(?:SecretStr\()?['"]?)([^'"\s,}\)]+)""", re.IGNORECASE),
    re.compile(r"""([?&]token=)([^&#\s'"]+)"""),
    re.compile(r"""(authorization['"]?\s*[:=]\s*['"]?token\s+)([^'"\s,}]+)""", re.IGNORECASE),
)


class Redact(logging.Filter):
    """Replaces every registered secret in a record's message (and its exception text) by ``MASK``."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if "oken" in text:
            for shape in _SHAPES:
                text = shape.sub(lambda m: m.group(1) + MASK, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.scrub(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if clean != message:
            record.msg, record.args = clean, None
        return True


FILTER = Redact()


def add_secret(secret: str | None) -> None:
    if secret and len(secret) >= MIN_SECRET:
        FILTER.secrets.add(secret)


def install(logger: logging.Logger | None = None) -> None:
    """Scrub every handler of ``logger`` (the root logger) and the token in the environment."""
    add_secret(os.environ.get("JUPYTER_TOKEN"))
    for handler in (logger or logging.getLogger()).handlers:
        if FILTER not in handler.filters:
            handler.addFilter(FILTER)
