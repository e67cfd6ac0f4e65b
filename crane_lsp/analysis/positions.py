"""The only coordinate map: positions in the parsed Python back to the cell as the editor shows it.

Lines are 0-based, columns count characters. ``ast`` columns are UTF-8 byte offsets, and magics or
``!shell`` lines are turned into Python by IPython's transformer first, so a parsed position has to be
mapped back (``PosMap``) before anything is reported.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass


@dataclass(slots=True, unsafe_hash=True)
class Span:
    """A range in the original cell text; 0-based lines, columns in characters.

    Treat as immutable (hashable by value); not ``frozen`` because a frozen dataclass is several
    times slower to build, and the scan builds one per name, chain and call of the cell."""

    line: int
    col: int
    end_line: int
    end_col: int


class PosMap:
    """Maps (line, byte col) in the parsed Python back to (line, char col) in the original cell."""

    def __init__(self, original_lines: list[str], python_lines: list[str], line_offset: int = 0) -> None:
        self.orig = original_lines
        self.py = python_lines
        self.offset = line_offset
        self.line_map: list[int] = list(range(len(python_lines)))
        self._same: list[bool] | None = None
        body = original_lines[line_offset:]
        if len(body) != len(python_lines):
            matcher = difflib.SequenceMatcher(a=python_lines, b=body, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                for k in range(i1, i2):
                    self.line_map[k] = j1 + (k - i1 if tag == "equal" else min(k - i1, max(j2 - j1 - 1, 0)))

    def _orig_line(self, py_line: int) -> int:
        if 0 <= py_line < len(self.line_map):
            return self.line_map[py_line] + self.offset
        return max(len(self.orig) - 1, 0)

    def pos(self, lineno: int, byte_col: int) -> tuple[int, int]:
        """``lineno`` 1-based (ast), ``byte_col`` UTF-8 offset (ast)."""
        py_idx = lineno - 1
        same = self._same_lines()
        if 0 <= py_idx < len(same) and same[py_idx]:
            return py_idx + self.offset, byte_col
        py_text = self.py[py_idx] if 0 <= py_idx < len(self.py) else ""
        char_col = len(py_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return self._char_pos(py_idx, char_col)

    def _char_pos(self, py_idx: int, char_col: int) -> tuple[int, int]:
        py_text = self.py[py_idx] if 0 <= py_idx < len(self.py) else ""
        line = self._orig_line(py_idx)
        orig_text = self.orig[line] if 0 <= line < len(self.orig) else ""
        if py_text == orig_text:
            return line, char_col
        if py_text and orig_text.endswith(py_text):  # IPython removed the cell's common indentation
            return line, char_col + len(orig_text) - len(py_text)
        common = 0
        for a, b in zip(py_text, orig_text, strict=False):
            if a != b:
                break
            common += 1
        return line, char_col if char_col <= common else max(common, min(char_col, len(orig_text)))

    def span(self, node: ast.AST) -> Span:
        lineno: int = node.lineno  # type: ignore[attr-defined]
        col_offset: int = node.col_offset  # type: ignore[attr-defined]
        end_lineno: int = node.end_lineno or lineno  # type: ignore[attr-defined]
        end_col_offset: int | None = node.end_col_offset  # type: ignore[attr-defined]
        if end_col_offset is None:
            end_col_offset = col_offset
        same = self._same if self._same is not None else self._same_lines()
        if 0 < lineno <= end_lineno <= len(same) and same[lineno - 1] and same[end_lineno - 1]:
            off = self.offset
            return Span(lineno - 1 + off, col_offset, end_lineno - 1 + off, end_col_offset)
        line, col = self.pos(lineno, col_offset)
        end_line, end_col = self.pos(end_lineno, end_col_offset)
        return Span(line, col, end_line, end_col)

    def end(self, node: ast.AST) -> tuple[int, int]:
        """``span(node)``'s end as (line, col), without building a ``Span`` (the scan asks per statement)."""
        lineno: int = node.lineno  # type: ignore[attr-defined]
        end_lineno: int = node.end_lineno or lineno  # type: ignore[attr-defined]
        end_col: int | None = node.end_col_offset  # type: ignore[attr-defined]
        if end_col is None:
            end_col = node.col_offset  # type: ignore[attr-defined]
        same = self._same if self._same is not None else self._same_lines()
        if 0 < lineno <= end_lineno <= len(same) and same[lineno - 1] and same[end_lineno - 1]:
            return end_lineno - 1 + self.offset, end_col
        return self.pos(end_lineno, end_col)

    def _same_lines(self) -> list[bool]:
        """Per parsed line: it is the cell's own line, in ASCII, at the same place (columns are chars)."""
        if self._same is None:
            body = self.orig[self.offset :]
            self._same = [
                a == b and a.isascii() and self.line_map[i] == i
                for i, (a, b) in enumerate(zip(self.py, body, strict=False))
            ]
        return self._same

    def char_span(self, lineno: int, col: int, end_lineno: int, end_col: int) -> Span:
        """Span from 1-based lines and 0-based CHARACTER columns (SyntaxError positions)."""
        line, c = self._char_pos(lineno - 1, col)
        end_line, ec = self._char_pos(end_lineno - 1, end_col)
        return Span(line, c, end_line, ec)


def span_of(node: ast.AST, lines: list[str]) -> Span:
    """0-based span in characters (``ast`` columns are UTF-8 byte offsets)."""

    def col(line_no: int, byte_col: int) -> int:
        if 0 < line_no <= len(lines):
            return len(lines[line_no - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return byte_col

    lineno = getattr(node, "lineno", 1)
    end_lineno = getattr(node, "end_lineno", lineno) or lineno
    return Span(
        lineno - 1,
        col(lineno, getattr(node, "col_offset", 0)),
        end_lineno - 1,
        col(end_lineno, getattr(node, "end_col_offset", 0) or 0),
    )
