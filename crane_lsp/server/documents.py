"""One view of a notebook, whichever way the editor sends it, and the exact coordinate mapping.

LSP notebooks (``notebookDocument/*``) put each cell in its own text document; percent-format
scripts (``# %%``) keep every cell in one document, offset by the marker lines. Both become a
``NotebookView`` whose cells know the URI their diagnostics go to and their line offset there, so
a prediction's (line, col) in a cell lands on the same characters the user sees, in every adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsprotocol import types

from crane_lsp.notebook import is_percent_script, parse_percent, split_lines

if TYPE_CHECKING:  # the analysis is slow to import: not before ``initialize`` is answered
    from crane_lsp.analysis.positions import Span

#: Notebook types whose Python cells the server follows (VS Code's Jupyter and interactive window).
NOTEBOOK_TYPES = ("jupyter-notebook", "interactive")


def notebook_sync_options() -> types.NotebookDocumentSyncOptions:
    cells = [types.NotebookCellLanguage(language="python")]
    return types.NotebookDocumentSyncOptions(
        notebook_selector=[
            types.NotebookDocumentFilterWithCells(cells=cells, notebook=nb_type) for nb_type in NOTEBOOK_TYPES
        ],
        save=True,
    )


@dataclass
class CellView:
    key: str  # stable identity: the cell document's URI, or "<uri>#cell<N>" in a percent script
    uri: str  # the document the cell's diagnostics are published to
    text: str
    index: int  # position among all cells of the notebook
    kind: str = "code"  # "code" | "markdown"
    first_line: int = 0  # the cell's first line inside ``uri``
    execution_order: int | None = None
    success: bool | None = None

    _lines: tuple[str, list[str]] | None = field(default=None, repr=False, compare=False)

    @property
    def lines(self) -> list[str]:
        """The cell's lines as the editor counts them (``split_lines``), cached per text."""
        if self._lines is None or self._lines[0] is not self.text:
            self._lines = (self.text, split_lines(self.text))
        return self._lines[1]

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line_text(self, line: int) -> str:
        lines = self.lines
        return lines[line] if 0 <= line < len(lines) else ""


@dataclass
class NotebookView:
    uri: str
    cells: list[CellView] = field(default_factory=list)
    percent: bool = False

    @property
    def code_cells(self) -> list[CellView]:
        return [c for c in self.cells if c.kind == "code"]

    def cell(self, key: str) -> CellView | None:
        return next((c for c in self.cells if c.key == key), None)

    def cell_at(self, uri: str, line: int) -> tuple[CellView, int] | None:
        """The cell shown at ``line`` of document ``uri`` and the line inside that cell."""
        for c in self.cells:
            if c.uri == uri and c.first_line <= line < c.first_line + c.line_count:
                return c, line - c.first_line
        return None

    def executed_in_order(self) -> list[CellView]:
        """Cells the editor says ran, in execution order (LSP ``executionSummary``)."""
        ran = [c for c in self.code_cells if c.execution_order is not None]
        return sorted(ran, key=lambda c: c.execution_order or 0)

    def target_uris(self) -> set[str]:
        return {c.uri for c in self.cells}


def from_lsp_notebook(notebook: types.NotebookDocument, texts: dict[str, str]) -> NotebookView:
    """A view of an LSP notebook; ``texts`` maps cell document URIs to their current text."""
    cells = []
    for i, cell in enumerate(notebook.cells):
        summary = cell.execution_summary
        cells.append(
            CellView(
                key=cell.document,
                uri=cell.document,
                text=texts.get(cell.document, ""),
                index=i,
                kind="code" if cell.kind == types.NotebookCellKind.Code else "markdown",
                execution_order=summary.execution_order if summary else None,
                success=summary.success if summary else None,
            )
        )
    return NotebookView(uri=notebook.uri, cells=cells)


