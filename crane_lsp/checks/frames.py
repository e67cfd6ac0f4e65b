"""Missing columns in Polars, Dask and Spark frames, proven from the schema the probe read.

Each library raises at its own moment, and the finding goes where it does:

* Polars ``DataFrame``: ``ColumnNotFoundError`` at the call (``select``, ``with_columns``, ``filter``,
  ``sort``, ``drop``, ``join``, ``df['x']``; ``group_by(...)`` at the ``agg`` that follows);
* Polars ``LazyFrame``: nothing until the plan resolves, so the finding sits on the ``collect()`` of a
  plan that references a missing column (in the same expression, or through a name the cell binds
  once);
* Dask ``DataFrame``: ``KeyError`` at the call (it checks its ``_meta``): ``ddf['x']``, ``groupby``,
  ``set_index``, ``merge``, ``drop(columns=)``;
* Spark ``DataFrame``: ``AnalysisException`` at the call (the plan is analysed eagerly): ``select``,
  ``filter``/``where``, ``withColumn``, ``orderBy``/``sort``, ``join(on=)``, ``sdf['x']``;
  ``groupBy(...)`` at the aggregation that follows. Spark resolves names case-insensitively by
  default, so a name is missing only when no column matches it in any case.

Only column references that certainly reach the plan count: literal names, and ``pl.col('x')`` /
``F.col('x')`` inside expression trees built from library calls and operators (not inside lambdas,
conditionals or user functions, which may drop them). Regex and wildcard names are never read as
columns. The schema must be complete (``exact_labels``); a deadline or a stopped session leaves the
frame unknown and the check silent. Spark Connect frames analyse lazily (the error comes at an
action), so only classic ones are checked.

``frames.dtype``: arithmetic between a Polars String column and a number (``pl.col('s') + 1``)
raises ``InvalidOperationError`` — at the call, or at ``collect`` for a lazy plan.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, replace
from typing import Any

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.kinds import Kind, ValKind
from crane_lsp.analysis.values import exact_labels, has_star, kwarg, literal
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import CheckHook, Finding, HookFactory, finding_at, step_factory
from crane_lsp.snapshot import Snapshot

CHECK_ID = "frames.missing-column"
DTYPE_ID = "frames.dtype"

_LIB_OF_KIND: dict[ValKind, str] = {
    Kind.POLARS_DATAFRAME: "polars",
    Kind.POLARS_LAZYFRAME: "polars",
    Kind.DASK_DATAFRAME: "dask",
    Kind.SPARK_DATAFRAME: "spark",
}
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_EXCEPTION = {"polars": "ColumnNotFoundError", "dask": "KeyError", "spark": "AnalysisException"}
_COL_FUNCS = {"polars": ("polars", ("col",)), "spark": ("pyspark.sql", ("col", "column"))}

#: methods whose result has the receiver's columns, per library
_KEEPS = {
    "polars": frozenset(
        [
            "filter",
            "sort",
            "head",
            "tail",
            "limit",
            "slice",
            "cache",
            "fill_null",
            "fill_nan",
            "drop_nulls",
            "unique",
            "reverse",
            "clone",
            "shrink_to_fit",
            "rechunk",
            "sample",
            "shift",
            "gather_every",
            "set_sorted",
        ]
    ),
    "dask": frozenset(["repartition", "persist", "sort_values", "fillna", "dropna", "copy"]),
    "spark": frozenset(
        [
            "filter",
            "where",
            "orderBy",
            "sort",
            "limit",
            "distinct",
            "dropDuplicates",
            "drop_duplicates",
            "cache",
            "persist",
            "repartition",
            "coalesce",
            "sample",
            "fillna",
            "dropna",
            "alias",
            "hint",
            "localCheckpoint",
        ]
    ),
}
#: methods whose positional str (or list of str) arguments name input columns
_NAMED_ARGS = {
    "polars": frozenset(["select", "with_columns", "group_by", "sort", "drop", "get_column", "partition_by"]),
    "dask": frozenset(["groupby", "set_index"]),
    "spark": frozenset(["select", "orderBy", "sort", "groupBy"]),
}
#: keyword arguments that name input columns
_NAMED_KWARGS = {
    "polars": {"sort": ("by",), "unique": ("subset",), "drop_nulls": ("subset",), "group_by": ("by",)},
    "dask": {"groupby": ("by",), "drop": ("columns",), "set_index": ("other",)},
    "spark": {},
}
#: methods whose expression arguments (``pl.col`` / ``F.col``) are resolved against the receiver
_EXPR_METHODS = {
    "polars": frozenset(["select", "with_columns", "filter", "sort", "group_by", "agg"]),
    "dask": frozenset(),
    "spark": frozenset(["select", "filter", "where", "withColumn", "orderBy", "sort", "groupBy", "agg"]),
}
#: grouped objects whose next call resolves the group keys (eager Polars, Spark)
_GROUPERS = {"polars": "group_by", "spark": "groupBy"}
#: the calls on a grouped object that certainly resolve its keys (an aggregation)
_AGGREGATIONS = frozenset(
    ("agg", "count", "sum", "mean", "avg", "max", "min", "len", "first", "last", "median", "n_unique")
)


@dataclass(frozen=True)
class _Miss:
    name: str
    node: ast.AST | None  # the literal naming it (for a certain fix)
    dtype_error: str | None = None  # set: the column exists, its dtype refuses the operation


@dataclass(frozen=True)
class _Frame:
    lib: str
    lazy: bool
    labels: tuple[str, ...] | None  # every column, exactly; None once the cell changed the schema
    text: str
    variables: tuple[str, ...]
    # a lazy plan that will fail when collected: (missing name, node holding it, labels it missed)
    pending: tuple[_Miss, tuple[str, ...]] | None = None
    grouped: bool = False  # the result of group_by/groupBy: keys resolve at the next call
    dtypes: tuple[str, ...] | None = None  # beside ``labels``


def _has(lib: str, labels: tuple[str, ...], name: str) -> bool:
    if lib == "spark":
        return name.lower() in {label.lower() for label in labels}
    return name in labels


def _plain_name(lib: str, value: Any) -> bool:
    """A literal that names one column (not a regex, wildcard or nested field)."""
    if not isinstance(value, str) or not value or value == "*":
        return False
    if lib == "polars" and value.startswith("^") and value.endswith("$"):
        return False
    return not (lib == "spark" and any(ch in value for ch in ".`*"))


class _Reader:
    """Reads frames and column references off a cell's expressions, against one walk state."""

    def __init__(self, w: CellWalk, bound: dict[str, _Frame]) -> None:
        self.w = w
        self.bound = bound

    # ---- frames -------------------------------------------------------------------------------
    def frame(self, node: ast.AST) -> _Frame | None:
        if isinstance(node, ast.Name) and node.id in self.bound:
            return self.bound[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self._method_result(node, node.func.attr)
        if isinstance(node, (ast.Name, ast.Attribute)):
            v = self.w.ev(node)
            if v is None or v.summary is None or v.kind not in _LIB_OF_KIND:
                return None
            if v.kind == Kind.SPARK_DATAFRAME and (
                v.summary.frame is None or v.summary.frame.library != "pyspark"
            ):
                return None  # Spark Connect analyses lazily: a missing column raises at the first action
            labels = exact_labels(v.summary)
            if labels is None or not all(isinstance(x, str) for x in labels):
                return None
            lazy = v.kind == Kind.POLARS_LAZYFRAME
            dtypes = tuple(c.dtype for c in v.summary.columns or [])
            return _Frame(_LIB_OF_KIND[v.kind], lazy, labels, self.w.text(node), v.variables, dtypes=dtypes)
        return None

    def _method_result(self, call: ast.Call, method: str) -> _Frame | None:
        assert isinstance(call.func, ast.Attribute)
        base = self.frame(call.func.value)
        if base is None or base.grouped:
            return None
        if base.lib == "polars" and method == "lazy" and not base.lazy:
            return _Frame("polars", True, base.labels, base.text, base.variables, dtypes=base.dtypes)
        if base.lazy and method == "collect":
            return None  # an eager frame, unless the plan fails: the check reports that
        pending = base.pending
        if base.lazy and pending is None and base.labels is not None:
            miss = self.misses(call, method, base)
            if miss:
                pending = (miss[0], base.labels)
        if method == _GROUPERS.get(base.lib) and not base.lazy:
            return _Frame(
                base.lib, False, base.labels, base.text, base.variables, grouped=True, dtypes=base.dtypes
            )
        keeps = method in _KEEPS[base.lib] and not has_star(call)
        if not base.lazy and not keeps:
            return None
        if not keeps:
            return _Frame(base.lib, base.lazy, None, base.text, base.variables, pending=pending)
        return replace(base, pending=pending)

    # ---- column references ------------------------------------------------------------------------
    def misses(self, call: ast.Call, method: str, frame: _Frame) -> list[_Miss]:
        """Columns ``frame.<method>(...)`` certainly resolves that the frame does not have."""
        if frame.labels is None or has_star(call):
            return []
        lib = frame.lib
        refs: list[_Miss] = []
        if method in _NAMED_ARGS[lib]:
            for arg in call.args[1:] if method == "withColumn" else call.args:
                refs.extend(self._literal_names(lib, arg))
        for name in _NAMED_KWARGS[lib].get(method, ()):
            node = kwarg(call, name)
            if node is not None:
                refs.extend(self._literal_names(lib, node))
        if lib == "polars" and method == "drop" and _literal_false(kwarg(call, "strict")):
            refs = []
        if lib == "dask" and method == "drop" and kwarg(call, "errors") is not None:
            refs = []
        if method in _EXPR_METHODS[lib]:
            args = call.args[1:] if method == "withColumn" else call.args
            for node in [*args, *(k.value for k in call.keywords)]:
                refs.extend(self._col_refs(lib, node))
        if method in ("join", "merge"):
            refs.extend(self._join_refs(call, frame))
        missing = [m for m in refs if not _has(lib, frame.labels, m.name)]
        if missing or lib != "polars" or frame.dtypes is None or method not in _EXPR_METHODS[lib]:
            return missing
        return self._dtype_misuse(call, frame)

    def _dtype_misuse(self, call: ast.Call, frame: _Frame) -> list[_Miss]:
        """``pl.col('s') + 1`` on a String column: Polars refuses arithmetic between str and numbers."""
        assert frame.labels is not None and frame.dtypes is not None
        dtype_of = dict(zip(frame.labels, frame.dtypes, strict=False))
        out: list[_Miss] = []
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            for node in self._tree("polars", arg):
                if not isinstance(node, ast.BinOp) or not isinstance(node.op, _ARITH):
                    continue
                for col_side, other in ((node.left, node.right), (node.right, node.left)):
                    name = self._bare_col(col_side)
                    if (
                        name is not None
                        and dtype_of.get(name) in ("String", "Utf8", "str")
                        and isinstance(other, ast.Constant)
                        and type(other.value) in (int, float)
                    ):
                        text = self.w.text(node)
                        out.append(_Miss(name, None, f"arithmetic on the String column {name!r} ({text})"))
        return out

    def _bare_col(self, node: ast.AST) -> str | None:
        if not (isinstance(node, ast.Call) and self._is_col("polars", node.func)):
            return None
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant):
            return None
        value = node.args[0].value
        return value if isinstance(value, str) and _plain_name("polars", value) else None

    def _call_operands(self, lib: str, node: ast.Call) -> list[ast.AST] | None:
        """The receiver and arguments a method on a column expression, or a library function, reads;
        None when the call is neither."""
        inner: list[ast.AST] = []
        if isinstance(node.func, ast.Attribute) and self._is_expr(lib, node.func.value):
            inner.append(node.func.value)
        elif not self._is_lib_call(lib, node.func):
            return None
        inner.extend(node.args)
        inner.extend(k.value for k in node.keywords)
        return inner

    def _tree(self, lib: str, node: ast.AST) -> list[ast.AST]:
        """The nodes of an expression tree that certainly reach the plan (as ``_col_refs`` walks it)."""
        out: list[ast.AST] = [node]
        if isinstance(node, ast.Call):
            if self._is_col(lib, node.func):
                return out
            inner = self._call_operands(lib, node)
            if inner is None:
                return []
            return out + [n for i in inner for n in self._tree(lib, i)]
        if isinstance(node, ast.BinOp):
            return out + self._tree(lib, node.left) + self._tree(lib, node.right)
        if isinstance(node, ast.Compare):
            return out + [n for c in (node.left, *node.comparators) for n in self._tree(lib, c)]
        if isinstance(node, ast.UnaryOp):
            return out + self._tree(lib, node.operand)
        if isinstance(node, (ast.List, ast.Tuple)):
            return out + [n for e in node.elts for n in self._tree(lib, e)]
        return out

    def _literal_names(self, lib: str, node: ast.AST) -> list[_Miss]:
        if isinstance(node, ast.Constant):
            value = node.value
            return [_Miss(value, node)] if isinstance(value, str) and _plain_name(lib, value) else []
        if isinstance(node, (ast.List, ast.Tuple)):
            return [m for e in node.elts for m in self._literal_names(lib, e)]
        return []

    def _is_col(self, lib: str, func: ast.AST) -> bool:
        spec = _COL_FUNCS.get(lib)
        if spec is None:
            return False
        got = self.w.lib_func(func)
        return got is not None and got[0].startswith(spec[0]) and got[1] in spec[1]

    def _is_lib_call(self, lib: str, func: ast.AST) -> bool:
        got = self.w.lib_func(func)
        return got is not None and got[0].split(".")[0] == ("polars" if lib == "polars" else "pyspark")

    def _col_refs(self, lib: str, node: ast.AST) -> list[_Miss]:
        """``col('x')`` names inside an expression tree of library calls, methods and operators."""
        if isinstance(node, ast.Call):
            if self._is_col(lib, node.func):
                if has_star(node) or node.keywords:
                    return []
                return [m for a in node.args for m in self._literal_names(lib, a)]
            inner = self._call_operands(lib, node)
            if inner is None:
                return []
            return [m for n in inner for m in self._col_refs(lib, n)]
        if isinstance(node, ast.BinOp):
            return self._col_refs(lib, node.left) + self._col_refs(lib, node.right)
        if isinstance(node, ast.Compare):
            return [m for n in (node.left, *node.comparators) for m in self._col_refs(lib, n)]
        if isinstance(node, ast.UnaryOp):
            return self._col_refs(lib, node.operand)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [m for e in node.elts for m in self._col_refs(lib, e)]
        return []

    def _is_expr(self, lib: str, node: ast.AST) -> bool:
        """An expression built by the library (``pl.col('a').sum()``, ``pl.when(...)``), not a user object."""
        if isinstance(node, ast.Call):
            if self._is_col(lib, node.func) or self._is_lib_call(lib, node.func):
                return True
            return isinstance(node.func, ast.Attribute) and self._is_expr(lib, node.func.value)
        if isinstance(node, ast.BinOp):
            return self._is_expr(lib, node.left) or self._is_expr(lib, node.right)
        return False

    def _join_refs(self, call: ast.Call, frame: _Frame) -> list[_Miss]:
        lib = frame.lib
        if lib == "spark":
            on = kwarg(call, "on") or (call.args[1] if len(call.args) > 1 else None)
            return self._literal_names(lib, on) if on is not None else []
        refs: list[_Miss] = []
        for name in ("on", "left_on"):
            node = kwarg(call, name)
            if node is not None:
                refs.extend(self._literal_names(lib, node))
        return refs

    def other_misses(self, call: ast.Call, frame: _Frame) -> tuple[list[_Miss], _Frame | None]:
        """Join keys missing from the OTHER frame (the first argument), when it is known too."""
        other_node = call.args[0] if call.args else kwarg(call, "other") or kwarg(call, "right")
        other = self.frame(other_node) if other_node is not None else None
        if other is None or other.lib != frame.lib or other.labels is None or other.lazy != frame.lazy:
            return [], None
        refs: list[_Miss] = []
        names = ("on",) if frame.lib == "spark" else ("on", "right_on")
        for name in names:
            node = kwarg(call, name)
            if node is None and name == "on" and frame.lib == "spark" and len(call.args) > 1:
                node = call.args[1]
            if node is not None:
                refs.extend(self._literal_names(frame.lib, node))
        return [m for m in refs if not _has(frame.lib, other.labels, m.name)], other


