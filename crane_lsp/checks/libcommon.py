"""Shared machinery of the library checks: walk a cell in execution order and know what each value is.

The library checks (pandas, arrays, sklearn, keras, plotting) all need the same two things: the
statements that CERTAINLY run, in order, and, for an expression in one of them, the value it has at that
point, as far as the kernel snapshot proves it. ``walk`` gives both. It is a tiny abstract interpreter:
a name is read from the snapshot until the cell (or code the analysis cannot follow, per
``facts.untrusted_from``) may have changed it; names the cell binds by simple assignment get the value
of their right-hand side when that is known (a new estimator, a ``.T`` of a known array), and become
unknown otherwise. Anything uncertain is ``None``, and checks stay silent on ``None``.

``for`` loops over known items (literal lists/tuples of int/str, ``range`` with known bounds, a kernel
list/tuple whose items the probe reported, ``df.columns`` of a frame with exact labels) are walked pass by
pass with the loop name bound to each item (see ``CellWalk._passes``); a finding in a pass names the item.
The probe omits list items in privacy mode, so loops over kernel lists are not walked there.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from crane_lsp.analysis.effects import MUTATING_LIB_FUNCS, PURE_BUILTINS, PURE_LIBRARIES
from crane_lsp.cellcode import UNTRUSTED_ALL, CellFacts, Span
from crane_lsp.checks.base import Finding
from crane_lsp.runtime import ObjectSummary, Snapshot, ValueStats

#: Passes of one ``for`` loop the walk follows, and loop-body statements it visits in all.
MAX_LOOP_PASSES = 50
MAX_LOOP_STEPS = 2000
#: What calls do (pure libraries and builtins, in-place library functions): the one effects table.
PURE_LIBS = PURE_LIBRARIES
#: Kinds of value whose methods only ever change the value itself, never their arguments.
LIB_KINDS = frozenset(
    {
        "ndarray",
        "tensor",
        "tf_tensor",
        "series",
        "dataframe",
        "index",
        "estimator",
        "keras_model",
        "torch_module",
        "list",
        "dict",
        "str",
        "set",
        "tuple",
        "categorical",
        "list_literal",
    }
)
_FRAME_METHODS = frozenset(
    {
        "head",
        "tail",
        "describe",
        "info",
        "copy",
        "groupby",
        "sort_values",
        "sort_index",
        "drop",
        "dropna",
        "fillna",
        "merge",
        "join",
        "astype",
        "value_counts",
        "unique",
        "nunique",
        "isna",
        "isnull",
        "notna",
        "notnull",
        "sum",
        "mean",
        "median",
        "max",
        "min",
        "std",
        "var",
        "count",
        "corr",
        "cov",
        "plot",
        "hist",
        "reset_index",
        "set_index",
        "rename",
        "replace",
        "to_numpy",
        "to_list",
        "tolist",
        "query",
        "filter",
        "select_dtypes",
        "sample",
        "agg",
        "aggregate",
        "pivot_table",
        "any",
        "all",
        "idxmax",
        "idxmin",
        "round",
        "abs",
        "clip",
        "equals",
        "memory_usage",
        "nlargest",
        "nsmallest",
        "melt",
        "assign",
        "duplicated",
        "drop_duplicates",
        "isin",
        "between",
        "to_csv",
        "to_dict",
        "to_frame",
        "get",
        "corrwith",
        "quantile",
        "cumsum",
        "diff",
        "shift",
        "rolling",
        "where",
        "mask",
        "transpose",
        "explode",
        "stack",
        "unstack",
        "pivot",
        "first_valid_index",
        "keys",
    }
)
_ARRAY_METHODS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "std",
        "var",
        "reshape",
        "astype",
        "copy",
        "flatten",
        "ravel",
        "transpose",
        "dot",
        "argmax",
        "argmin",
        "tolist",
        "item",
        "any",
        "all",
        "round",
        "clip",
        "squeeze",
        "cumsum",
        "prod",
        "nonzero",
    }
)
_TENSOR_METHODS = _ARRAY_METHODS | frozenset(
    {
        "view",
        "float",
        "double",
        "long",
        "int",
        "detach",
        "cpu",
        "numpy",
        "size",
        "dim",
        "cuda",
        "to",
        "clone",
        "unsqueeze",
        "permute",
        "softmax",
        "matmul",
        "mm",
        "numel",
        "contiguous",
        "type",
    }
)
#: Library methods whose result is always a NEW object (an aggregate or a copy, never a view), so a name
#: the cell binds to such a result is nobody else's: calling pure methods on it changes no kernel value.
_NEW_OBJECT_METHODS = frozenset(
    {
        "sum", "mean", "median", "min", "max", "count", "std", "var", "nunique", "value_counts",
        "describe", "agg", "aggregate", "size", "copy", "corr", "cov", "quantile", "prod", "cumsum",
        "round", "abs", "idxmax", "idxmin", "unique", "to_list", "tolist", "mode", "first", "last",
    }
)  # fmt: skip
#: Methods that leave their receiver unchanged (pandas ones only without ``inplace=True``).
PURE_METHODS: dict[str, frozenset[str]] = {
    "dataframe": _FRAME_METHODS,
    "series": _FRAME_METHODS,
    "derived": _FRAME_METHODS | _ARRAY_METHODS,  # a new object from ``_NEW_OBJECT_METHODS``
    "ndarray": _ARRAY_METHODS,
    "tensor": _TENSOR_METHODS,
    "estimator": frozenset(
        {
            "predict",
            "predict_proba",
            "predict_log_proba",
            "decision_function",
            "transform",
            "score",
            "get_params",
            "get_feature_names_out",
            "inverse_transform",
        }
    ),
}
_CHAIN_METHODS = (
    _FRAME_METHODS
    | _TENSOR_METHODS
    | frozenset(
        {
            "bar",
            "barh",
            "line",
            "box",
            "kde",
            "pie",
            "area",
            "scatter",
            "upper",
            "lower",
            "strip",
            "contains",
            "startswith",
            "endswith",
            "split",
            "len",
            "size",
            "get_group",
            "get_feature_names_out",
        }
    )
)
#: Values that no change through another reference can affect.
_IMMUTABLE_KINDS = frozenset({"int", "str", "module", "module_attr"})


@dataclass(frozen=True)
class Est:
    """What is known about a scikit-learn estimator: its class and (when fitted) what it was fitted on."""

    cls: str  # class name, e.g. "StandardScaler"
    module: str  # defining module, e.g. "sklearn.preprocessing._data"
    fitted: bool | None
    n_features: int | None = None
    feature_names: tuple[str, ...] | None = None
    params: dict[str, Any] = field(default_factory=dict)  # literal constructor arguments (cell-built only)
    from_kernel: bool = False


@dataclass(frozen=True)
class Val:
    """A value as far as it is PROVEN; ``None`` fields mean unknown."""

    kind: str  # runtime ObjectKind, or "categorical" / "new_estimator" / "list_literal" / "class"
    text: str  # the expression it came from, for messages
    shape: tuple[int | None, ...] | None = None
    dtype: str | None = None
    labels: tuple[Any, ...] | None = None  # DataFrame: every column label, exactly (None: not all known)
    index_names: tuple[Any, ...] | None = None
    summary: ObjectSummary | None = None
    est: Est | None = None
    length: int | None = None
    stats: ValueStats | None = None  # a Series/column's value statistics
    # the exact value: kind "int"/"str" (a literal, a loop variable on one pass), "list_literal" (its items),
    # "index"/"ndarray" from ``df.columns(.values)`` (the labels)
    value: Any = None
    fresh: bool = False  # a new object the cell built from literals only: no one else can hold it
    qualname: str | None = None  # classes and functions: "sklearn.linear_model.LogisticRegression"
    variables: tuple[str, ...] = ()  # kernel variables it derives from (for origins)

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def full_shape(self) -> tuple[int, ...] | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return tuple(d for d in self.shape if d is not None)


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


def literal(node: ast.AST | None) -> tuple[bool, Any]:
    """``(True, value)`` for a literal expression (incl. negative numbers, lists, tuples)."""
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def has_star(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)


def dotted(node: ast.AST) -> str | None:
    """``np.linalg.norm`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _shape(s: list[int | None] | None) -> tuple[int | None, ...] | None:
    return None if s is None else tuple(s)


def _json_label(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and math.isnan(v))


def exact_labels(s: ObjectSummary) -> tuple[Any, ...] | None:
    """Every column label of a DataFrame summary, exactly, or None when the probe did not list them all."""
    if s.columns is None or s.columns_truncated:
        return None
    n = s.n_columns if s.n_columns is not None else (s.shape[1] if s.shape and len(s.shape) == 2 else None)
    if n is None or n != len(s.columns):
        return None
    out: list[Any] = []
    for c in s.columns:
        if c.label_repr is None:
            out.append(c.name)
            continue
        ok, v = literal(parse_expr(c.label_repr))
        if not ok or not _json_label(v):
            return None  # a tuple (MultiIndex), a numpy scalar repr, a Timestamp: not provable here
        out.append(v)
    return tuple(out)


def parse_expr(text: str) -> ast.AST | None:
    """The expression a kernel repr spells (``'a'``, ``3``), or None when it does not parse."""
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


def val_from_summary(text: str, s: ObjectSummary, variables: tuple[str, ...]) -> Val | None:
    if s.kind == "error":
        return None
    kind: str = s.kind
    if kind == "ndarray" and s.type != "numpy.ndarray":
        kind = "ndarray_subclass"  # np.matrix multiplies with *, masked arrays mask: other rules
    elif kind == "tensor" and s.type not in ("torch.Tensor", "torch.nn.parameter.Parameter"):
        kind = "tensor_subclass"
    labels = exact_labels(s) if s.kind == "dataframe" else None
    idx_names = getattr(s, "index_names", None)
    est: Est | None = None
    if s.kind == "estimator" and s.estimator is not None:
        e = s.estimator
        module, _, cls = s.type.rpartition(".")
        est = Est(
            cls=cls,
            module=module,
            fitted=e.fitted,
            n_features=e.n_features_in,
            feature_names=tuple(e.feature_names_in) if e.feature_names_in is not None else None,
            from_kernel=True,
        )
    qualname = None
    if s.kind in ("class", "function"):
        qualname = _qualname_of(s)
    return Val(
        kind=kind,
        text=text,
        shape=_shape(s.shape),
        dtype=s.dtype,
        labels=labels,
        stats=s.stats,
        index_names=tuple(idx_names) if idx_names is not None else None,
        summary=s,
        est=est,
        length=s.length,
        qualname=qualname,
        variables=variables,
    )


def _qualname_of(s: ObjectSummary) -> str | None:
    r = s.repr or ""
    if r.startswith("<class ") and r.endswith(">"):
        return r[len("<class ") : -1].strip("'\"")
    name = getattr(s, "qualname", None)
    if s.module and name:
        return f"{s.module}.{name}"
    return None


_RESET = object()  # a log entry: the whole env was replaced by the copy that follows


class _Env(dict[str, "Val | None"]):
    """The walk's name -> value map, logging every write so that a recorded walk can rebuild the map at
    each statement from the changes since the previous one (linear), instead of copying it (quadratic)."""

    def __init__(self, log: list[tuple[Any, Any]], items: dict[str, Val | None] | None = None) -> None:
        super().__init__(items or {})
        self.log = log
        log.append((_RESET, dict(self)))

    def __setitem__(self, key: str, value: Val | None) -> None:
        super().__setitem__(key, value)
        self.log.append((key, value))

    def update(self, other: Any = (), **kw: Any) -> None:  # type: ignore[override]
        for key, value in dict(other, **kw).items():
            self[key] = value


@dataclass
class Step:
    """One statement that certainly runs, with the interpreter state right before it."""

    stmt: ast.stmt
    index: int


class CellWalk:
    """Walk a cell's certainly-executed statements; evaluate expressions against the snapshot."""

    def __init__(self, facts: CellFacts, snapshot: Snapshot) -> None:
        self.facts = facts
        self.snapshot = snapshot
        self.lines = facts.python.splitlines()
        try:
            self.tree: ast.Module | None = ast.parse(facts.python)
        except (SyntaxError, ValueError):
            self.tree = None
        self.log: list[tuple[Any, Any]] = []  # every write to ``env``, in order (see ``_Env``)
        self.env: dict[str, Val | None] = _Env(self.log)  # names the cell has bound so far (None: unknown)
        self._since_opaque: set[str] = set()  # names bound since the walk last went opaque
        self.line = 0  # 0-based line of the statement being looked at
        self._stmt: ast.stmt | None = None
        self._ver = 0  # bumped whenever ``env`` or ``opaque`` changes: part of the ``ev`` memo key
        self._memo: dict[tuple[int, int, int, int, bool, bool], Val | None] = {}
        self._texts: dict[int, str] = {}
        self._evaluated: dict[int, list[ast.AST]] = {}
        self._nodes: dict[int, list[ast.AST]] = {}
        # set once the cell changed an object that other kernel names may share (``d['x'] = 1`` for a ``d``
        # from a kernel list, a user function call): from then on no kernel value is trusted
        self.opaque = False
        self._shared_line = False  # another statement ends on the line this one starts on
        self._guard = False
        # names a loop body may have changed on an earlier pass: on later passes their kernel value is stale
        self._dirty: frozenset[str] = frozenset()
        self.loop_note = ""  # "loop item 3 of 3: col = 'Cabin'" while walking a pass of a loop
        self._pass_budget = MAX_LOOP_STEPS  # loop-body statements the walk may still visit

    # ---- resolving names and expressions ------------------------------------------------------
    def trusted(self, name: str) -> bool:
        """The kernel's value of ``name`` still holds at the current statement.

        ``untrusted_from`` marks the line where a name is first rebound or may be changed. Whatever the
        statement on that very line does to the name happens while or after it is used, so the old value
        still holds there, unless the statement uses the name twice with a change in between possible
        (passed to code that may mutate it, or the receiver of a method plus another use), or another
        statement shares the line.
        """
        if name in self._dirty:
            return False
        first = self.facts.untrusted_from.get(name)
        if first is None or first > self.line:
            return True
        stmt = self._stmt
        if first < self.line or stmt is None or self._shared_line or self._guard:
            return False
        # the root of an assignment target (``df`` in ``df['a'] = f(df)``) is read after the right side
        # has run: it is not a use the right side could see changed
        target_roots = {id(_target_root(t)) for t in (stmt.targets if isinstance(stmt, ast.Assign) else ())}
        uses = [
            n
            for n in self.nodes(stmt)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and id(n) not in target_roots
        ]
        self._guard = True  # evaluating callees below must not come back here
        try:
            receiver = False
            for n in self.nodes(stmt):
                if isinstance(n, ast.Call):
                    if name in self._call_changes(n, receivers=False):
                        return False
                    if isinstance(n.func, ast.Attribute) and root_name(n.func.value) == name:
                        receiver = True
        finally:
            self._guard = False
        return not (receiver and len(uses) > 1)

    def name(self, name: str) -> Val | None:
        if name in self.env:
            return self.env[name]
        if self.opaque or not self.trusted(name):
            return None
        s = self.snapshot.variables.get(name)
        if s is None:
            return None
        v = val_from_summary(name, s, (name,))
        if v is not None and v.kind == "module":
            return replace(v, qualname=s.module or s.value)
        if v is not None and v.kind in ("class", "function") and v.qualname is None and s.module:
            return replace(v, qualname=f"{s.module}.{name}")
        return v

    def module_of(self, node: ast.AST) -> str | None:
        """The module a name/chain refers to (``np`` -> ``numpy``), when the kernel proves it."""
        v = self.ev(node)
        # "module_attr": an attribute of a module not summarised on its own, e.g. ``np.random``
        return v.qualname if v is not None and v.kind in ("module", "module_attr") else None

    def lib_func(self, func: ast.AST) -> tuple[str, str] | None:
        """``(module, name)`` for a call target like ``np.dot`` / ``plt.imshow``, when proven."""
        if isinstance(func, ast.Attribute):
            mod = self.module_of(func.value)
            if mod:
                return mod, func.attr
        v = self.ev(func)
        if v is not None and v.kind == "module_attr" and v.qualname:
            mod, _, nm = v.qualname.rpartition(".")
            return mod, nm
        if v is not None and v.kind in ("function", "class", "other") and v.summary is not None:
            q = v.qualname or (
                f"{v.summary.module}.{func.id}" if isinstance(func, ast.Name) and v.summary.module else None
            )
            if q:
                mod, _, nm = q.rpartition(".")
                return mod, nm
        return None

    def const(self, node: ast.AST | None) -> tuple[bool, Any]:
        """A literal, or a name the walk knows the exact value of (``i`` on a loop's first pass), or
        ``i + 1`` of those."""
        ok, value = literal(node)
        if ok or node is None:
            return ok, value
        if isinstance(node, ast.Name) and node.id in self.env:
            v = self.env[node.id]
            if v is not None and v.kind in ("int", "str") and type(v.value) in (int, str):
                return True, v.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            (ok_l, left), (ok_r, right) = self.const(node.left), self.const(node.right)
            if ok_l and ok_r and type(left) is int and type(right) is int:
                return True, (
                    left + right
                    if isinstance(node.op, ast.Add)
                    else left - right
                    if isinstance(node.op, ast.Sub)
                    else left * right
                )
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.const(e) for e in node.elts]
            if all(ok for ok, _ in items):
                values = [v for _, v in items]
                return True, values if isinstance(node, ast.List) else tuple(values)
        return False, None

    def ev(self, node: ast.AST) -> Val | None:
        key = (id(node), self._ver, self.line, id(self._stmt), self.opaque, self._guard)
        if key in self._memo:
            return self._memo[key]
        try:
            value = self._ev(node)
        except (RecursionError, ValueError, TypeError, IndexError, OverflowError):
            value = None
        self._memo[key] = value
        return value

    def text(self, node: ast.AST) -> str:
        got = self._texts.get(id(node))
        if got is None:
            got = self._texts[id(node)] = ast.unparse(node) if isinstance(node, ast.expr) else ""
        return got

    def _ev(self, node: ast.AST) -> Val | None:
        text = self.text(node)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        root = root_name(node)
        if root is not None and root not in self.env and not self.trusted(root):
            return None
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value)
            if base is None:
                return None
            if node.attr == "T" and base.kind in ("ndarray", "tensor") and base.shape is not None:
                return replace(base, text=text, shape=tuple(reversed(base.shape)), summary=None)
            if node.attr == "values" and base.kind in ("dataframe", "series"):
                return Val(kind="ndarray", text=text, shape=base.shape, variables=base.variables)
            # ``df.columns`` / ``df.columns.values``: the labels, exactly, when the frame's are known
            labels = (
                base.labels
                if node.attr == "columns" and base.kind == "dataframe"
                else base.value
                if node.attr == "values" and base.kind == "index" and isinstance(base.value, tuple)
                else None
            )
            known = self.snapshot.variables.get(text) if root is not None and root not in self.env else None
            if labels is not None and known is not None:
                v = val_from_summary(text, known, base.variables)
                if v is not None and v.length == len(labels):
                    return replace(v, value=tuple(labels))
            if labels is not None:
                return Val(
                    kind="index" if node.attr == "columns" else "ndarray",
                    text=text,
                    shape=(len(labels),),
                    length=len(labels),
                    value=tuple(labels),
                    variables=base.variables,
                )
            if root is not None and root not in self.env:
                s = self.snapshot.variables.get(text)
                if s is not None:
                    v = val_from_summary(text, s, base.variables)
                    if (
                        v is not None
                        and v.kind in ("class", "function")
                        and v.qualname is None
                        and base.qualname
                    ):
                        v = replace(v, qualname=f"{base.qualname}.{node.attr}")
                    return v
            if base.kind == "module" and base.qualname:
                return Val(kind="module_attr", text=text, qualname=f"{base.qualname}.{node.attr}")
            return None
        if isinstance(node, ast.Subscript):
            return self._ev_subscript(node, text)
        if isinstance(node, ast.Call):
            return self._ev_call(node, text)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE))
        ):
            left, (right,) = self.ev(node.left), node.comparators
            ok, value = literal(right)
            if (
                left is not None
                and left.kind in ("series", "ndarray")
                and ok
                and isinstance(value, (int, float, str))
            ):
                return Val(
                    kind=left.kind, text=text, shape=left.shape, dtype="bool", variables=left.variables
                )
            return None
        if isinstance(node, ast.Constant) and type(node.value) in (int, str):
            return Val(kind=type(node.value).__name__, text=text, value=node.value)
        if isinstance(node, (ast.List, ast.Tuple)):
            ok, value = literal(node)
            if ok:
                return Val(
                    kind="list_literal", text=text, length=len(value), summary=None, fresh=True, value=value
                )
        return None

    def _ev_subscript(self, node: ast.Subscript, text: str) -> Val | None:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "loc":
            frame = self.ev(node.value.value)
            return self._row_mask(frame, node.slice, text) if frame is not None else None
        base = self.ev(node.value)
        if base is None:
            return None
        if base.kind == "dataframe" and not isinstance(node.slice, (ast.Constant, ast.List, ast.Tuple)):
            got = self._row_mask(base, node.slice, text)
            if got is not None:
                return got
        ok, key = self.const(node.slice)
        if base.kind in ("dataframe", "series") and isinstance(node.slice, ast.Slice):
            return self._row_slice(base, node.slice, text)
        if base.kind == "dataframe" and ok and isinstance(key, list):
            return self._columns(base, key, text)
        if base.kind == "dataframe" and not ok:  # ``df[cols]`` with a kernel list of column names
            keys = self.ev(node.slice)
            values = keys.summary.values if keys is not None and keys.summary is not None else None
            if keys is not None and keys.kind == "list" and values is not None and keys.length == len(values):
                return self._columns(base, list(values), text)
        if base.kind == "dataframe" and ok and isinstance(key, str):
            root = root_name(node)
            s = self.snapshot.variables.get(text) if root is not None and root not in self.env else None
            if s is not None:
                return val_from_summary(text, s, base.variables)
            if base.labels is not None and key in base.labels and base.shape and base.labels.count(key) == 1:
                col = None
                if base.summary and base.summary.columns:
                    col = next((c for c in base.summary.columns if c.name == key), None)
                return Val(
                    kind="series",
                    text=text,
                    shape=(base.shape[0],),
                    dtype=col.dtype if col else None,
                    stats=col.stats if col else None,
                    variables=base.variables,
                )
            return None
        if base.kind == "ndarray" and base.shape is not None:
            new = _index_shape(base.shape, node.slice, self.const)
            if new is not None:
                return Val(kind="ndarray", text=text, shape=new, dtype=base.dtype, variables=base.variables)
        return None

    def _columns(self, frame: Val, keys: list[Any], text: str) -> Val | None:
        """``df[['a', 'b']]``: a frame of exactly those columns, when each names one existing column."""
        labels = frame.labels
        if labels is None or frame.shape is None or len(set(map(repr, keys))) != len(keys):
            return None
        if not all(isinstance(k, str) and labels.count(k) == 1 for k in keys):
            return None
        return Val(
            kind="dataframe",
            text=text,
            shape=(frame.shape[0], len(keys)),
            labels=tuple(keys),
            variables=frame.variables,
        )

    def _row_slice(self, base: Val, sl: ast.Slice, text: str) -> Val | None:
        """``df[:50]`` / ``y[:-10]``: rows by position (int bounds; not on a float index: labels there)."""
        s = base.summary
        if (
            s is None
            or base.shape is None
            or not base.shape
            or (s.index_dtype or "float").startswith("float")
        ):
            return None
        rows = _slice_len(base.shape[0], sl, self.const)
        if rows is None:
            return None
        return replace(base, text=text, shape=(rows, *base.shape[1:]), summary=None, stats=None, length=rows)

    def _row_mask(self, frame: Val, mask: ast.expr, text: str) -> Val | None:
        """``df[mask]`` / ``df.loc[mask]`` with a boolean Series: the same columns, fewer rows (what is known
        of the columns' values no longer holds for the subset)."""
        m = self.ev(mask)
        if (
            frame.kind != "dataframe"
            or frame.labels is None
            or m is None
            or m.kind != "series"
            or m.dtype != "bool"
            or frame.summary is None
            or frame.summary.type not in ("pandas.core.frame.DataFrame", "pandas.DataFrame")  # pandas 2, 3
        ):
            return None
        return Val(
            kind="dataframe",
            text=text,
            shape=(None, len(frame.labels)),
            labels=frame.labels,
            variables=frame.variables,
        )

    def _ev_call(self, node: ast.Call, text: str) -> Val | None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "split"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
            and not has_star(node)
        ):
            args = [self.const(a) for a in node.args]
            if all(ok for ok, _ in args) and not node.keywords:
                try:
                    parts = func.value.value.split(*[v for _, v in args])
                except (TypeError, ValueError):
                    return None
                return Val(kind="list_literal", text=text, length=len(parts), fresh=True)
        if isinstance(func, ast.Attribute):
            base = self.ev(func.value)
            same_shape = ("astype", "copy") if base is not None and base.kind == "ndarray" else _SAME_SHAPE
            if (
                base is not None
                and base.kind in ("ndarray", "tensor")
                and base.shape is not None
                and (func.attr in same_shape)
            ):
                return replace(base, text=text, summary=None)
            if base is not None and base.kind == "dataframe" and func.attr == "copy" and not node.args:
                return replace(base, text=text)
            if base is not None and base.kind in ("dataframe", "series") and not has_star(node):
                if func.attr == "to_numpy" and not node.args and not node.keywords:
                    return Val(kind="ndarray", text=text, shape=base.shape, variables=base.variables)
                if func.attr == "head" and len(node.args) <= 1 and not node.keywords and base.shape:
                    ok, n = self.const(node.args[0]) if node.args else (True, 5)
                    rows = base.shape[0]
                    if ok and type(n) is int and n >= 0 and rows is not None:
                        return replace(
                            base,
                            text=text,
                            shape=(min(n, rows), *base.shape[1:]),
                            summary=None,
                            stats=None,
                            length=min(n, rows),
                        )
        target = self.ev(func)
        if target is not None and target.kind in ("class", "module_attr") and target.qualname:
            module, _, cls = target.qualname.rpartition(".")
            if module.startswith("sklearn.") and cls[:1].isupper() and not has_star(node):
                params = {}
                for kw in node.keywords:
                    lit_ok, v = literal(kw.value)
                    params[kw.arg or ""] = v if lit_ok else _Unknown
                return Val(
                    fresh=not node.args and all(p is not _Unknown for p in params.values()),
                    kind="estimator",
                    text=text,
                    est=Est(cls=cls, module=module, fitted=False, params=params),
                    variables=(),
                )
            if target.qualname.endswith("Categorical") and module.startswith("pandas"):
                return Val(kind="categorical", text=text)
        return None

    # ---- walking -------------------------------------------------------------------------------
    def steps(self) -> Iterator[ast.stmt]:
        """Statements that certainly run, in order; the walk updates ``env`` after each is yielded."""
        if self.tree is None:
            return
        yield from self._block(self.tree.body)

    def _block(self, body: list[ast.stmt]) -> Iterator[ast.stmt]:
        prev_end = -1
        for stmt in body:
            self.line = stmt.lineno - 1
            self._stmt = stmt
            self._shared_line = prev_end == stmt.lineno
            prev_end = stmt.end_lineno or stmt.lineno
            yield stmt
            if isinstance(stmt, ast.With):
                yield from self._block(stmt.body)
            elif isinstance(stmt, ast.For):
                yield from self._passes(stmt)
            self._line_of(stmt)
            self._after(stmt)

    def _line_of(self, stmt: ast.stmt) -> None:
        self.line, self._stmt, self._shared_line = stmt.lineno - 1, stmt, False

    def _passes(self, loop: ast.For) -> Iterator[ast.stmt]:
        """The passes of a ``for`` loop over KNOWN items (a literal list/tuple of int/str, a ``range`` with
        known bounds, a kernel list/tuple whose exact int/str values the probe reported), binding the target
        name to each item in turn, up to ``MAX_LOOP_PASSES``.

        Every pass runs its whole body only when nothing in it can leave early (break/continue/return/raise/
        try/yield); otherwise only the first pass is walked, up to the first statement that could leave.
        From the second pass on, kernel values of names the body may change are stale (``_dirty``); values
        the cell binds follow the walk's own tracking. A pass after which the walk went opaque (a kernel
        object may have changed) ends the walk of the loop: the items of a kernel list may have changed too.
        """
        if loop.orelse or not isinstance(loop.target, ast.Name):
            return
        got = self._loop_items(loop.iter)
        if got is None:
            return
        items, from_kernel, n = got
        target = loop.target.id
        body = loop.body
        if _leaves_early(body):
            body = list(itertools.takewhile(lambda st: not _leaves_early([st]), body))
            items = items[:1]
        if not body:
            return
        start, end = loop.lineno - 1, (loop.end_lineno or loop.lineno) - 1
        changed = frozenset(name for name, ln in self.facts.untrusted_from.items() if start <= ln <= end)
        saved, saved_dirty, saved_note = dict(self.env), self._dirty, self.loop_note
        for k, item in enumerate(items[:MAX_LOOP_PASSES]):
            if k > 0 and (
                UNTRUSTED_ALL in changed or (from_kernel and self.opaque) or self._pass_budget < len(body)
            ):
                break
            self._pass_budget -= len(body)
            if k > 0:
                self._dirty = saved_dirty | changed
            note = f"loop item {k + 1} of {n}: {target} = {item!r}"
            self.loop_note = f"{saved_note}; {note}" if saved_note else note
            self.env[target] = Val(kind=type(item).__name__, text=repr(item), value=item)
            self._ver += 1
            yield from self._block(body)
        self.env, self._dirty, self.loop_note = _Env(self.log, saved), saved_dirty, saved_note
        self._since_opaque.update(saved)
        self._ver += 1  # what the loop left is unknown; ``_after`` on the loop marks it all changed
        if self.opaque:
            self._go_opaque()

    def _loop_items(self, node: ast.expr) -> tuple[list[int | str], bool, int] | None:
        """The exact items a ``for`` loop over ``node`` takes (int/str only; the first ``MAX_LOOP_PASSES``),
        whether they come from a kernel object, and how many there are; None when not proven."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            if "range" in self.env or not self.trusted("range") or "range" in self.snapshot.variables:
                return None
            if node.keywords:
                return None
            got = [self.const(a) for a in node.args]
            if not got or len(got) > 3 or not all(ok and type(v) is int for ok, v in got):
                return None
            try:
                r = range(*[v for _, v in got])
            except ValueError:
                return None
            return (list(r[:MAX_LOOP_PASSES]), False, len(r)) if len(r) else None
        ok, value = self.const(node)
        if not ok:
            v = self.ev(node)
            if v is None:
                return None
            if v.kind == "list_literal" and isinstance(v.value, (list, tuple)):
                value = v.value
            elif v.kind in ("index", "ndarray") and isinstance(v.value, tuple):  # ``df.columns``
                items = [x for x in v.value if type(x) in (int, str)]
                return (items, True, len(items)) if items and len(items) == len(v.value) else None
            elif v.kind in ("list", "tuple") and v.summary is not None and v.summary.values is not None:
                if v.summary.length != len(v.summary.values):
                    return None
                items = [x for x in v.summary.values if type(x) in (int, str)]
                if items and len(items) == len(v.summary.values):
                    return [x for x in items if not isinstance(x, float)], True, len(items)
                return None
            else:
                return None
        if isinstance(value, (list, tuple)) and value and all(type(x) in (int, str) for x in value):
            return list(value), False, len(value)
        return None

    def _go_opaque(self) -> None:
        """Stop trusting kernel objects; values the cell derived from them may share them too, so only
        its own fresh values survive."""
        keys = self._since_opaque if self.opaque else list(self.env)
        self.opaque = True
        for k in keys:
            v = self.env.get(k)
            if v is not None and not (v.fresh or v.kind in _IMMUTABLE_KINDS):
                self.env[k] = None
        self._since_opaque = set()
        self._ver += 1

    def _after(self, stmt: ast.stmt) -> None:
        """Update ``env`` for what ``stmt`` bound or may have changed."""
        start = len(self.log)
        self._after_inner(stmt)
        self._since_opaque.update(k for k, _ in self.log[start:] if k is not _RESET)
        self._ver += 1

    def _after_inner(self, stmt: ast.stmt) -> None:
        if self.opaque or self._mutates(stmt):
            self._go_opaque()

        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.env[alias.asname] = Val(kind="module", text=alias.asname, qualname=alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.env[top] = Val(kind="module", text=top, qualname=top)
            return
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for alias in stmt.names:
                qual = f"{stmt.module}.{alias.name}"
                kind = "module_attr" if stmt.module.split(".")[0] in PURE_LIBS else ""
                self.env[alias.asname or alias.name] = (
                    Val(kind=kind, text=alias.name, qualname=qual) if kind else None
                )
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            value = self.ev(stmt.value)
            self._changes(stmt, skip_targets=True)
            if value is not None:
                self.env[name] = replace(value, text=name)
            elif self._new_object(stmt.value):
                self.env[name] = Val(kind="derived", text=name)  # value unknown, but nobody else holds it
            else:
                self.env[name] = None
            return
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            ok, value = self.const(ast.BinOp(left=stmt.target, op=stmt.op, right=stmt.value))
            if ok and type(value) is int and isinstance(stmt.op, (ast.Add, ast.Sub, ast.Mult)):
                self.env[stmt.target.id] = Val(kind="int", text=stmt.target.id, value=value)  # ``i += 1``
                return
        self._changes(stmt, skip_targets=False)

    def _new_object(self, node: ast.expr) -> bool:
        """``df.groupby("a")["b"].sum()``: a pure library chain ending in a method making a new object."""
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _NEW_OBJECT_METHODS
            and self._pure_chain(node)
        )

    def _fresh(self, name: str | None) -> bool:
        v = self.env.get(name) if name is not None else None
        return v is not None and (v.fresh or v.kind in _IMMUTABLE_KINDS)

    def _mutates(self, stmt: ast.stmt) -> bool:
        """Could ``stmt`` change an object that is not the cell's own fresh value? (Rebinding names is not a
        change of objects; calls into the libraries, pure methods and fresh objects are safe.)"""
        for node in _walk_executable(stmt):
            if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(
                node.ctx, (ast.Store, ast.Del)
            ):
                if not self._fresh(root_name(node)):
                    return True
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if not self._fresh(node.target.id):
                    return True
            elif isinstance(node, ast.Call) and not self._safe_call(node):
                return True
        return False

    def _pure_chain(self, call: ast.Call) -> bool:
        """``df['a'].value_counts().plot()``: pure methods all the way down to a library value."""
        node: ast.AST = call
        while True:
            if isinstance(node, ast.Call):
                func = node.func
                if not isinstance(func, ast.Attribute) or func.attr not in _CHAIN_METHODS:
                    return False
                inplace = next((kw.value for kw in node.keywords if kw.arg == "inplace"), None)
                if inplace is not None and not (isinstance(inplace, ast.Constant) and inplace.value is False):
                    return False
                node = func.value
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            elif isinstance(node, ast.Name):
                v = self.ev(node)
                return v is not None and v.kind in LIB_KINDS
            else:
                return False

    def _safe_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute):
            if self.module_of(func.value) is not None:
                lib = self.lib_func(func)
                return (
                    lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
                )
            if self._pure_method(call) or (isinstance(func.value, ast.Name) and self._fresh(func.value.id)):
                return True
            if self._pure_chain(call):
                return True
            if isinstance(func.value, ast.Constant):
                return True  # "a b".split(), "{}".format(...)
            receiver = self.ev(func.value)
            return bool(receiver and receiver.summary and receiver.summary.type.startswith("matplotlib."))
        if isinstance(func, ast.Name):
            if func.id in PURE_BUILTINS and func.id not in self.env and self.trusted(func.id):
                return (
                    func.id not in self.snapshot.variables
                    or self.snapshot.variables[func.id].kind == "function"
                )
            lib = self.lib_func(func)
            return lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
        return False

    def _changes(self, stmt: ast.stmt, skip_targets: bool) -> None:
        changed: set[str] = set()
        for node in self.nodes(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                changed.add(node.id)
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
                node.ctx, (ast.Store, ast.Del)
            ):
                r = root_name(node)
                if r:
                    changed.add(r)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                changed.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    changed.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                changed.update(node.names)
            elif isinstance(node, ast.Call):
                changed.update(self._call_changes(node))
        # a value the cell holds that escapes (passed on, stored, aliased) may be changed through the other
        # reference later (``pipe = make_pipeline(model); pipe.fit(...)`` fits ``model``): forget it
        receivers = {
            id(n.func.value)
            for n in self.nodes(stmt)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
        }
        # a frame a column is read from (``t0[c].sum()``) does not escape: anything done to the column that
        # could write back into the frame makes the walk opaque
        receivers |= {
            id(n.value)
            for n in self.nodes(stmt)
            if isinstance(n, ast.Subscript)
            and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name)
            and (v := self.env.get(n.value.id)) is not None
            and v.kind == "dataframe"
        }
        for n in self.nodes(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in receivers:
                v = self.env.get(n.id)
                if v is not None and v.kind not in _IMMUTABLE_KINDS:
                    changed.add(n.id)
        if skip_targets and isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                changed.discard(target.id)
        updates = {n: self._fitted_update(n, stmt) for n in changed}  # all against the state before stmt
        self.env.update(updates)

    def _call_changes(self, call: ast.Call, receivers: bool = True) -> set[str]:
        out: set[str] = set()
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and receivers
            and self.module_of(func.value) is None
            and not self._pure_method(call)
            and not self._pure_chain(call)
        ):
            r = root_name(func.value)
            if r:
                out.add(r)  # a method may change its receiver (inplace=True, fit, append, ...)
        lib = self.lib_func(func) if not isinstance(func, ast.Lambda) else None
        pure_lib = lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
        builtin = isinstance(func, ast.Name) and func.id in PURE_BUILTINS and func.id not in self.env
        receiver = self.ev(func.value) if isinstance(func, ast.Attribute) else None
        lib_method = receiver is not None and receiver.kind in LIB_KINDS
        callee = self.ev(func) if isinstance(func, ast.Name) else None
        if callee is not None and callee.kind == "torch_module" and first_layer_linear(callee.summary):
            return out  # nn.Linear (or a Sequential starting with one) never writes to its input
        pure = (
            pure_lib
            or lib_method
            or (builtin and self.trusted(func.id) if isinstance(func, ast.Name) else False)
        )
        if not pure:
            for a in [*call.args, *(kw.value for kw in call.keywords)]:
                for sub in ast.walk(a):
                    if isinstance(sub, ast.Name):
                        out.add(sub.id)
        return out

    def _pure_method(self, call: ast.Call) -> bool:
        """``x.method(...)`` that leaves ``x`` as it was (``df.head()``, ``est.predict(X)``)."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return False
        v = self.ev(func.value)
        if v is None or func.attr not in PURE_METHODS.get(v.kind, ()):
            return False
        inplace = next((kw.value for kw in call.keywords if kw.arg == "inplace"), None)
        return inplace is None or (isinstance(inplace, ast.Constant) and inplace.value is False)

    def _fitted_update(self, name: str, stmt: ast.stmt) -> Val | None:
        """``est.fit(X)`` / ``est.fit_transform(X)`` on a cell-built estimator: remember what it saw."""
        current = self.env.get(name) if name in self.env else None
        if current is None or current.est is None or current.est.from_kernel or not _simple(stmt):
            return None
        for node in self.nodes(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
            ):
                if (
                    node.func.attr in ("fit", "fit_transform", "fit_predict")
                    and node.args
                    and not has_star(node)
                ):
                    x = self.ev(node.args[0])
                    if x is None or x.shape is None or len(x.shape) != 2:
                        return None
                    names = (
                        tuple(x.labels)
                        if x.labels is not None
                        and all(isinstance(v, str) for v in x.labels)
                        and x.kind == "dataframe"
                        else None
                    )
                    return replace(
                        current,
                        est=replace(current.est, fitted=True, n_features=x.shape[1], feature_names=names),
                    )
                return None
        return None

    # ---- expressions a statement certainly evaluates --------------------------------------------
    def nodes(self, stmt: ast.stmt) -> list[ast.AST]:
        """``ast.walk(stmt)``, listed once per statement (the walk looks at each statement many times)."""
        got = self._nodes.get(id(stmt))
        if got is None:
            got = self._nodes[id(stmt)] = list(ast.walk(stmt))
        return got

    def evaluated(self, stmt: ast.stmt) -> list[ast.AST]:
        """Sub-expressions of ``stmt`` that run whenever ``stmt`` runs (no lambdas, branches, loops);
        computed once per statement, shared by every check."""
        got = self._evaluated.get(id(stmt))
        if got is None:
            got = self._evaluated[id(stmt)] = list(self._evaluated_nodes(stmt))
        return got

    def _evaluated_nodes(self, stmt: ast.stmt) -> Iterator[ast.AST]:
        roots: list[ast.AST]
        if isinstance(stmt, (ast.If, ast.While)):
            roots = [stmt.test]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            roots = [stmt.iter]
        elif isinstance(stmt, ast.With):
            roots = [item.context_expr for item in stmt.items]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.Match)):
            roots = []
        elif isinstance(stmt, ast.Assert):
            roots = [stmt.test]
        else:
            roots = [stmt]
        for r in roots:
            yield from _certain_nodes(r)


def _walk_executable(stmt: ast.stmt) -> Iterator[ast.AST]:
    """``ast.walk`` without the bodies of functions and classes the statement only defines."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not stmt:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(node.decorator_list)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _target_root(target: ast.expr) -> ast.AST | None:
    """The Name a subscript/attribute assignment target hangs off (``df`` in ``df.loc['a', 'b']``)."""
    node: ast.AST = target
    if not isinstance(node, (ast.Subscript, ast.Attribute)):
        return None
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _simple(stmt: ast.stmt) -> bool:
    return not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try, ast.Match))


def _leaves_early(body: list[ast.stmt]) -> bool:
    """Could a pass through ``body`` stop before its end (break/continue/return/raise/try/yield)?"""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(
                node,
                (
                    ast.Break,
                    ast.Continue,
                    ast.Return,
                    ast.Raise,
                    ast.Try,
                    ast.Yield,
                    ast.YieldFrom,
                    ast.Await,
                ),
            ):
                return True
    return False


def _certain_nodes(node: ast.AST) -> Iterator[ast.AST]:
    yield node
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return
    if isinstance(node, ast.IfExp):
        yield from _certain_nodes(node.test)
        return
    if isinstance(node, ast.BoolOp):
        yield from _certain_nodes(node.values[0])
        return
    for child in ast.iter_child_nodes(node):
        yield from _certain_nodes(child)


def first_layer_linear(s: ObjectSummary | None) -> bool:
    """A torch module that is an ``nn.Linear`` or a Sequential whose first layer is one."""
    if s is None or s.nn is None:
        return False
    if s.type == "torch.nn.modules.linear.Linear":
        return True
    layers = s.nn.layers or []
    return (
        s.type == "torch.nn.modules.container.Sequential" and bool(layers) and layers[0].startswith("Linear(")
    )


_SAME_SHAPE = ("astype", "copy", "float", "double", "long", "int", "detach", "cpu")


class _UnknownType:
    def __repr__(self) -> str:
        return "<unknown>"


_Unknown = _UnknownType()


def _slice_len(
    dim: int | None, sl: ast.Slice, const: Callable[[ast.AST], tuple[bool, Any]] = literal
) -> int | None:
    """Length of ``dim`` items after ``[lower:upper:step]`` with int (or absent) bounds; None when unsure."""
    if dim is None:
        return None
    bounds: list[int | None] = []
    for part in (sl.lower, sl.upper, sl.step):
        if part is None:
            bounds.append(None)
            continue
        ok, v = const(part)
        if not ok or type(v) is not int:
            return None
        bounds.append(v)
    if bounds[2] == 0:
        return None
    return len(range(*slice(*bounds).indices(dim)))


def _index_shape(
    shape: tuple[int | None, ...], sl: ast.AST, const: Callable[[ast.AST], tuple[bool, Any]] = literal
) -> tuple[int | None, ...] | None:
    """Shape after basic indexing with int literals and full ``:`` slices; None when unsure."""
    items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    if len(items) > len(shape):
        return None
    out: list[int | None] = []
    for i, item in enumerate(items):
        if isinstance(item, ast.Slice):
            if item.lower is None and item.upper is None and item.step is None:
                out.append(shape[i])
                continue
            n = _slice_len(shape[i], item, const)
            if n is None:
                return None
            out.append(n)
            continue
        ok, v = const(item)
        if ok and isinstance(v, int) and not isinstance(v, bool):
            dim = shape[i]
            if dim is None or not -dim <= v < dim:
                return None
            continue
        return None
    out.extend(shape[len(items) :])
    return tuple(out)


CheckHook = Callable[[CellWalk, ast.stmt], list[Any]]


@dataclass
class _Trace:
    """One walk of a cell, recorded so that every check replays it instead of walking again."""

    facts: CellFacts
    snapshot: Snapshot
    walk: CellWalk
    # per statement: the walk's state there, with ``env`` as a position in ``walk.log``
    states: list[tuple[ast.stmt, int, int, ast.stmt | None, bool, bool, int, frozenset[str], str]]


#: The walk shared by the checks of one ``run_checks`` call (see ``shared_walk``); None outside one.
_SHARED: ContextVar[list[_Trace] | None] = ContextVar("crane_shared_walk", default=None)


@contextmanager
def shared_walk() -> Iterator[None]:
    """Within this block every check walking the same (facts, snapshot) replays ONE recorded walk."""
    token = _SHARED.set([])
    try:
        yield
    finally:
        _SHARED.reset(token)


def _trace(facts: CellFacts, snapshot: Snapshot) -> _Trace:
    shared = _SHARED.get()
    if shared:
        got = shared[0]
        if got.facts is facts and got.snapshot is snapshot:
            return got
    w = CellWalk(facts, snapshot)
    states = [
        (stmt, len(w.log), w.line, w._stmt, w._shared_line, w.opaque, w._ver, w._dirty, w.loop_note)
        for stmt in w.steps()
    ]
    got = _Trace(facts, snapshot, w, states)
    if shared is not None:
        shared[:] = [got]
    return got


def run_walk(facts: CellFacts, snapshot: Snapshot, hook: CheckHook) -> list[Any]:
    """Call ``hook`` on each certainly-run statement, in the state the walk had there; stop at the first
    finding. The walk itself runs once per (facts, snapshot) and is shared by all checks."""
    if facts.syntax_error:
        return []
    trace = _trace(facts, snapshot)
    w = trace.walk
    env: dict[str, Val | None] = {}
    done = 0  # entries of ``w.log`` applied to ``env``
    for stmt, upto, line, current, shared, opaque, ver, dirty, note in trace.states:
        for key, value in w.log[done:upto]:
            if key is _RESET:
                env = dict(value)
            else:
                env[key] = value
        done = upto
        w.env, w.line, w._stmt, w._shared_line, w.opaque, w._ver, w._dirty, w.loop_note = (
            env,
            line,
            current,
            shared,
            opaque,
            ver,
            dirty,
            note,
        )
        found = hook(w, stmt)
        if found:
            if note:
                found = [
                    replace(f, message=f"{f.message} ({note})") if isinstance(f, Finding) else f
                    for f in found
                ]
            return found
    return []


def finding_at(
    w: CellWalk,
    check_id: str,
    exc: str,
    node: ast.AST,
    message: str,
    evidence: list[tuple[str, str]] | tuple[tuple[str, str], ...],
    vals: list[Val],
    replacement: tuple[str, str] | None = None,
) -> list[Finding]:
    """One finding on ``node``'s span, naming the kernel variables behind ``vals`` (for origins).

    ``replacement`` is (new source text for ``node``, description): a certain repair of that span."""
    variables = tuple(dict.fromkeys(n for v in vals for n in v.variables))
    span = span_of(node, w.lines)
    return [
        Finding(
            check_id=check_id,
            exception=exc,
            span=span,
            message=message,
            evidence=tuple(evidence),
            variables=variables,
            replacement=(span, *replacement) if replacement else None,
        )
    ]
