"""pygls's documents with lines as LSP counts them.

pygls splits a document with ``str.splitlines``, which also breaks at form feeds (Emacs page
breaks), \\v, \\x85 and U+2028: after one of them every incremental edit lands a line low and the
server's copy of the text drifts from the editor's. These subclasses change only the line split.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pygls.workspace import TextDocument, Workspace

from crane_lsp.notebook import split_lines

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class LspTextDocument(TextDocument):
    @property
    def lines(self) -> Sequence[str]:
        return tuple(split_lines(self.source, keepends=True))


class LspWorkspace(Workspace):
    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def adopt(workspace: Any) -> None:
    """Make pygls's freshly built (still empty) workspace an ``LspWorkspace``."""
    if isinstance(workspace, Workspace) and not isinstance(workspace, LspWorkspace):
        workspace.__class__ = LspWorkspace


_LEADING_FORM_FEED = re.compile(r"^[ \t]*\f[ \t\f]*", re.MULTILINE)


def for_python(text: str) -> str:
    """The cell text as the checks read it: one kind of line end, no lone surrogates, and form
    feeds in indentation (Emacs page breaks) as spaces.

    All keep every line and column where it was (a line end is not part of a line; a surrogate
    becomes U+FFFD and a form feed a space, one character each), so findings map back onto the
    editor's text unchanged. A lone surrogate cannot be compiled, and would otherwise cost the
    cell (and its script) its warnings; Python reads a leading form feed as whitespace, but
    IPython's cell transforms drop such lines and the positions after them would drift."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\f" in text:
        text = _LEADING_FORM_FEED.sub(lambda m: m.group().replace("\f", " "), text)
    return _LONE_SURROGATE.sub("\ufffd", text)
