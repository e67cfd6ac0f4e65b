"""An aggregation named by a string pandas cannot resolve: ``df.agg('meen')`` -> AttributeError.

pandas (``core/apply.py``, ``Apply._apply_str``) resolves ``obj.agg('name')`` as ``getattr(obj, name)`` (class
attributes, then ``NDFrame.__getattr__``: a DataFrame's column / a Series' index label), else
``getattr(numpy, name)`` (an object with ``__array__``), else raises ``AttributeError: 'name' is not a valid
function for 'DataFrame' object``. The probe answers the first two without running anything (chain
``df.name``: a static class lookup plus ``_info_axis._can_hold_identifiers_and_holds_name``, only for pandas'
own classes) and the third from the loaded numpy module (chain ``@numpy.name``). Only a kernel DataFrame or
Series of pandas' own class, called with the name alone (no ``axis``: ``axis=1`` aggregates the transpose);
a list of names only on a Series (on a DataFrame each name goes to a column Series, looked up there). A kernel
groupby given a name: ``getattr`` alone decides (the probe replays ``GroupBy.__getattr__``).

``pandas.agg-spec``: the groupby, list, dict and named forms (docs/checks.md): a dict / named key that is no
column (KeyError, checked before any function runs), or a name that misses, run in pandas' order (column by
column, each column's functions in turn) after functions proven harmless on their column.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from crane_lsp.analysis.facts import AGG_CLASS_CHAINS, NUMPY_CHAIN, Call, CellFacts, agg_names
from crane_lsp.analysis.kinds import Kind, ValKind
from crane_lsp.analysis.values import Val, has_star, kwarg, literal
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.python import kernel_value, type_name
from crane_lsp.checks.registry import Finding, check, finding_at, step
from crane_lsp.snapshot import Snapshot

_FRAME, _SERIES = "pandas.DataFrame", "pandas.Series"
_OWN_CLASSES = {
    _FRAME: "DataFrame",
    _SERIES: "Series",
    "pandas.core.frame.DataFrame": "DataFrame",
    "pandas.core.series.Series": "Series",
}
#: pandas' own groupby classes (pandas 3 names them by ``pandas.api.typing``): ``getattr`` alone resolves a
#: name given to them (no numpy fallback: a groupby has no ``__array__``), replayed by the probe.
_GROUPBY_CLASSES = {
    "pandas.api.typing.DataFrameGroupBy": "DataFrameGroupBy",
    "pandas.core.groupby.generic.DataFrameGroupBy": "DataFrameGroupBy",
    "pandas.api.typing.SeriesGroupBy": "SeriesGroupBy",
    "pandas.core.groupby.generic.SeriesGroupBy": "SeriesGroupBy",
}


def _absent(snap: Snapshot, key: str) -> bool:
    fact = snap.attributes.get(key)
    return fact is not None and fact.exists is False


@check("pandas.agg-name")
def agg_name(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``df.agg('meen')`` / ``s.agg(['mean', 'stdd'])``: a name neither pandas nor numpy resolves."""
    for call in facts.calls:
        names = agg_names(call)
        if not names or call.guarded or call.receiver is None or "." in call.receiver:
            continue
        if len(call.positional()) > 1 or any(a.keyword not in (None, "func") for a in call.args):
            continue
        summary = kernel_value(facts, snap, call.receiver, call.span)
        grouped = _GROUPBY_CLASSES.get(type_name(summary)) if summary is not None else None
        if (
            grouped is not None
            and isinstance(_first_literal(call), str)
            and _absent(snap, f"{call.receiver}.{names[0]}")
        ):
            return [_groupby_finding(call, grouped, names[0])]
        cls = _OWN_CLASSES.get(type_name(summary)) if summary is not None else None
        if cls is None or (cls == "DataFrame" and not isinstance(_first_literal(call), str)):
            continue
        label = "column" if cls == "DataFrame" else "index label"
        for name in names:
            if _absent(snap, f"{call.receiver}.{name}") and _absent(snap, f"{NUMPY_CHAIN}.{name}"):
                return [
                    Finding(
                        check_id="pandas.agg-name",
                        exception="AttributeError",
                        message=(
                            f"{call.func}({name!r}): '{name}' is not a valid function for '{cls}' object "
                            f"(no {cls} method or attribute, no {label} and no numpy function of that name)"
                        ),
                        span=call.span,
                        evidence=((f"{call.receiver}.{name}", "absent"), (f"numpy.{name}", "absent")),
                        variables=(call.receiver,),
                    )
                ]
    return []


