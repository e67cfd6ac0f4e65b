"""The value domain of the walk: what a value is PROVEN to be (kind, shape, dtype, columns, estimator).

``Val`` fields that are ``None`` are unknown, and checks stay silent on unknown. Values come from the
kernel snapshot (``val_from_summary``) or from what the cell builds (literals, new estimators, slices,
column selections, ``to_numpy``/``values``/``head``); ``analysis.evaluate`` derives them.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crane_lsp.analysis.effects import PURE_LIBRARIES
from crane_lsp.analysis.kinds import CALLABLES, Kind, ValKind
from crane_lsp.snapshot import ColumnSummary, ObjectSummary, ValueStats

#: What calls do (pure libraries and builtins, in-place library functions): the one effects table.
PURE_LIBS = PURE_LIBRARIES
#: Kinds of value whose methods only ever change the value itself, never their arguments.
LIB_KINDS: frozenset[ValKind] = frozenset(
    {
        *(Kind.NDARRAY, Kind.TENSOR, Kind.TF_TENSOR, Kind.SERIES, Kind.DATAFRAME, Kind.INDEX, Kind.ESTIMATOR),
        *(Kind.KERAS_MODEL, Kind.TORCH_MODULE, Kind.LIST, Kind.DICT, Kind.STR, Kind.SET, Kind.TUPLE),
        *(Kind.CATEGORICAL, Kind.LIST_LITERAL),  # the walk's own kinds for values the cell builds
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
#: Reductions and scans that arrays, tensors and the array checks know by name.
ARRAY_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "std", "var", "prod", "argmax", "argmin", "cumsum", "any", "all"}
)
_ARRAY_METHODS = ARRAY_REDUCTIONS | frozenset(
    {
        "reshape",
        "astype",
        "copy",
        "flatten",
        "ravel",
        "transpose",
        "dot",
        "tolist",
        "item",
        "round",
        "clip",
        "squeeze",
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
        "round", "abs", "idxmax", "idxmin", "unique", "to_list", "tolist", "mode", "first", "last"
    }
)  # fmt: skip
#: Methods that leave their receiver unchanged (pandas ones only without ``inplace=True``).
PURE_METHODS: dict[ValKind, frozenset[str]] = {
    Kind.DATAFRAME: _FRAME_METHODS,
    Kind.SERIES: _FRAME_METHODS,
    Kind.DERIVED: _FRAME_METHODS | _ARRAY_METHODS,  # a new object from ``_NEW_OBJECT_METHODS``
    Kind.NDARRAY: _ARRAY_METHODS,
    Kind.TENSOR: _TENSOR_METHODS,
    Kind.ESTIMATOR: frozenset(
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
_IMMUTABLE_KINDS: frozenset[ValKind] = frozenset({Kind.INT, Kind.STR, Kind.MODULE, Kind.MODULE_ATTR})


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

    kind: ValKind  # the probe's ObjectKind, or one of the walk's own (``analysis.kinds.WalkKind``)
    text: str  # the expression it came from, for messages
    shape: tuple[int | None, ...] | None = None
    dtype: str | None = None
    labels: tuple[Any, ...] | None = None  # DataFrame: every column label, exactly (None: not all known)
    index_names: tuple[Any, ...] | None = None
    summary: ObjectSummary | None = None
    est: Est | None = None
    length: int | None = None
    stats: ValueStats | None = None  # a Series/column's value statistics
    # the exact value: kind INT/STR (a literal, a loop variable on one pass), LIST_LITERAL (its items),
    # INDEX/NDARRAY from ``df.columns(.values)`` (the labels)
    value: Any = None
    fresh: bool = False  # a new object the cell built from literals only: no one else can hold it
    qualname: str | None = None  # classes and functions: "sklearn.linear_model.LogisticRegression"
    variables: tuple[str, ...] = ()  # kernel variables it derives from (for origins)
    # a DataFrame the cell derived from a kernel frame (a column selection, a drop): the kernel frame's
    # summaries of exactly the columns it kept (a kernel frame's own are in ``summary.columns``)
    columns: tuple[ColumnSummary, ...] | None = None

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def full_shape(self) -> tuple[int, ...] | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return tuple(d for d in self.shape if d is not None)


#: Expressions ``ast.literal_eval`` always rejects (answered without raising and catching its error).
_NEVER_LITERAL = (ast.Name, ast.Attribute, ast.Subscript, ast.Lambda, ast.Compare, ast.BoolOp, ast.JoinedStr)


def literal(node: ast.AST | None) -> tuple[bool, Any]:
    """``(True, value)`` for a literal expression (incl. negative numbers, lists, tuples)."""
    if node is None or isinstance(node, _NEVER_LITERAL):
        return False, None
    if isinstance(node, ast.Constant):
        return True, node.value
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
    """``f(*args)`` / ``f(**kw)``: arguments the analysis cannot line up with parameters."""
    for a in call.args:
        if isinstance(a, ast.Starred):
            return True
    return bool(call.keywords) and any(kw.arg is None for kw in call.keywords)


#: Fields that never hold a node (names, flags, the shared ``Load``/``Store`` context objects): skipped.
_NOT_NODES = frozenset(
    {"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "kind", "conversion", "is_async"}
    | {"simple", "type_comment", "tag", "kwd_attrs", "lineno", "col_offset", "end_lineno", "end_col_offset"}
)
_FIELDS: dict[type, tuple[str, ...]] = {
    ast.Constant: (),
    ast.Global: (),
    ast.Nonlocal: (),
    ast.MatchSingleton: (),
}


def _node_fields(cls: type) -> tuple[str, ...]:
    got = _FIELDS[cls] = tuple(f for f in cls._fields if f not in _NOT_NODES)  # type: ignore[attr-defined]
    return got


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The child nodes ``ast.iter_child_nodes`` gives, without the expression contexts (``Load()``...,
    which no check looks at) and without the generator machinery: one table of fields per node type."""
    fields = _FIELDS.get(node.__class__)
    if fields is None:
        fields = _node_fields(node.__class__)
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if value.__class__ is list:
            out += [v for v in value if v is not None]  # ``{**d}``: a None key in ``Dict.keys``
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def walk_list(root: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(root))`` in the same (breadth-first) order, without the contexts (``child_nodes``);
    the children are read in place, not through a call per node."""
    out = [root]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        fields = _FIELDS.get(node.__class__)
        if fields is None:
            fields = _node_fields(node.__class__)
        for name in fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                out += [v for v in value if v is not None]
            elif isinstance(value, ast.AST):
                out.append(value)
    return out


def dotted(node: ast.AST) -> str | None:
    """``np.linalg.norm`` for a Name/Attribute chain, else None."""
    parts = chain_parts(node)
    return ".".join(parts) if parts is not None else None


def chain_parts(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None when not rooted at a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
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
    if s.kind == Kind.ERROR:
        return None
    kind: ValKind = s.kind
    if kind == Kind.NDARRAY and s.type != "numpy.ndarray":
        kind = Kind.NDARRAY_SUBCLASS  # np.matrix multiplies with *, masked arrays mask: other rules
    elif kind == Kind.TENSOR and s.type not in ("torch.Tensor", "torch.nn.parameter.Parameter"):
        kind = Kind.TENSOR_SUBCLASS
    labels = exact_labels(s) if s.kind == Kind.DATAFRAME else None
    idx_names = getattr(s, "index_names", None)
    est: Est | None = None
    if s.kind == Kind.ESTIMATOR and s.estimator is not None:
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
    if s.kind in CALLABLES:
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


def frame_columns(v: Val) -> tuple[ColumnSummary, ...] | None:
    """A DataFrame value's column summaries, every column's, in order; None when not all are known."""
    if v.kind != Kind.DATAFRAME:
        return None
    if v.columns is not None:
        return v.columns
    s = v.summary
    if (
        s is None
        or not s.columns
        or s.columns_truncated
        or v.labels is None
        or len(s.columns) != len(v.labels)
    ):
        return None
    return tuple(s.columns)


def kept_columns(v: Val, keys: list[Any] | tuple[Any, ...]) -> tuple[ColumnSummary, ...] | None:
    """The summaries of ``keys`` (each naming exactly one column of ``v``), in the order given."""
    cols = frame_columns(v)
    if cols is None:
        return None
    by_name: dict[Any, list[ColumnSummary]] = {}
    for c in cols:
        by_name.setdefault(c.name if c.label_repr is None else ("repr", c.label_repr), []).append(c)
    if not all(isinstance(k, str) and len(by_name.get(k, ())) == 1 for k in keys):
        return None
    return tuple(by_name[k][0] for k in keys)