def from_percent(uri: str, text: str) -> NotebookView:
    """A view of a ``# %%`` script: one view cell per percent cell, offset by its marker line."""
    nb = parse_percent(text)
    cells = [
        CellView(key=f"{uri}#cell{i}", uri=uri, text=c.source, index=i, kind=c.kind, first_line=c.first_line)
        for i, c in enumerate(nb.cells)
    ]
    return NotebookView(uri=uri, cells=cells, percent=True)


def wants_percent(uri: str, language_id: str | None, text: str) -> bool:
    """A plain Python document is followed as a notebook only when it has ``# %%`` markers."""
    python = (language_id or "").lower() == "python" or uri.endswith(".py")
    return python and is_percent_script(text)


def _encode_col(line_text: str, col: int, encoding: str) -> int:
    """A character column as the negotiated position encoding counts it (UTF-16 by default).

    ``surrogatepass``: a lone surrogate (valid in JSON and in editor strings) is one UTF-16 unit
    and three UTF-8 bytes, as editors count it, instead of a ``UnicodeEncodeError``."""
    col = max(0, min(col, len(line_text)))
    if encoding == types.PositionEncodingKind.Utf32:
        return col
    if encoding == types.PositionEncodingKind.Utf8:
        return len(line_text[:col].encode("utf-8", "surrogatepass"))
    return len(line_text[:col].encode("utf-16-le", "surrogatepass")) // 2


def _decode_col(line_text: str, units: int, encoding: str) -> int:
    """The inverse of ``_encode_col``: a position's column back to a character index (linear)."""
    if encoding == types.PositionEncodingKind.Utf32:
        return max(0, min(units, len(line_text)))
    wide = 4 if encoding == types.PositionEncodingKind.Utf8 else 2
    count = 0
    for i, ch in enumerate(line_text):
        if count >= units:
            return i
        o = ord(ch)
        if wide == 2:
            count += 2 if o > 0xFFFF else 1
        else:
            count += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
    return len(line_text)


def span_of(
    cell: CellView, line: int | None, col: int | None, end_line: int | None, end_col: int | None
) -> Span:
    """A complete span in the cell from a prediction's possibly partial coordinates.

    No line: the first non-blank line. No column: from the first non-blank character. No end: to the
    end of the (start) line. Everything is clamped to the cell so a wrong line can never point elsewhere.
    """
    last = cell.line_count - 1
    if line is None:
        line = next((i for i in range(last + 1) if cell.line_text(i).strip()), 0)
    line = max(0, min(line, last))
    text = cell.line_text(line)
    if col is None:
        col = len(text) - len(text.lstrip())
    col = max(0, min(col, len(text)))
    if end_line is None or end_line < line:
        end_line = line
    end_line = min(end_line, last)
    end_text = cell.line_text(end_line)
    if end_col is None or (end_line == line and end_col <= col):
        end_col = len(end_text.rstrip())
        if end_line == line and end_col <= col:
            end_col = len(end_text)
    end_col = max(0, min(end_col, len(end_text)))
    from crane_lsp.analysis.positions import Span

    return Span(line, col, end_line, end_col)


def to_range(cell: CellView, span: Span, encoding: str = types.PositionEncodingKind.Utf16) -> types.Range:
    """The LSP range in ``cell.uri`` for a span in the cell's own coordinates."""
    start = types.Position(
        line=cell.first_line + span.line, character=_encode_col(cell.line_text(span.line), span.col, encoding)
    )
    end = types.Position(
        line=cell.first_line + span.end_line,
        character=_encode_col(cell.line_text(span.end_line), span.end_col, encoding),
    )
    return types.Range(start=start, end=end)


def from_position(
    cell: CellView, position: types.Position, encoding: str = types.PositionEncodingKind.Utf16
) -> tuple[int, int]:
    """(line, character column) in the cell for an LSP position in ``cell.uri``."""
    line = position.line - cell.first_line
    return line, _decode_col(cell.line_text(line), position.character, encoding)