def _groupby_finding(call: Call, cls: str, name: str) -> Finding:
    """A kernel groupby given a name its class does not define and that is no column (index label) of the
    grouped frame (Series): ``getattr`` raises, and pandas tries nothing else."""
    said = (
        f"'{cls}' object has no attribute '{name}'"
        if cls == "SeriesGroupBy"
        else f"'{name}' is not a valid function for '{cls}' object"
    )
    label = (
        "column of the grouped frame" if cls == "DataFrameGroupBy" else "index label of the grouped Series"
    )
    return Finding(
        check_id="pandas.agg-name",
        exception="AttributeError",
        message=f"{call.func}({name!r}): {said} (no {cls} method or attribute and no {label})",
        span=call.span,
        evidence=((f"{call.receiver}.{name}", "absent"),),
        variables=(call.receiver or "",),
    )


def _first_literal(call: Call) -> object:
    pos = call.positional()
    arg = pos[0] if pos else call.keyword("func")
    return arg.literal if arg is not None else None


# ------------------------------------------------------------------------------------------------
# Groupby, list, dict and named aggregations (``pandas.agg-spec``)
# ------------------------------------------------------------------------------------------------

_GROUPBY_FLAGS = frozenset({"as_index", "sort", "group_keys", "observed", "dropna"})
#: Probe chains of the classes whose attributes resolve an aggregation name (read from ``sys.modules``).
SERIES_CHAIN, DFGB_CHAIN, SGB_CHAIN = AGG_CLASS_CHAINS[:3]
#: Names that run on a column of any dtype without raising, at the Series / groupby level; on an int or
#: float column the numeric reductions too. Anything else before a missing name leaves the cell unchecked.
_SAFE_ANY = {
    "series": frozenset({"count", "nunique", "size"}),
    "sgb": frozenset({"count", "nunique", "size", "first", "last"}),
}
_SAFE_NUMERIC = frozenset({"sum", "mean", "median", "min", "max", "std", "var", "prod"})


@dataclass(frozen=True)
class _Target:
    """What ``.agg`` is called on: a kernel frame or Series, its groupby, or one column of that groupby."""

    level: str  # "frame" | "series" | "dfgb" | "sgb"
    base: Val  # the kernel DataFrame (or Series) behind it
    keys: tuple[str, ...] = ()  # the groupby's column keys
    column: str | None = None  # ``df.groupby(k)['col']``


def _own_frame(v: Val | None, kind: ValKind) -> bool:
    """A value of pandas' own class; a frame's columns known exactly, unique and flat (a duplicated label
    selects a frame, a MultiIndex matches keys by level)."""
    if v is None or v.kind != kind or v.summary is None or _OWN_CLASSES.get(type_name(v.summary)) is None:
        return False
    if kind != Kind.DATAFRAME:
        return True
    labels = v.labels
    if labels is None or len(set(labels)) != len(labels):
        return False
    return all(type(c) in (str, int) for c in labels)


def _groupby_of(w: CellWalk, node: ast.expr) -> _Target | None:
    """``df.groupby('k')`` / ``df.groupby(['a', 'b'], as_index=False)`` of a kernel frame whose columns hold
    every key (else the groupby raises first)."""
    if not (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "groupby"
    ):
        return None
    frame = w.ev(node.func.value)
    if not _own_frame(frame, Kind.DATAFRAME) or has_star(node) or len(node.args) > 1 or frame is None:
        return None
    by = node.args[0] if node.args else kwarg(node, "by")
    if by is None or any(k.arg not in _GROUPBY_FLAGS | {"by"} for k in node.keywords):
        return None
    if any(not literal(k.value)[0] for k in node.keywords):
        return None
    ok, value = literal(by)
    keys = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if not ok or not keys or not all(isinstance(k, str) and k in (frame.labels or ()) for k in keys):
        return None
    return _Target("dfgb", frame, tuple(keys))


