"""Frame keys and widths the state proves wrong: ``merge``/``join`` keys that are not columns (KeyError), and
``pd.DataFrame(data, columns=..., index=...)`` labels whose count disagrees with the data (ValueError).

A key is missing only when the frame's every column label is known exactly (``Val.labels``) and, for a
text key, its index level names too (pandas accepts those as keys); widths come from a 2-D array's full
shape or a literal list of equal-length rows.
"""

from __future__ import annotations

import ast
from typing import Any

from crane_lsp.analysis.kinds import PANDAS, Kind
from crane_lsp.analysis.values import Val, has_star, kwarg
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step


def _key_list(value: Any) -> list[Any] | None:
    """A literal key or non-empty list of keys (str or int labels; bools and anything else: None)."""
    items = value if isinstance(value, list) else [value]
    if items and all(type(v) in (str, int) for v in items):
        return items
    return None


def _keys_of(w: CellWalk, node: ast.expr) -> list[Any] | None:
    """The keys ``node`` names: a literal, or a name the cell bound to a literal list earlier."""
    ok, value = w.const(node)
    if not ok:
        v = w.ev(node)
        if v is None or v.kind != Kind.LIST_LITERAL or not isinstance(v.value, (list, tuple)):
            return None
        value = list(v.value)
    return _key_list(value)


#: DataFrame methods that return a DataFrame (or raise first): a ``join``'s ``other`` built inside the call.
_FRAME_RETURNING = frozenset(
    {"set_index", "reset_index", "copy", "head", "tail", "rename", "drop", "dropna", "fillna", "sort_values"}
)


def _frame_like(w: CellWalk, node: ast.expr) -> bool:
    """Whether ``node`` is a DataFrame or Series, or a DataFrame method that returns one."""
    v = w.ev(node)
    if v is not None:
        return v.kind in PANDAS
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _FRAME_RETURNING
    ):
        base = w.ev(node.func.value)
        return base is not None and base.kind == Kind.DATAFRAME and not _flag_inplace(node)
    return False


def _flag_inplace(call: ast.Call) -> bool:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    return "inplace" in kw and _flag(kw, "inplace") is not False


def _absent(keys: list[Any], frame: Val) -> list[Any] | None:
    """The keys that are neither a column nor an index level name of ``frame``; None when not proven."""
    if frame.kind != Kind.DATAFRAME or frame.labels is None:
        return None
    missing = [k for k in keys if k not in frame.labels]
    if not missing:
        return []
    if frame.index_names is None or not all(isinstance(m, str) for m in missing):
        return None  # index names are known as text only: only a text key is proven absent
    return [m for m in missing if m not in frame.index_names]


def _flag(kw: dict[str, ast.expr], name: str) -> bool | None:
    """A boolean keyword's literal value (False when absent), None when not a literal bool."""
    node = kw.get(name)
    if node is None:
        return False
    return node.value if isinstance(node, ast.Constant) and type(node.value) is bool else None


def _sides(w: CellWalk, node: ast.Call) -> tuple[str, ast.expr, ast.expr] | None:
    """``("merge"|"join", left, right)`` for ``left.merge(right, ...)``, ``pd.merge(left, right, ...)`` and
    ``left.join(right, ...)``, with the arguments where they must be."""
    func = node.func
    if not isinstance(func, ast.Attribute) or has_star(node):
        return None
    module = w.module_of(func.value)
    if module is not None:
        if module.split(".")[0] != "pandas" or func.attr != "merge":
            return None
        left, right = [*node.args, None, None][:2]
        left, right = left or kwarg(node, "left"), right or kwarg(node, "right")
        return ("merge", left, right) if left is not None and right is not None else None
    if func.attr not in ("merge", "join"):
        return None
    right = node.args[0] if node.args else kwarg(node, "right" if func.attr == "merge" else "other")
    return (func.attr, func.value, right) if right is not None else None


def _merge_lookups(what: str, kw: dict[str, ast.expr]) -> list[tuple[str, str]] | None:
    """(keyword, side) pairs whose keys pandas looks up as labels of that side; None when the call's
    other keywords make it raise something else first or look elsewhere."""
    how = kw.get("how")
    if what == "join":
        plain_how = how is None or (isinstance(how, ast.Constant) and how.value != "cross")
        return [("on", "left")] if "on" in kw and plain_how else []
    if how is not None and not (
        isinstance(how, ast.Constant) and how.value in ("inner", "left", "right", "outer")
    ):
        return None  # "cross" with keys is a MergeError
    left_index, right_index = _flag(kw, "left_index"), _flag(kw, "right_index")
    if left_index is None or right_index is None:
        return None
    if "on" in kw:
        if "left_on" in kw or "right_on" in kw or left_index or right_index:
            return None  # a MergeError
        return [("on", "left"), ("on", "right")]
    out: list[tuple[str, str]] = []
    if "left_on" in kw and ("right_on" in kw or right_index) and not left_index:
        out.append(("left_on", "left"))
    if "right_on" in kw and ("left_on" in kw or left_index) and not right_index:
        out.append(("right_on", "right"))
    return out


