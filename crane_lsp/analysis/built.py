"""Arrays a cell builds inside a call from literal sizes: ``np.zeros((3, 2))``, ``np.random.rand(5, 2)``,
``np.arange(10)``, ``np.array([[1, 2], [3, 4]])``: their shape (and dtype where numpy fixes it) is known
before they exist, so the checks can read them like kernel arrays.
"""

from __future__ import annotations

import ast
from typing import Any

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val, has_star, kept_columns

#: numpy functions whose first argument is the shape, and the dtype they make without ``dtype=``.
_SHAPED = {"zeros": "float64", "ones": "float64", "empty": "float64"}
_RANDOM_DIMS = {"rand": "float64", "randn": "float64"}
_MAX_ITEMS = 10_000


def _dims(value: Any) -> tuple[int, ...] | None:
    dims = (value,) if type(value) is int else value if isinstance(value, (tuple, list)) else None
    if dims is None or not all(type(d) is int and d >= 0 for d in dims):
        return None
    return tuple(dims)


def _nested_shape(value: Any) -> tuple[tuple[int, ...], str] | None:
    """Shape and dtype of a regular nested list of ints/floats/bools (``np.array``'s own result)."""
    if not isinstance(value, list):
        kinds = {bool: "bool", int: "int64", float: "float64"}
        kind = kinds.get(type(value))
        return ((), kind) if kind else None
    if not value or len(value) > _MAX_ITEMS:
        return None
    inner = [_nested_shape(v) for v in value]
    if any(i is None for i in inner):
        return None
    shapes = {i[0] for i in inner if i is not None}
    dtypes = {i[1] for i in inner if i is not None}
    if len(shapes) != 1 or ("bool" in dtypes and len(dtypes) > 1):
        return None
    dtype = "float64" if "float64" in dtypes else dtypes.pop()
    return (len(value), *shapes.pop()), dtype


def built_array(w: Any, node: ast.Call) -> Val | None:
    """The array ``node`` builds, when a numpy constructor with literal sizes proves its shape."""
    if has_star(node):
        return None
    lib = w.lib_func(node.func)
    if lib is None or lib[0] not in ("numpy", "numpy.random"):
        return None
    module, name = lib
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    kw = {k.arg for k in node.keywords}
    if module == "numpy" and name in _SHAPED and node.args and len(node.args) == 1 and kw <= {"dtype"}:
        ok, value = w.const(node.args[0])
        shape = _dims(value) if ok else None
        dtype = None if "dtype" in kw else _SHAPED[name]
    elif module == "numpy.random" and name in _RANDOM_DIMS and node.args and not kw:
        dims = [w.const(a) for a in node.args]
        shape = _dims([v for _, v in dims]) if all(ok for ok, _ in dims) else None
        dtype = _RANDOM_DIMS[name]
    elif module == "numpy" and name == "arange" and len(node.args) == 1 and not kw:
        ok, n = w.const(node.args[0])
        shape = (max(n, 0),) if ok and type(n) is int else None
        dtype = "int64"
    elif module == "numpy" and name == "array" and len(node.args) == 1 and not kw:
        ok, value = w.const(node.args[0])
        got = _nested_shape(value) if ok and isinstance(value, list) else None
        if got is not None:
            shape, dtype = got
    if shape is None:
        return None
    return Val(
        kind=Kind.NDARRAY,
        text=w.text(node),
        shape=shape,
        dtype=dtype,
        length=shape[0] if shape else None,
        fresh=True,
    )


def _drop_keys(w: Any, node: ast.Call) -> list[Any] | None:
    """The column labels ``frame.drop(...)`` removes (``columns=``, or ``axis=1``/``"columns"``), when it
    returns a new frame and raises on nothing else; None otherwise."""
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    if set(kw) - {"columns", "labels", "axis", "inplace", "errors"} or len(node.args) > 1:
        return None
    for name, wanted in (("inplace", False), ("errors", "raise")):
        if name in kw:
            ok, value = w.const(kw[name])
            if not ok or value != wanted or type(value) is not type(wanted):
                return None
    if "columns" in kw:
        if node.args or "labels" in kw or "axis" in kw:
            return None
        where = kw["columns"]
    else:
        ok, axis = w.const(kw.get("axis"))
        if not ok or not ((type(axis) is int and axis == 1) or axis == "columns"):
            return None
        found = node.args[0] if node.args else kw.get("labels")
        if found is None or (node.args and "labels" in kw):
            return None
        where = found
    ok, value = w.const(where)
    keys = value if ok and isinstance(value, list) else [value] if ok else None
    return keys if keys and all(isinstance(k, str) for k in keys) else None


def dropped_columns(w: Any, node: ast.Call, base: Val) -> Val | None:
    """``frame.drop(columns=[...])`` / ``frame.drop('y', axis=1)`` of columns the frame has, each once:
    the same rows without them, with the kernel frame's summaries of the columns kept."""
    if base.kind != Kind.DATAFRAME or base.labels is None or base.shape is None or has_star(node):
        return None
    keys = _drop_keys(w, node)
    if keys is None or not all(base.labels.count(k) == 1 for k in keys):
        return None
    kept = [label for label in base.labels if label not in keys]
    return Val(
        kind=Kind.DATAFRAME,
        text=w.text(node),
        shape=(base.shape[0], len(kept)),
        labels=tuple(kept),
        index_names=base.index_names,
        variables=base.variables,
        columns=kept_columns(base, kept),
    )
