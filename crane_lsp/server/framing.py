"""Content-Length framing that survives a mis-sized frame (stdlib only: the early ``initialize``
answer in ``fastinit`` reads with it before pygls is imported).

``FrameReader`` keeps the bytes it has read; when a frame's body is not JSON it looks for the
message's real end (the next ``Content-Length:`` header, or the end of what arrived) and goes on
from the next header, so a mis-sized frame costs at most that one message, never the session.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

log = logging.getLogger(__name__)

_HEADER = re.compile(rb"(?:Content-Type:[^\r\n]*\r?\n)?Content-Length:[ \t]*", re.IGNORECASE)
_LENGTH = re.compile(rb"^Content-Length:[ \t]*(\d+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_END_OF_HEADERS = re.compile(rb"\r?\n\r?\n")
#: how long to wait for the rest of a frame whose body did not parse before trying what arrived
SETTLE_S = 0.05


def _decode(body: bytes) -> Any:
    """JSON from bytes; lone surrogates (``\\udc80`` escapes, valid JSON) come through as they are."""
    return json.loads(body.decode("utf-8", errors="surrogatepass"))


def _loads(body: bytes) -> tuple[bool, Any]:
    try:
        return True, _decode(body)
    except ValueError:
        return False, None


class FrameReader:
    """Splits a byte stream into JSON bodies, resynchronising on the next header after a bad frame.

    ``feed`` bytes as they arrive, then take complete messages with ``next_message``: ``(True,
    value)`` for a JSON body, ``(False, raw)`` for a body that is not JSON, ``None`` when more bytes
    are needed. ``flush`` (after a quiet moment) settles a frame that claimed more bytes than came.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    @property
    def pending(self) -> bool:
        return bool(self._buf.strip())

    def next_message(self, *, settled: bool = False) -> tuple[bool, Any] | None:
        """The next body, or None until more bytes came (``settled``: none came for a while)."""
        buf = self._buf
        while True:
            start = _HEADER.search(buf)
            if start is None:
                if settled and buf.strip():
                    junk = bytes(buf)
                    buf.clear()
                    return False, junk  # no header anywhere: junk
                return None
            if buf[: start.start()].strip():
                junk = bytes(buf[: start.start()])
                del buf[: start.start()]
                return False, junk  # junk before the next header
            del buf[: start.start()]  # a bare CRLF between frames is harmless
            end = _END_OF_HEADERS.search(buf)
            if end is None:
                return None
            length = _LENGTH.search(bytes(buf[: end.start() + 1]))
            if length is None:  # a header block without a usable length: skip it
                del buf[: end.end()]
                continue
            size, body = int(length.group(1)), end.end()
            if len(buf) < body + size and not settled:
                return None  # the body is still on its way (a big message comes in many chunks)
            if len(buf) >= body + size:
                ok, value = _loads(bytes(buf[body : body + size]))
                if ok:
                    del buf[: body + size]
                    return True, value
            # not (yet) a JSON body of the announced size: the message may end elsewhere
            later = _HEADER.search(buf, body)
            stop = later.start() if later is not None else len(buf)
            raw = bytes(buf[body:stop])
            ok, value = _loads(raw.strip())
            if not ok and later is None and (not settled or len(buf) < body + size):
                return None  # the rest is still on its way
            del buf[:stop]
            log.warning(
                "a frame's Content-Length (%d) did not match its body (%d bytes): %s",
                size,
                len(raw.strip()),
                "recovered the message" if ok else "skipped it",
            )
            return (True, value) if ok else (False, raw)