@step("pandas.merge-keys", on=(ast.Call,), words=("merge", "join"))
def _merge_keys(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``merge``/``join`` keys (``on=``, ``left_on=``, ``right_on=``) that the frame they are looked up in
    does not have: pandas raises KeyError."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _sides(w, node)
        if got is None:
            continue
        what, left_node, right_node = got
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        lookups = _merge_lookups(what, kw)
        if not lookups:
            continue
        left, right = w.ev(left_node), w.ev(right_node)
        if what == "merge" and (right is None or right.kind != Kind.DATAFRAME):
            continue  # a Series is renamed into a frame; anything else raises TypeError first
        if what == "join" and not _frame_like(w, right_node):
            continue  # a list of frames joins on the index only
        for name, side in lookups:
            frame = left if side == "left" else right
            keys = _keys_of(w, kw[name])
            if frame is None or keys is None:
                continue
            missing = _absent(keys, frame)
            if not missing:
                continue
            shown = ", ".join(repr(m) for m in missing)
            labels = list(frame.labels or ())
            listed = ", ".join(repr(x) for x in labels[:12]) + (", …" if len(labels) > 12 else "")
            return finding_at(
                w,
                "pandas.merge-keys",
                "KeyError",
                kw[name],
                f"{what}({name}={shown}): not a column of {frame.text}",
                [(f"{frame.text}.columns", f"[{listed}]")],
                [v for v in (left, right) if v is not None],
            )
    return []


# ------------------------------------------------------------------------------------------------


def _literal_width(value: Any) -> tuple[int, int] | None:
    """(rows, width) of a literal list of rows: equal-length lists/tuples of scalars, or scalars (width 1)."""
    if not isinstance(value, list) or not value:
        return None
    scalar = (int, float, str)
    if all(type(v) in scalar for v in value):
        return len(value), 1
    if all(type(v) in (list, tuple) for v in value):
        widths = {len(v) for v in value}
        if len(widths) == 1 and all(type(x) in scalar for v in value for x in v):
            width = widths.pop()
            return (len(value), width) if width else None
    return None


def _data_shape(w: CellWalk, node: ast.expr) -> tuple[int, int] | None:
    """(rows, columns) the DataFrame constructor builds from ``node``: a 1-D/2-D plain-dtype array of known
    shape, or a literal list of rows."""
    v = w.ev(node)
    if v is not None and v.kind == Kind.NDARRAY:
        shape = v.full_shape()
        dtype = v.dtype or ""
        if shape is None or not dtype.isalnum() or dtype == "object":
            return None  # structured (the fields may be the columns), object (rows of lists?) or unknown
        if len(shape) == 2 and shape[0] > 0:
            return shape[0], shape[1]
        if len(shape) == 1 and shape[0] > 0:
            return shape[0], 1
        return None
    ok, value = w.const(node)
    return _literal_width(value) if ok else None


def _label_count(w: CellWalk, node: ast.expr) -> int | None:
    """How many labels a ``columns=``/``index=`` argument gives: a literal list/tuple, or an Index/array
    the walk knows exactly."""
    ok, value = w.const(node)
    if ok:
        if isinstance(value, (list, tuple)) and all(type(x) in (str, int, float) for x in value):
            return len(value)
        return None
    v = w.ev(node)
    if v is not None and v.kind in (Kind.INDEX, Kind.LIST_LITERAL) and isinstance(v.value, (tuple, list)):
        return len(v.value)
    return None


@step("pandas.frame-labels", on=(ast.Call,), words=("DataFrame",))
def _frame_labels(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``pd.DataFrame(data, columns=[...])`` (or ``index=``) with a label count that is not the data's
    width (or row count): pandas raises ValueError."""
    for node in w.evaluated_of(stmt, ast.Call):
        if has_star(node):
            continue
        lib = w.lib_func(node.func)
        if lib is None or lib[0].split(".")[0] != "pandas" or lib[1] != "DataFrame":
            continue
        data = node.args[0] if node.args else kwarg(node, "data")
        if data is None or len(node.args) > 3:
            continue
        given = dict(zip(("data", "index", "columns"), node.args, strict=False))
        given.update({k.arg: k.value for k in node.keywords if k.arg in ("index", "columns")})
        shape = _data_shape(w, data)
        if shape is None:
            continue
        for name, axis in (("index", 0), ("columns", 1)):
            where = given.get(name)
            count = _label_count(w, where) if where is not None else None
            if where is None or count is None or count == shape[axis]:
                continue
            what = "rows" if axis == 0 else "columns"
            src = w.ev(data)
            return finding_at(
                w,
                "pandas.frame-labels",
                "ValueError",
                where,
                f"DataFrame(): {name}= gives {count} labels for data with {shape[axis]} {what}",
                [(f"{w.text(data)} shape", str(shape)), (f"len({name})", str(count))],
                [src] if src is not None else [],
            )
    return []
