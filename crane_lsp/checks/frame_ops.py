"""Arithmetic between a numeric column and a text column: ``df['price'] + df['name']`` -> TypeError.

Only dtypes that PROVE every value is text count as text (pandas' ``str`` / ``string`` dtypes);
an ``object`` column may hold anything. ``*`` is left alone (``2 * 'a'`` repeats the text), and so
is ``%`` (string formatting).
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

_TEXT_DTYPES = frozenset({"str", "string", "string[python]", "string[pyarrow]"})
_NUMERIC_PREFIXES = ("int", "uint", "float", "Int", "UInt", "Float")
_OPS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Div: "/", ast.FloorDiv: "//"}


def _numeric(v: Val | None) -> bool:
    return v is not None and v.kind == Kind.SERIES and (v.dtype or "").startswith(_NUMERIC_PREFIXES)


def _text(v: Val | None) -> bool:
    return v is not None and v.kind == Kind.SERIES and v.dtype in _TEXT_DTYPES


@step("pandas.text-arithmetic", on=(ast.BinOp,))
def _arith(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``+ - / //`` between a numeric Series and a text (str/string dtype) Series."""
    for node in w.evaluated_of(stmt, ast.BinOp):
        if not isinstance(node, ast.BinOp) or type(node.op) not in _OPS:
            continue
        left, right = w.ev(node.left), w.ev(node.right)
        if not ((_numeric(left) and _text(right)) or (_text(left) and _numeric(right))):
            continue
        assert left is not None and right is not None
        op = _OPS[type(node.op)]
        return finding_at(
            w,
            "pandas.text-arithmetic",
            "TypeError",
            node,
            f"{left.text} ({left.dtype}) {op} {right.text} ({right.dtype}): arithmetic with a text column",
            [(f"{left.text}.dtype", str(left.dtype)), (f"{right.text}.dtype", str(right.dtype))],
            [left, right],
        )
    return []
