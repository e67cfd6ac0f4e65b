"""jupyter-lsp's virtual notebook document, split back into the notebook's cells.

Without crane's own JupyterLab extension, jupyterlab-lsp sends a notebook as one Python text
document: every code cell's text followed by ``\\n``, the blocks joined by two blank lines
(``@jupyterlab/lsp`` ``VirtualDocument.blankLinesBetweenCells``), the whole text again on every
keystroke, IPython line magics rewritten as ``get_ipython()`` calls, and, when the server requires
documents on disk, the path moved under ``.virtual_documents/``. This module turns such a document
into a ``NotebookView`` whose cells sit on the document's own lines, so squiggles land where the user
sees the code, and maps the path back to the notebook for the kernel lookup.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from crane_lsp.server.documents import CellView, NotebookView, from_percent

VIRTUAL_DIR = ".virtual_documents"
SEPARATOR = "\n\n\n"  # a block's own trailing "\n" plus two blank lines
MAX_HINT_BYTES = 20_000_000  # a saved notebook bigger than this is not read for cell boundaries

_LINE_MAGIC = re.compile(r'^(\s*)get_ipython\(\)\.run_line_magic\("([^"]*)", "((?:[^"\\]|\\.)*)"\)\s*$')
_SHELL = re.compile(r'^(\s*)get_ipython\(\)\.(?:system|getoutput)\("((?:[^"\\]|\\.)*)"\)\s*$')


@dataclass
class Block:
    text: str
    first_line: int
    kind: str = "code"


def uri_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return Path(unquote(parsed.path)) if parsed.path else None


def notebook_path(path: Path) -> Path:
    """``<root>/.virtual_documents/<rel>`` -> ``<root>/<rel>``; any other path unchanged."""
    parts = path.parts
    if VIRTUAL_DIR not in parts:
        return path
    i = len(parts) - 1 - parts[::-1].index(VIRTUAL_DIR)
    return Path(*parts[:i], *parts[i + 1 :])


def is_virtual_notebook(uri: str, language_id: str | None = None) -> bool:
    """A whole notebook sent as one Python text document (an ``.ipynb`` path over ``file:``)."""
    path = uri_path(uri)
    if path is None or path.suffix != ".ipynb":
        return False
    return (language_id or "python").lower() in ("python", "ipython", "python3")


def unmagic(line: str) -> str:
    """jupyterlab-lsp's rewrite of a line magic or shell escape, back to what the user typed."""
    m = _LINE_MAGIC.match(line)
    if m:
        args = m.group(3).replace('\\"', '"').replace("\\\\", "\\")
        return f"{m.group(1)}%{m.group(2)}{' ' + args if args else ''}"
    m = _SHELL.match(line)
    if m:
        return f"{m.group(1)}!{m.group(2).replace(chr(92) + chr(34), chr(34))}"
    return line


def saved_cells(path: Path | None) -> list[tuple[str, str]]:
    """(source, kind) of the notebook as last saved: hints for cells holding two blank lines."""
    if path is None:
        return []
    try:
        if path.stat().st_size > MAX_HINT_BYTES:
            return []
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for cell in data.get("cells", []) if isinstance(data, dict) else []:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        out.append((source, str(cell.get("cell_type", "code"))))
    return out


def split_virtual(text: str, hints: list[tuple[str, str]] | None = None) -> list[Block]:
    """The cells of a virtual notebook document, each with its first line in the document.

    Runs of two blank lines separate cells; where the saved notebook shows a cell that itself holds
    such a run, the pieces are joined back into that cell. A markdown cell (kept only as an empty
    block, or as its text where no extractor took it) is marked as markdown.
    """
    body = text[:-1] if text.endswith("\n") else text
    pieces = body.split(SEPARATOR)
    multi = sorted(
        {src for src, _ in hints or [] if SEPARATOR in src}, key=lambda s: s.count(SEPARATOR), reverse=True
    )
    markdown = {src.strip() for src, kind in hints or [] if kind != "code" and src.strip()}
    blocks: list[Block] = []
    line = i = 0
    while i < len(pieces):
        take = 1
        for src in multi:
            k = src.count(SEPARATOR) + 1
            if _same_code(SEPARATOR.join(pieces[i : i + k]), src):
                take = k
                break
        piece = SEPARATOR.join(pieces[i : i + take])
        source = "\n".join(unmagic(x) for x in piece.split("\n"))
        kind = "markdown" if source.strip() in markdown else "code"
        blocks.append(Block(source, line, kind))
        line += piece.count("\n") + 3
        i += take
    return blocks


def _same_code(virtual: str, source: str) -> bool:
    ours = [unmagic(x).rstrip() for x in virtual.split("\n")]
    theirs = [x.rstrip() for x in source.split("\n")]
    return ours == theirs


def virtual_view(uri: str, text: str) -> NotebookView:
    """The view of a virtual notebook document; cells keyed by position like a ``# %%`` script."""
    path = uri_path(uri)
    hints = saved_cells(notebook_path(path)) if path is not None else []
    cells = [
        CellView(key=f"{uri}#cell{i}", uri=uri, text=b.text, index=i, kind=b.kind, first_line=b.first_line)
        for i, b in enumerate(split_virtual(text, hints))
    ]
    return NotebookView(uri=uri, cells=cells, percent=True)


def view_for_text(uri: str, text: str) -> NotebookView:
    """The view of a single text document followed as a notebook: virtual notebook or ``# %%``."""
    return virtual_view(uri, text) if is_virtual_notebook(uri) else from_percent(uri, text)
