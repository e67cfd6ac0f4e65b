"""pandas checks: missing columns, row labels not in the index, out-of-range positions, accessors on the
wrong dtype, bad int casts, wrong-length assignments, ambiguous truth values and overlapping joins.

Each fires only on what the snapshot proves: a column is "missing" only when the probe listed every
column label exactly (``ObjectSummary.column_labels``), a NaN or a non-integer string only when the probe
saw one (a value seen in a sample is still a value that exists), a row label only when the probe's
``label in index`` lookup on a unique plain index said False (``ObjectSummary.index_has``).
"""

from __future__ import annotations

import ast
import difflib
import math
from typing import Any

from crane_lsp.analysis.kinds import PANDAS, Kind
from crane_lsp.analysis.values import Val, has_star, kwarg, literal, parse_expr
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.arrays import index_keys
from crane_lsp.checks.registry import Finding, finding_at, step

_INT_TARGETS = frozenset({"int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


def _keys(value: Any) -> list[Any] | None:
    """A literal column key or list of keys; None for anything else (slices, masks, tuples)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return [value]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value)
    ):
        return value
    return None


def _missing(keys: list[Any], labels: tuple[Any, ...]) -> list[Any]:
    return [k for k in keys if k not in labels]


def _labels_evidence(val: Val) -> tuple[str, str]:
    labels = list(val.labels or ())
    shown = ", ".join(repr(x) for x in labels[:12]) + (", …" if len(labels) > 12 else "")
    return f"{val.text}.columns", f"[{shown}] ({len(labels)} columns)"


# ------------------------------------------------------------------------------------------------
# missing columns
# ------------------------------------------------------------------------------------------------


def _column_keys_of_call(call: ast.Call, method: str, base: Val) -> tuple[list[Any], ast.AST, bool] | None:
    """Keys that ``df.<method>(...)`` looks up as columns, the node holding them, and whether index
    level names would also be accepted (then a miss needs the index names to be known)."""
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if method == "drop":
        if "level" in kw:
            return None
        ok, errors = literal(kw.get("errors"))
        if "errors" in kw and (not ok or errors != "raise"):
            return None
        if "columns" in kw:
            node: ast.AST = kw["columns"]
        else:
            ok, axis = literal(kw.get("axis"))
            if not ok or axis not in (1, "columns"):
                return None
            if call.args:
                node = call.args[0]
            elif "labels" in kw:
                node = kw["labels"]
            else:
                return None
        ok, value = literal(node)
        keys = _keys(value) if ok else None
        return (keys, node, False) if keys else None
    if method in ("groupby", "sort_values"):
        if "level" in kw or "axis" in kw:
            return None
        node_or = call.args[0] if call.args else kw.get("by")
        if node_or is None:
            return None
        ok, value = literal(node_or)
        keys = _keys(value) if ok else None
        return (keys, node_or, True) if keys else None
    if method == "set_index":
        node_or = call.args[0] if call.args else kw.get("keys")
        ok, value = literal(node_or)
        keys = _keys(value) if ok else None
        return (keys, node_or, False) if keys and node_or is not None else None
    if method == "dropna" and "subset" in kw and "axis" not in kw:
        ok, value = literal(kw["subset"])
        keys = _keys(value) if ok else None
        return (keys, kw["subset"], False) if keys else None
    return None


def _did_you_mean(node: ast.AST, missing: list[Any], labels: Any) -> tuple[str, str] | None:
    """For a single misspelt string literal, the existing column it most likely meant.

    Only a bare string constant is rewritten (never a list or an expression), and only when one
    column matches case-insensitively or is clearly the closest (difflib ratio >= 0.8)."""
    if len(missing) != 1 or not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    wrong = node.value
    names = [label for label in labels if isinstance(label, str)]
    same_case = [name for name in names if name.lower() == wrong.lower()]
    if len(same_case) == 1:
        match = same_case[0]
    else:
        close = difflib.get_close_matches(wrong, names, n=2, cutoff=0.8)
        if len(close) != 1:
            return None
        match = close[0]
    return repr(match), f"did you mean {match!r}?"


@step("pandas.missing-column", on=(ast.Subscript, ast.Call))
def _missing_column(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Selecting, dropping, grouping, sorting or indexing by a column the frame does not have."""
    for node in w.evaluated_of(stmt, ast.Subscript, ast.Call):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key_node: ast.AST = node.slice
            frame = node.value
            if (
                isinstance(frame, ast.Attribute)
                and frame.attr == "loc"
                and isinstance(key_node, ast.Tuple)
                and len(key_node.elts) == 2
            ):
                frame, key_node = frame.value, key_node.elts[1]  # df.loc[rows, 'col']
            base = w.ev(frame)
            if base is None or base.kind != Kind.DATAFRAME or base.labels is None:
                continue
            if key_node is not node.slice and (base.index_names is None or len(base.index_names) != 1):
                continue  # with MultiIndex rows, df.loc['a', 'b'] may name a row
            ok, value = w.const(key_node)
            keys = _keys(value) if ok else None
            if not keys:
                continue
            missing = _missing(keys, base.labels)
            if missing:
                shown = ", ".join(repr(m) for m in missing)
                fix = _did_you_mean(key_node, missing, base.labels)
                return finding_at(
                    w,
                    "pandas.missing-column",
                    "KeyError",
                    key_node,
                    f"column {shown} does not exist in {base.text}" + (f"; {fix[1]}" if fix else ""),
                    [_labels_evidence(base)],
                    [base],
                    fix,
                )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = w.ev(node.func.value)
            if base is None or base.kind != Kind.DATAFRAME or base.labels is None:
                continue
            got = _column_keys_of_call(node, node.func.attr, base)
            if got is None:
                continue
            keys, where, index_levels_ok = got
            missing = _missing(keys, base.labels)
            if index_levels_ok and missing:
                if base.index_names is None or not all(isinstance(m, str) for m in missing):
                    continue  # index names are reported as text: only a str key is proven absent
                missing = [m for m in missing if m not in base.index_names]
            if missing:
                shown = ", ".join(repr(m) for m in missing)
                fix = _did_you_mean(where, missing, base.labels)
                return finding_at(
                    w,
                    "pandas.missing-column",
                    "KeyError",
                    where,
                    f"{base.text}.{node.func.attr}(): column {shown} does not exist in {base.text}"
                    + (f"; {fix[1]}" if fix else ""),
                    [_labels_evidence(base)],
                    [base],
                    fix,
                )
    return []


# ------------------------------------------------------------------------------------------------
# row labels not in the index
# ------------------------------------------------------------------------------------------------


def _row_labels(value: Any) -> list[Any] | None:
    """A literal row label or non-empty list of them (str, int, finite float; bools are masks)."""
    items = value if isinstance(value, list) else [value]
    ok = all(type(v) in (str, int) or (type(v) is float and math.isfinite(v)) for v in items)
    return items if items and ok else None


def _full_slice(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _loc_rows(w: CellWalk, node: ast.Subscript, base: Val) -> tuple[list[Any], ast.AST] | None:
    """Row labels that ``base.loc[...]`` / ``base.at[...]`` (a read) looks up, and the node holding them."""
    assert isinstance(node.value, ast.Attribute)
    accessor, key_node = node.value.attr, node.slice
    if isinstance(key_node, ast.Tuple):
        # df.loc[row, col]: a column part that is a label, a list of labels or ``:``; columns known exactly
        # (single level), so the tuple cannot be one MultiIndex row label
        if base.kind != Kind.DATAFRAME or len(key_node.elts) != 2 or base.labels is None:
            return None
        col = key_node.elts[1]
        ok, col_value = literal(col)
        col_keys = _keys(col_value) if ok else None
        if accessor == "at":
            if col_keys is None or isinstance(col_value, list):
                return None
        elif not (_full_slice(col) or col_keys):
            return None
        key_node = key_node.elts[0]
    elif accessor == "at" and base.kind != Kind.SERIES:
        return None  # df.at needs a (row, column) pair
    ok, value = literal(key_node)
    labels = _row_labels(value) if ok else None
    if labels is None or (accessor == "at" and isinstance(value, list)):
        return None
    return labels, key_node


def _drop_rows(w: CellWalk, node: ast.Call) -> tuple[list[Any], ast.AST] | None:
    """Row labels that ``x.drop(...)`` removes with ``errors='raise'`` (literals, or names the cell bound
    to literals), and the node holding them."""
    if has_star(node) or len(node.args) > 1:
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    if "level" in kw or "columns" in kw:
        return None
    if "errors" in kw:
        ok, errors = literal(kw["errors"])
        if not ok or errors != "raise":
            return None
    key_node: ast.AST | None
    if "index" in kw:
        if node.args or "labels" in kw or "axis" in kw:
            return None
        key_node = kw["index"]
    else:
        if "axis" in kw:
            ok, axis = literal(kw["axis"])
            if not ok or not ((type(axis) is int and axis == 0) or axis == "index"):
                return None
        key_node = node.args[0] if node.args else kw.get("labels")
    if key_node is None:
        return None
    ok, value = w.const(key_node)
    labels = _row_labels(value) if ok else None
    return (labels, key_node) if labels else None


#: Index dtypes that hold numbers only: a text label is never in them (nor found by ``.loc`` or ``drop``).
_NUMERIC_INDEX = frozenset({"int64", "int32", "uint64", "float64"})


def _not_in_index(base: Val, label: Any) -> bool:
    """Whether the probe proved ``label`` absent from ``base``'s index: its ``label in index`` lookup said
    False, or, where it was not asked (a label bound by the cell), a text label and a plain numeric index."""
    s = base.summary
    if s is None:
        return False
    has = s.index_has or {}
    if repr(label) in has:
        return has[repr(label)] is False
    single = base.index_names is not None and len(base.index_names) == 1
    return type(label) is str and single and s.index_dtype in _NUMERIC_INDEX


@step("pandas.missing-label", on=(ast.Subscript, ast.Call), words=("loc", "at", "drop"))
def _missing_label(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``.loc``/``.at`` reads and row ``drop`` with a label the probe proved absent from a unique index."""
    for node in w.evaluated_of(stmt, ast.Subscript, ast.Call):
        got: tuple[list[Any], ast.AST] | None = None
        base: Val | None = None
        what = ""
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in ("loc", "at")
        ):
            base = w.ev(node.value.value)
            if base is not None and base.kind in PANDAS:
                got = _loc_rows(w, node, base)
                what = f".{node.value.attr}[]"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "drop":
            base = w.ev(node.func.value)
            if base is not None and base.kind in PANDAS:
                got = _drop_rows(w, node)
                what = ".drop()"
        if got is None or base is None or base.summary is None:
            continue
        labels, key_node = got
        missing = [label for label in labels if _not_in_index(base, label)]
        if not missing:
            continue
        shown = ", ".join(repr(m) for m in missing[:5]) + (", …" if len(missing) > 5 else "")
        evidence = [(f"{m!r} in {base.text}.index", "False") for m in missing[:3]]
        if base.summary.index_dtype:
            evidence.append((f"{base.text}.index.dtype", base.summary.index_dtype))
        hint = ""
        if what == ".drop()" and base.labels is not None and all(m in base.labels for m in missing):
            are = "is a column" if len(missing) == 1 else "are columns"
            hint = f"; {shown} {are}: drop with columns= or axis=1"
            evidence.append((f"{base.text}.columns", repr(list(base.labels[:10]))))
        return finding_at(
            w,
            "pandas.missing-label",
            "KeyError",
            key_node,
            f"{base.text}{what}: row label {shown} is not in the index of {base.text}{hint}",
            evidence,
            [base],
        )
    return []


# ------------------------------------------------------------------------------------------------
# .iloc positions out of range
# ------------------------------------------------------------------------------------------------


@step("pandas.iloc-range", on=(ast.Subscript,), words=("iloc",))
def _iloc(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``.iloc`` with an integer position past the end of the frame or series."""
    for node in w.evaluated_of(stmt, ast.Subscript):
        if not (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "iloc"
        ):
            continue
        base = w.ev(node.value.value)
        if base is None or base.kind not in PANDAS or base.shape is None:
            continue
        keys = index_keys(w, node.slice)  # ``df.iloc[:, 7]`` too: a slice never raises
        if keys is None:
            continue
        for axis, k in enumerate(keys[: len(base.shape)]):
            n = base.shape[axis]
            if isinstance(k, int) and not isinstance(k, bool) and n is not None and not -n <= k < n:
                what = "row" if axis == 0 else "column"
                return finding_at(
                    w,
                    "pandas.iloc-range",
                    "IndexError",
                    node.slice,
                    f"{what} position {k} is out of range: {base.text} has {n} {what}s",
                    [(f"{base.text}.shape", str(tuple(base.shape)))],
                    [base],
                )
    return []


# ------------------------------------------------------------------------------------------------
# .str / .dt / .cat on the wrong dtype
# ------------------------------------------------------------------------------------------------


def _numeric(dtype: str) -> bool:
    return dtype.lower().startswith(("int", "uint", "float", "bool", "complex"))


def _accessor_fails(attr: str, dtype: str) -> bool:
    d = dtype.lower()
    if attr == "cat":
        return d != "category"
    if attr == "str":
        return _numeric(dtype) or d.startswith(("datetime64", "timedelta64"))
    if attr == "dt":
        return _numeric(dtype) or d in ("string", "str")
    return False


@step("pandas.accessor-dtype", on=(ast.Attribute,), words=("str", "dt", "cat"))
def _accessor(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``.str``/``.dt``/``.cat`` on a Series of another dtype, a DataFrame, an array or a Categorical."""
    for node in w.evaluated_of(stmt, ast.Attribute):
        if not (
            isinstance(node, ast.Attribute)
            and node.attr in ("str", "dt", "cat")
            and isinstance(node.ctx, ast.Load)
        ):
            continue
        base = w.ev(node.value)
        if base is None:
            continue
        reason = None
        if base.kind == Kind.SERIES and base.dtype and _accessor_fails(node.attr, base.dtype):
            reason = f"{base.text} has dtype {base.dtype}"
        elif base.kind == Kind.DATAFRAME and base.labels is not None and node.attr not in base.labels:
            reason = f"{base.text} is a DataFrame (accessors belong to Series)"
        elif base.kind == Kind.CATEGORICAL:
            reason = f"{base.text} is a pandas.Categorical, not a Series"
        elif base.kind == Kind.NDARRAY:
            reason = f"{base.text} is a NumPy array"
        if reason:
            return finding_at(
                w,
                "pandas.accessor-dtype",
                "AttributeError",
                node,
                f".{node.attr} cannot be used here: {reason}",
                [(f"type({base.text})", base.kind + (f", dtype {base.dtype}" if base.dtype else ""))],
                [base],
            )
    return []


# ------------------------------------------------------------------------------------------------
# astype(int) on NaN or non-integer text
# ------------------------------------------------------------------------------------------------


def _int_target(w: CellWalk, arg: ast.AST) -> str | None:
    ok, value = literal(arg)
    if ok and isinstance(value, str) and value in _INT_TARGETS:
        return value
    if (
        isinstance(arg, ast.Name)
        and arg.id == "int"
        and "int" not in w.env
        and w.trusted("int")
        and "int" not in w.snapshot.variables
    ):
        return "int"
    if isinstance(arg, ast.Attribute) and arg.attr in _INT_TARGETS and w.module_of(arg.value) == "numpy":
        return f"np.{arg.attr}"
    return None


def _bad_int_value(examples: list[str] | None) -> str | None:
    for ex in examples or []:
        ok, v = literal(parse_expr(ex))
        if ok and isinstance(v, str):
            try:
                int(v)
            except ValueError:
                return v
    return None


_FLOAT_TARGETS = frozenset({"float", "float64", "float32", "float16"})


def _float_target(w: CellWalk, arg: ast.AST) -> str | None:
    ok, value = literal(arg)
    if ok and isinstance(value, str) and value in _FLOAT_TARGETS:
        return value
    if isinstance(arg, ast.Name) and arg.id == "float" and "float" not in w.env and w.trusted("float"):
        return "float" if "float" not in w.snapshot.variables else None
    if isinstance(arg, ast.Attribute) and arg.attr in _FLOAT_TARGETS and w.module_of(arg.value) == "numpy":
        return f"np.{arg.attr}"
    return None


def _text_value(examples: list[str] | None, *, blank_ok: bool = False) -> str | None:
    """A string the probe saw that ``float()`` rejects (``non_numeric_examples`` holds reprs)."""
    for ex in examples or []:
        ok, v = literal(parse_expr(ex))
        if ok and isinstance(v, str) and (blank_ok or v.strip()):
            try:
                float(v)
            except ValueError:
                return v
    return None


#: dtypes of text columns: object (pandas 2's default), str (pandas 3's default) and the string extension.
_TEXT_DTYPES = frozenset({"object", "str", "string"})


def _astype_float(w: CellWalk, node: ast.Call) -> list[Finding]:
    target = _float_target(w, node.args[0])
    base = w.ev(node.func.value) if target and isinstance(node.func, ast.Attribute) else None
    if base is None or base.kind != Kind.SERIES or base.dtype not in _TEXT_DTYPES or base.stats is None:
        return []
    bad = _text_value(base.stats.non_numeric_examples, blank_ok=True)
    if bad is None:
        return []
    return finding_at(
        w,
        "pandas.astype-int",
        "ValueError",
        node,
        f"{base.text} holds {bad!r}, which cannot be converted to {target}",
        [(f"{base.text}.dtype", base.dtype), (f"a value of {base.text}", repr(bad))],
        [base],
    )


def _to_numeric(w: CellWalk, node: ast.Call) -> list[Finding]:
    lib = w.lib_func(node.func)
    if lib is None or lib != ("pandas", "to_numeric") or len(node.args) != 1 or has_star(node):
        return []
    ok, errors = literal(kwarg(node, "errors"))
    if kwarg(node, "errors") is not None and (not ok or errors != "raise"):
        return []
    base = w.ev(node.args[0])
    if base is None or base.kind != Kind.SERIES or base.dtype not in _TEXT_DTYPES or base.stats is None:
        return []
    bad = _text_value(base.stats.non_numeric_examples)
    if bad is None:
        return []
    return finding_at(
        w,
        "pandas.astype-int",
        "ValueError",
        node,
        f"pd.to_numeric: {base.text} holds {bad!r}, which is not a number",
        [(f"{base.text}.dtype", base.dtype), (f"a value of {base.text}", repr(bad))],
        [base],
    )


@step("pandas.astype-int", on=(ast.Call,))
def _astype(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``astype(int)``/``astype(float)``/``pd.to_numeric`` on a column where the probe saw a value the
    conversion rejects (a NaN for int, a string that is not a number)."""
    for node in w.evaluated_of(stmt, ast.Call):
        if isinstance(node, ast.Call):
            other = _to_numeric(w, node)
            if (
                not other
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "astype"
                and len(node.args) == 1
                and not node.keywords
            ):
                other = _astype_float(w, node)
            if other:
                return other
        found = _astype_int(w, node)
        if found:
            return found
    return []


def _astype_int(w: CellWalk, node: ast.AST) -> list[Finding]:
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "astype"
        and len(node.args) == 1
        and not node.keywords
    ):
        return []
    target = _int_target(w, node.args[0])
    base = w.ev(node.func.value) if target else None
    if base is None or base.kind != Kind.SERIES or not base.dtype or base.stats is None:
        return []
    st, dtype = base.stats, base.dtype.lower()
    evidence = [(f"{base.text}.dtype", base.dtype)]
    msg, exc = None, "ValueError"
    # a NaN in a str column raises ValueError too; the string extension's NA raises TypeError
    if st.has_nan and (dtype.startswith("float") or dtype in ("object", "str")):
        # pandas raises its IntCastingNaNError (a ValueError) for float columns
        exc = "IntCastingNaNError" if dtype.startswith("float") else "ValueError"
        msg = f"{base.text} holds NaN, which cannot be cast to {target}"
        evidence.append((f"{base.text} NaN count", str(st.nan_count) if st.nan_count is not None else "> 0"))
    elif dtype in _TEXT_DTYPES:
        bad = _bad_int_value(st.non_numeric_examples) or _bad_int_value(st.examples)
        if bad is not None:
            msg = f"{base.text} holds {bad!r}, which int() rejects"
            evidence.append((f"a value of {base.text}", repr(bad)))
    if msg:
        return finding_at(w, "pandas.astype-int", exc, node, msg, evidence, [base])
    return []


# ------------------------------------------------------------------------------------------------
# wrong-length assignment
# ------------------------------------------------------------------------------------------------


def _length_of(w: CellWalk, node: ast.AST) -> tuple[int, Val | None] | None:
    if isinstance(node, ast.List):
        return len(node.elts), None
    v = w.ev(node)
    if v is None:
        return None
    if v.kind in (Kind.LIST, Kind.LIST_LITERAL) and v.length is not None:
        return v.length, v
    if v.kind == Kind.NDARRAY and v.shape is not None and len(v.shape) == 1 and v.shape[0] is not None:
        return v.shape[0], v
    return None


@step("pandas.length-mismatch")
def _assign_length(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``df['c'] = values`` / ``df.columns = names`` with the wrong number of values."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return []
    target = stmt.targets[0]
    if isinstance(target, ast.Subscript) and not isinstance(target.value, ast.Attribute):
        ok, key = literal(target.slice)
        base = w.ev(target.value)
        if (
            not ok
            or not isinstance(key, str)
            or base is None
            or base.kind != Kind.DATAFRAME
            or not base.shape
        ):
            return []
        n = base.shape[0]
        got = _length_of(w, stmt.value)
        if n and got is not None and got[0] != n:
            vals = [base] + ([got[1]] if got[1] else [])
            return finding_at(
                w,
                "pandas.length-mismatch",
                "ValueError",
                stmt,
                f"{got[0]} values assigned to column {key!r} of {base.text}, which has {n} rows",
                [(f"len({base.text})", str(n)), ("len(values)", str(got[0]))],
                vals,
            )
    if isinstance(target, ast.Attribute) and target.attr == "columns":
        base = w.ev(target.value)
        if base is None or base.kind != Kind.DATAFRAME or not base.shape or len(base.shape) != 2:
            return []
        n = base.shape[1]
        got = _length_of(w, stmt.value)
        if n and got is not None and got[0] != n:
            vals = [base] + ([got[1]] if got[1] else [])
            return finding_at(
                w,
                "pandas.length-mismatch",
                "ValueError",
                stmt,
                f"{got[0]} column names assigned to {base.text}, which has {n} columns",
                [(f"{base.text}.shape", str(tuple(base.shape))), ("len(names)", str(got[0]))],
                vals,
            )
    return []


# ------------------------------------------------------------------------------------------------
# truth value of a DataFrame / Series / array
# ------------------------------------------------------------------------------------------------


def _truth_operands(stmt: ast.stmt, w: CellWalk) -> list[ast.AST]:
    out: list[ast.AST] = []
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
        out.append(stmt.test)
    for node in w.evaluated_of(stmt, ast.BoolOp, ast.UnaryOp, ast.IfExp):
        if isinstance(node, ast.BoolOp):
            out.append(node.values[0])
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append(node.operand)
        elif isinstance(node, ast.IfExp):
            out.append(node.test)
    return out


@step("pandas.truth-value")
def _truth(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``if df:`` / ``s and x`` / ``not arr``: pandas and NumPy refuse to be truthy."""
    for operand in _truth_operands(stmt, w):
        if isinstance(operand, (ast.BoolOp, ast.UnaryOp)):
            continue
        v = w.ev(operand)
        if v is None:
            continue
        what = None
        if v.kind in PANDAS:
            what = "DataFrame" if v.kind == Kind.DATAFRAME else "Series"
        elif v.kind == Kind.NDARRAY and v.full_shape() is not None:
            size = 1
            for d in v.full_shape() or ():
                size *= d
            if size > 1:
                what = "array with more than one element"
        if what:
            return finding_at(
                w,
                "pandas.truth-value",
                "ValueError",
                operand,
                f"the truth value of a {what} is ambiguous ({v.text})",
                [(f"type({v.text})", v.kind + (f", shape {tuple(v.shape)}" if v.shape else ""))],
                [v],
            )
    return []


# ------------------------------------------------------------------------------------------------
# join with overlapping columns and no suffix
# ------------------------------------------------------------------------------------------------


@step("pandas.join-overlap", on=(ast.Call,), words=("join",))
def _join(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``a.join(b)`` where both frames share a column and neither ``lsuffix`` nor ``rsuffix`` is given."""
    for node, method in w.method_calls(stmt, "join"):
        if len(node.args) != 1 or node.keywords:
            continue
        left, right = w.ev(method.value), w.ev(node.args[0])
        if left is None or right is None or left.kind != Kind.DATAFRAME or right.kind != Kind.DATAFRAME:
            continue
        if left.labels is None or right.labels is None:
            continue
        overlap = [c for c in left.labels if c in right.labels]
        if overlap:
            return finding_at(
                w,
                "pandas.join-overlap",
                "ValueError",
                node,
                f"{left.text}.join({right.text}): columns {overlap[:5]} are in both and no suffix is given",
                [_labels_evidence(left), _labels_evidence(right)],
                [left, right],
            )
    return []
