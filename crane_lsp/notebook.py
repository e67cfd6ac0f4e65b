"""Cells and notebooks, whatever they came from: an LSP notebook, an .ipynb file, a ``# %%`` script."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: the only line ends LSP (and Python's tokenizer) know; ``str.splitlines`` also splits at \f, \v,
#: \x1c-\x1e, \x85, U+2028 and U+2029, which would put every later squiggle on the wrong line
LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """``text``'s lines as an editor counts them (LSP: only \n, \r\n and \r end a line).

    Like ``str.split("\n")`` a text always has at least one line and a final line end starts an
    empty last line; with ``keepends`` the pieces join back to ``text`` and no empty last piece is
    added (like ``splitlines(keepends=True)``)."""
    if not keepends:
        return LINE_END.split(text)
    lines, start = [], 0
    for m in LINE_END.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


class NotebookError(ValueError):
    """A notebook file that cannot be read; the message says why, for the user."""


@dataclass
class Cell:
    source: str
    kind: str = "code"  # "code" | "markdown" | "raw"
    execution_count: int | None = None
    cell_id: str | None = None
    tags: tuple[str, ...] = ()
    first_line: int = 0  # line offset of the cell in a percent-format file (0 for .ipynb)


@dataclass
class Notebook:
    cells: list[Cell] = field(default_factory=list)
    path: Path | None = None

    @property
    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]

    def find_code_cell(self, ref: str | int) -> int:
        """Index into ``code_cells`` for a 1-based position or a cell id; raises NotebookError."""
        cells = self.code_cells
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            pos = int(ref)
            if not 1 <= pos <= len(cells):
                raise NotebookError(f"cell {pos} does not exist: the notebook has {len(cells)} code cells")
            return pos - 1
        for i, c in enumerate(cells):
            if c.cell_id == ref:
                return i
        raise NotebookError(f"no code cell has the id {ref!r}")

    def replay_order(self, target: int) -> list[int]:
        """Code-cell indexes to execute before ``target``, as the notebook records its state.

        Cells other than the target that carry an execution count run in execution-count order (a
        cell without one was never run, which is how out-of-order crashes reproduce); when the target
        itself ran, only the cells run before it (a lower count) built its state. A notebook with no
        counts at all runs the cells above the target in order.
        """
        cells = self.code_cells
        counted = [(c.execution_count, i) for i, c in enumerate(cells) if i != target and c.execution_count]
        if not any(c.execution_count for c in cells):
            return list(range(target))
        # a target that ran saw only the cells run before it: later runs were not part of its state
        own = cells[target].execution_count if 0 <= target < len(cells) else None
        if own:
            counted = [(n, i) for n, i in counted if n < own]
        return [i for _, i in sorted(counted)]


def read_ipynb(path: str | Path) -> Notebook:
    import nbformat  # slow to import (jsonschema): only when a notebook file is read

    p = Path(path)
    try:
        nb = nbformat.read(p, as_version=4)
    except FileNotFoundError as exc:
        raise NotebookError(f"{p}: no such file") from exc
    except Exception as exc:  # nbformat raises several unrelated types for bad JSON / schema
        raise NotebookError(f"{p}: not a readable Jupyter notebook ({type(exc).__name__}: {exc})") from exc
    cells = []
    for c in nb.cells:
        cells.append(
            Cell(
                source=c.get("source", ""),
                kind=c.get("cell_type", "code"),
                execution_count=c.get("execution_count") if c.get("cell_type") == "code" else None,
                cell_id=c.get("id"),
                tags=tuple(c.get("metadata", {}).get("tags", ())),
            )
        )
    return Notebook(cells=cells, path=p)


_PERCENT = re.compile(r"^# ?%%(.*)$")


def parse_percent(text: str, path: Path | None = None) -> Notebook:
    """Split a ``# %%`` script into cells; text before the first marker is a cell only if non-blank."""
    lines = split_lines(text, keepends=True)
    cells: list[Cell] = []
    start, kind, seen_marker = 0, "code", False
    body: list[str] = []

    def flush() -> None:
        src = "".join(body).rstrip("\r\n")
        if seen_marker or src.strip():
            cells.append(Cell(source=src, kind=kind, first_line=start))

    for i, line in enumerate(lines):
        m = _PERCENT.match(line.rstrip("\r\n"))
        if not m:
            body.append(line)
            continue
        flush()
        header = m.group(1)
        kind = "markdown" if "[markdown]" in header or "[md]" in header else "code"
        start, body, seen_marker = i + 1, [], True
    flush()
    return Notebook(cells=cells, path=path)


def is_percent_script(text: str) -> bool:
    return any(_PERCENT.match(line) for line in split_lines(text))


def read_notebook(path: str | Path) -> Notebook:
    p = Path(path)
    if p.suffix == ".ipynb":
        return read_ipynb(p)
    try:
        return parse_percent(p.read_text(encoding="utf-8"), p)
    except FileNotFoundError as exc:
        raise NotebookError(f"{p}: no such file") from exc
