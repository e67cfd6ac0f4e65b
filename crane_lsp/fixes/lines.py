"""A cell's lines as the fix families read them: each line with the syntax nodes on it, and the
helpers every family uses to write its one-line edit (shared by ``candidates`` and ``flow``)."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

from crane_lsp.prediction import Fix, FixLayer, Prediction


@dataclass(frozen=True)
class CellLine:
    """The failing line, parsed with its cell (the nodes that start and end on it)."""

    number: int  # 0-based
    text: str
    nodes: tuple[ast.AST, ...]
    cell: ast.Module | None = None  # the whole cell: a repair may belong where an object was built
    lines: tuple[str, ...] = ()

    def segment(self, node: ast.AST) -> tuple[int, int]:
        """``node``'s character columns on the line (ast counts UTF-8 bytes)."""
        raw = self.text.encode()
        start = len(raw[: getattr(node, "col_offset", 0)].decode(errors="ignore"))
        end = len(raw[: getattr(node, "end_col_offset", 0)].decode(errors="ignore"))
        return start, end

    def source(self, node: ast.AST) -> str:
        start, end = self.segment(node)
        return self.text[start:end]

    def replace(self, node: ast.AST, text: str) -> str:
        start, end = self.segment(node)
        return self.text[:start] + text + self.text[end:]

    def replace_each(self, nodes: list[ast.AST], text: str) -> str:
        """Every one of ``nodes`` (not nested in one another) replaced by ``text``."""
        out = self.text
        for node in sorted(nodes, key=lambda n: self.segment(n)[0], reverse=True):
            start, end = self.segment(node)
            out = out[:start] + text + out[end:]
        return out

    def without(self, node: ast.AST, call: ast.Call) -> str:
        """The line with argument ``node`` (positional or keyword) of ``call`` removed, with its comma."""
        items = sorted([*call.args, *call.keywords], key=lambda n: self.segment(n)[0])
        index = items.index(node)  # type: ignore[arg-type]
        start, end = self.segment(node)
        if index + 1 < len(items):  # up to the next argument: "a, " goes
            end = self.segment(items[index + 1])[0]
        elif index > 0:  # the last one: from the end of the one before: ", a" goes
            start = self.segment(items[index - 1])[1]
        return self.text[:start] + self.text[end:]


def parsed_lines(target: str) -> list[CellLine]:
    """Every line of the cell with the nodes that start and end on it; [] when it does not parse."""
    try:
        tree = ast.parse(target)
    except SyntaxError:  # magics, or a cell that does not parse: no syntactic repair
        return []
    lines = tuple(target.split("\n"))  # one tuple shared by every line (a copy each was quadratic)
    on: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        first = getattr(node, "lineno", None)
        if first is not None and first == getattr(node, "end_lineno", None):
            on.setdefault(first - 1, []).append(node)
    return [CellLine(i, text, tuple(on.get(i, ())), tree, lines) for i, text in enumerate(lines)]


def line_fix(line: CellLine, new_line: str, title: str, layer: FixLayer, description: str = "") -> Fix:
    return Fix(
        description=description or title,
        start_line=line.number,
        end_line=line.number + 1,
        new_text=new_line,
        title=title,
        layer=layer,
    )


def operand(line: CellLine, node: ast.AST, suffix: str) -> str:
    """``node`` with ``suffix`` applied as an attribute/method (``w.T``; ``(a + b).T``)."""
    text = line.source(node)
    simple = isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call)
    return f"{text}{suffix}" if simple else f"({text}){suffix}"


def verdict_text(p: Prediction) -> str:
    """What the families read: the exception's own message first (a dry run's), then the verdict's."""
    return f"{p.raw_message}\n{p.message}\n{p.diagnosis}"


def _squeezed(label: str) -> str:
    """A label as a person may have meant it: case, spaces, underscores and brackets aside."""
    return re.sub(r"[\W_]+", "", label).lower()


def near_labels(label: str, known: list[str]) -> list[str]:
    """Existing labels the missing one may have meant, likeliest first: the same label in another
    case, then one that equals or begins the other once case, spacing and punctuation are set aside
    ("Total Gross (millions)" and "Total_Gross"), then the closest spellings. The dry run decides."""
    lower = [k for k in known if k.lower() == label.lower()]
    squeezed = _squeezed(label)
    alike = [
        k
        for k in known
        if _squeezed(k) and (squeezed.startswith(_squeezed(k)) or _squeezed(k).startswith(squeezed))
    ]
    close = difflib.get_close_matches(label, known, n=2, cutoff=0.6)
    return list(dict.fromkeys([*lower, *alike, *close]))[:2]