def _literal_false(node: ast.AST | None) -> bool:
    ok, value = literal(node)
    return ok and value is False


def _stores(tree: ast.AST | None) -> dict[str, int]:
    """How often each name is bound anywhere in the cell (functions included)."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                counts[name] = counts.get(name, 0) + 2
    return counts


def _finding(
    w: CellWalk, frame: _Frame, node: ast.AST, miss: _Miss, labels: tuple[str, ...], where: str
) -> list[Finding]:
    check_id, exc = CHECK_ID, _EXCEPTION[frame.lib]
    if miss.dtype_error is not None:
        check_id, exc, message = DTYPE_ID, "InvalidOperationError", f"{miss.dtype_error} in {where}"
    else:
        message = f"column {miss.name!r} does not exist in {where}"
        close = difflib.get_close_matches(miss.name, list(labels), n=1, cutoff=0.8)
        if close:
            message += f" (did you mean {close[0]!r}?)"
    if frame.lazy:
        message += "; the lazy plan fails when it is collected"
    shown = ", ".join(repr(x) for x in labels[:12]) + (", …" if len(labels) > 12 else "")
    evidence = [(f"{where} schema", f"[{shown}] ({len(labels)} columns)")]
    if miss.dtype_error is not None and frame.dtypes is not None:
        dtype = dict(zip(labels, frame.dtypes, strict=False)).get(miss.name)
        evidence.append((f"{where}[{miss.name!r}] dtype", str(dtype)))
    found = finding_at(w, check_id, exc, node, message, evidence, [])
    return [replace(f, variables=frame.variables) for f in found]


def _hook(bound: dict[str, _Frame], stores: dict[str, int], want: str) -> CheckHook:
    """The walk's step hook; ``bound`` keeps the lazy plans the cell names (immutable, bound once)."""

    def hook(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
        r = _Reader(w, bound)
        found: list[tuple[tuple[int, int], list[Finding]]] = []
        for node in w.evaluated(stmt):
            got = [f for f in _node_findings(w, r, node) if f.check_id == want]
            if got:
                end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
                found.append((end, got))
        if found:
            return min(found, key=lambda item: item[0])[1]  # the innermost call runs (and raises) first
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stores.get(stmt.targets[0].id) == 1
        ):
            frame = r.frame(stmt.value)
            if frame is not None and frame.lazy:  # a LazyFrame cannot change; eager frames can
                bound[stmt.targets[0].id] = frame
        return []

    return hook