def _target(w: CellWalk, node: ast.expr) -> _Target | None:
    if isinstance(node, ast.Subscript):
        ok, col = literal(node.slice)
        frame = w.ev(node.value)
        if _own_frame(frame, Kind.DATAFRAME) and frame is not None and isinstance(col, str) and ok:
            # a column of a kernel frame: a pandas Series with the frame's index
            return _Target("series", frame, column=col) if col in (frame.labels or ()) else None
        gb = _groupby_of(w, node.value)
        if gb is not None and ok and isinstance(col, str) and col in (gb.base.labels or ()):
            return _Target("sgb", gb.base, gb.keys, col)
        return None
    v = w.ev(node)
    if _own_frame(v, Kind.DATAFRAME) and v is not None:
        return _Target("frame", v)
    if _own_frame(v, Kind.SERIES) and v is not None:
        return _Target("series", v)
    return _groupby_of(w, node)


#: One aggregation pandas runs, in its order: (the column it runs on, None for the whole object; the
#: function's node)
_Step = tuple[str | None, ast.expr]


def _entries(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else [node]


def _named_pair(w: CellWalk, node: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """(column, function) of a named aggregation's value: ``('col', 'sum')`` or
    ``pd.NamedAgg('col', 'sum')`` / ``NamedAgg(column='col', aggfunc='sum')`` (pandas' own namedtuple)."""
    if isinstance(node, ast.Tuple) and len(node.elts) == 2:
        return node.elts[0], node.elts[1]
    if not isinstance(node, ast.Call) or has_star(node) or w.lib_func(node.func) != ("pandas", "NamedAgg"):
        return None
    given = dict(zip(("column", "aggfunc"), node.args, strict=False))
    for kw in node.keywords:
        if kw.arg in given or kw.arg not in ("column", "aggfunc"):
            return None
        given[kw.arg] = kw.value
    if len(node.args) > 2 or len(given) != 2:
        return None
    return given["column"], given["aggfunc"]


def _plan(w: CellWalk, t: _Target, call: ast.Call) -> tuple[list[str], list[_Step], str] | None:
    """(dict / named-aggregation keys pandas looks up as columns, the aggregations in the order pandas runs
    them, the level that resolves their names: "series", "sgb" for a groupby's column, "dfgb" for a name
    given to a whole groupby); None for a form this check leaves alone (the plain name on a frame or Series
    is ``pandas.agg-name``'s)."""
    func = call.args[0] if call.args else kwarg(call, "func")
    rest = [k for k in call.keywords if k.arg != "func"]
    if len(call.args) > 1 or (func is not None and rest):
        return None
    spec: list[tuple[str, list[ast.expr]]] = []  # (column, functions), or ("", ...) for the whole object
    keys: list[str] = []
    if func is None and t.level == "sgb":  # a groupby column's named aggregation: new='func'
        if not rest:
            return None
        spec.append((t.column or "", [k.value for k in rest]))
    elif func is None:  # named aggregation: new=('col', 'func')
        if t.level not in ("frame", "dfgb") or not rest:
            return None
        for k in rest:
            pair = _named_pair(w, k.value)
            if pair is None:
                return None
            ok, col = literal(pair[0])
            if not ok or not isinstance(col, str):
                return None
            keys.append(col)
            for entry in spec:
                if entry[0] == col:
                    entry[1].append(pair[1])
                    break
            else:
                spec.append((col, [pair[1]]))
    elif isinstance(func, ast.Dict):
        if t.level not in ("frame", "dfgb", "series") or any(k is None for k in func.keys):
            return None
        for k_node, value in zip(func.keys, func.values, strict=True):
            ok, col = literal(k_node)
            if not ok or not isinstance(col, str):
                return None
            if t.level != "series":
                keys.append(col)
            spec.append(((t.column or "") if t.level == "series" else col, _entries(value)))
    elif isinstance(func, (ast.List, ast.Tuple)):
        if t.level == "series" and t.column is None:
            return None  # a kernel Series: pandas.agg-name's
        if t.level in ("sgb", "series"):
            spec.append((t.column or "", _entries(func)))
        else:
            cols = [c for c in t.base.labels or () if c not in t.keys]
            if not cols or not all(isinstance(c, str) for c in cols):
                return None
            spec.extend((c, _entries(func)) for c in cols)
    elif isinstance(func, ast.Constant) and isinstance(func.value, str):
        if t.level == "dfgb":
            spec.append(("", [func]))
        elif t.level == "sgb" or (t.level == "series" and t.column is not None):
            spec.append((t.column or "", [func]))  # a kernel frame's column: ``df['price'].agg('meen')``
        else:
            return None
    else:
        return None
    whole = t.level == "dfgb" and isinstance(func, ast.Constant)
    level = "series" if t.level in ("frame", "series") else "dfgb" if whole else "sgb"
    return keys, [(col or None, f) for col, fs in spec for f in fs], level


def _resolves(snap: Snapshot, t: _Target, level: str, name: str) -> bool | None:
    """Whether ``getattr`` finds ``name`` at ``level`` (True), proven not to (False), or cannot tell."""
    if name.startswith("_"):
        return None
    chain = {"series": SERIES_CHAIN, "dfgb": DFGB_CHAIN, "sgb": SGB_CHAIN}[level]
    fact = snap.attributes.get(f"{chain}.{name}")
    if fact is None or fact.exists is None:
        return None
    if fact.exists:
        return True
    if level == "dfgb":  # GroupBy.__getattr__: a column of the frame
        return name in (t.base.labels or ())
    held = (t.base.summary.index_has or {}).get(repr(name)) if t.base.summary is not None else None
    if held is None:  # a Series' index label (NDFrame.__getattr__) / ``name in obj`` of a SeriesGroupBy
        return None
    if held:
        return True
    if level == "series":  # then numpy, for an object with __array__
        np_fact = snap.attributes.get(f"{NUMPY_CHAIN}.{name}")
        if np_fact is None or np_fact.exists is None:
            return None
        return bool(np_fact.exists)
    return False


def _numeric(t: _Target, column: str | None) -> bool:
    s = t.base.summary
    if s is None or column is None:
        return False
    dtype = next((c.dtype for c in s.columns or () if c.name == column and c.label_repr is None), None)
    return dtype is not None and dtype.rstrip("0123456789") in ("int", "uint", "float")


@step("pandas.agg-spec", on=(ast.Call,), words=("agg",))
def agg_spec(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``df.groupby(k).agg({'col': 'nme'})`` and the other spec forms: a key that is not a column
    (KeyError) or a function name pandas resolves nowhere (AttributeError), before anything else raises."""
    for node, func in w.method_calls(stmt, "agg", "aggregate"):
        if has_star(node):
            continue
        t = _target(w, func.value)
        planned = _plan(w, t, node) if t is not None else None
        if t is None or planned is None:
            continue
        keys, steps, level = planned
        missing = [k for k in dict.fromkeys(keys) if k not in (t.base.labels or ())]
        if missing:
            return finding_at(
                w,
                "pandas.agg-spec",
                "KeyError",
                node,
                f"{w.text(func)}(...): Label(s) {missing} do not exist (not columns of {t.base.text})",
                [(f"{t.base.text}.columns", repr(list(t.base.labels or ())[:12]))],
                [t.base],
            )
        for column, fn in steps:
            ok, name = literal(fn)
            if not ok or not isinstance(name, str):
                break
            found = _resolves(w.snapshot, t, level, name)
            if found is None:
                break
            if found:
                safe = _SAFE_ANY.get(level, frozenset()) | (
                    _SAFE_NUMERIC if _numeric(t, column) else frozenset()
                )
                if name in safe:
                    continue
                break
            cls = {"series": "Series", "sgb": "SeriesGroupBy", "dfgb": "DataFrameGroupBy"}[level]
            said = (
                f"'{cls}' object has no attribute '{name}'"
                if level == "sgb"
                else f"'{name}' is not a valid function for '{cls}' object"
            )
            on = f" (on column {column!r})" if column else ""
            return finding_at(
                w,
                "pandas.agg-spec",
                "AttributeError",
                fn,
                f"{w.text(func)}(...){on}: {said}",
                [(f"{cls}.{name}", "absent"), (f"{name!r} in {t.base.text}'s labels", "no")],
                [t.base],
            )
    return []