def _node_findings(w: CellWalk, r: _Reader, node: ast.AST) -> list[Finding]:
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        frame = r.frame(node.value)
        if frame is None or frame.lazy or frame.grouped or frame.labels is None:
            return []
        misses = [
            m for m in r._literal_names(frame.lib, node.slice) if not _has(frame.lib, frame.labels, m.name)
        ]
        if misses and (isinstance(node.slice, (ast.Constant, ast.List))):
            return _finding(w, frame, node, misses[0], frame.labels, frame.text)
        return []
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return []
    method = node.func.attr
    frame = r.frame(node.func.value)
    if frame is None:
        return []
    if frame.lazy:
        if method == "collect" and frame.pending is not None:
            miss, labels = frame.pending
            return _finding(w, frame, node, miss, labels, frame.text)
        return []
    if frame.grouped:  # the grouping keys (and this call's expressions) resolve at an aggregation
        if method not in _AGGREGATIONS:
            return []
        group_call = node.func.value
        assert isinstance(group_call, ast.Call) and isinstance(group_call.func, ast.Attribute)
        base = r.frame(group_call.func.value)
        if base is None or base.labels is None:
            return []
        misses = r.misses(group_call, group_call.func.attr, base)
        if not misses and method == "agg":
            misses = r.misses(node, "agg", base)
        return _finding(w, base, node, misses[0], base.labels, base.text) if misses else []
    if method == _GROUPERS.get(frame.lib):
        return []  # raises at the aggregation that follows
    misses = r.misses(node, method, frame)
    if misses:
        return _finding(w, frame, node, misses[0], frame.labels or (), frame.text)
    if method in ("join", "merge"):
        other_missing, other = r.other_misses(node, frame)
        if other_missing and other is not None and other.labels is not None:
            return _finding(w, other, node, other_missing[0], other.labels, other.text)
    return []


def _factory(want: str) -> HookFactory:
    def make(facts: CellFacts, snapshot: Snapshot) -> CheckHook | None:
        if not any(s.kind in _LIB_OF_KIND for s in snapshot.variables.values()):
            return None
        tree = facts.tree()
        return _hook({}, _stores(tree), want) if tree is not None else None

    return make


#: A Polars, Dask or Spark frame asked for a column its schema does not have.
missing_frame_column = step_factory(CHECK_ID, needs_value=False)(_factory(CHECK_ID))
#: Arithmetic between a Polars String column and a number (``InvalidOperationError``).
frame_dtype = step_factory(DTYPE_ID, needs_value=False)(_factory(DTYPE_ID))
