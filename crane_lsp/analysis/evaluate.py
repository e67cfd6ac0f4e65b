"""What an expression evaluates to at the walk's current statement, as far as the snapshot proves it.

A mixin of ``analysis.walk.CellWalk``: names come from the walk's own bindings (``env``) or, while the
cell cannot have changed them, from the kernel snapshot; attributes, subscripts and calls derive new
values (``.T``, ``.values``, ``df.columns``, ``df[cols]``, ``df[:50]``, ``df[mask]``, ``to_numpy``,
``head``, new estimators). Anything not proven is ``None``.
"""

from __future__ import annotations

import ast
import math
from dataclasses import replace
from typing import Any

from crane_lsp.analysis.built import built_array, dropped_columns
from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.kinds import ARRAY_LIKE, CALLABLES, MODULE_LIKE, PANDAS, Kind, ValKind, constant_kind
from crane_lsp.analysis.sklearn_fitted import INNER_PARAMS, STATELESS, built_fitted
from crane_lsp.analysis.values import (
    _SAME_SHAPE,
    Est,
    Val,
    _index_shape,
    _slice_len,
    _Unknown,
    frame_columns,
    has_star,
    kept_columns,
    literal,
    root_name,
    val_from_summary,
)
from crane_lsp.kernel.agent.wire import SCHEMA_FRAME_KINDS
from crane_lsp.snapshot import Snapshot

#: ``ev``'s memo answer for a key it has not seen (None is a value: "not proven").
_UNSEEN = object()


class Evaluator:
    """Expression evaluation over the walk's state (the attributes below are the walk's)."""

    facts: CellFacts
    snapshot: Snapshot
    env: dict[str, Val | None]
    opaque: bool
    line: int
    _stmt: ast.stmt | None
    _shared_line: bool
    _guard: bool
    _ver: int
    _memo: dict[tuple[int, int, int, int, bool, bool], Val | None]
    _texts: dict[int, str]
    _dirty: frozenset[str]
    _vouched: set[tuple[int, int]]
    _untrusted: dict[str, int | None]

    def nodes(self, stmt: ast.stmt) -> list[ast.AST]:
        raise NotImplementedError

    def _call_changes(self, call: ast.Call, receivers: bool = True) -> set[str]:
        raise NotImplementedError

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
        first = self.facts.untrusted_from.get(name) if not self._vouched else self._untrusted_line(name)
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

    def _untrusted_line(self, name: str) -> int | None:
        """``facts.untrusted_from[name]`` without the events of calls the walk followed and found to
        change nothing (``CellWalk._vouch``)."""
        first = self.facts.untrusted_from.get(name)
        if first is None:
            return None
        got = self._untrusted.get(name, _UNSEEN)
        if got is _UNSEEN:
            lines = [
                e.pos[0]
                for e in self.facts.trust_events
                if e.name == name and (e.site is None or e.site not in self._vouched)
            ]
            got = self._untrusted[name] = min(lines) if lines else None
        return got  # type: ignore[return-value]

    def name(self, name: str) -> Val | None:
        if name in self.env:
            return self.env[name]
        if self.opaque or not self.trusted(name):
            return None
        s = self.snapshot.variables.get(name)
        if s is None:
            return None
        v = val_from_summary(name, s, (name,))
        if v is not None and v.kind == Kind.MODULE:
            return replace(v, qualname=s.module or s.value)
        if v is not None and v.kind in CALLABLES and v.qualname is None and s.module:
            return replace(v, qualname=f"{s.module}.{name}")
        return v

    def module_of(self, node: ast.AST) -> str | None:
        """The module a name/chain refers to (``np`` -> ``numpy``), when the kernel proves it."""
        v = self.ev(node)
        # MODULE_ATTR: an attribute of a module not summarised on its own, e.g. ``np.random``
        return v.qualname if v is not None and v.kind in MODULE_LIKE else None

    def lib_func(self, func: ast.AST) -> tuple[str, str] | None:
        """``(module, name)`` for a call target like ``np.dot`` / ``plt.imshow``, when proven."""
        if isinstance(func, ast.Attribute):
            mod = self.module_of(func.value)
            if mod:
                return mod, func.attr
        v = self.ev(func)
        if v is not None and v.kind == Kind.MODULE_ATTR and v.qualname:
            mod, _, nm = v.qualname.rpartition(".")
            return mod, nm
        if v is not None and v.kind in (Kind.FUNCTION, Kind.CLASS, Kind.OTHER) and v.summary is not None:
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
            if v is not None and v.kind in (Kind.INT, Kind.STR) and type(v.value) in (int, str):
                return True, v.value
            if v is not None and v.kind == Kind.LIST_LITERAL and type(v.value) is list:
                return True, list(v.value)  # ``cols = ['a', 'b']`` earlier in the cell, unchanged since
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
        got = self._memo.get(key, _UNSEEN)
        if got is not _UNSEEN:
            return got  # type: ignore[return-value]
        try:
            value = self._ev(node)
        except (RecursionError, ValueError, TypeError, IndexError, OverflowError):
            value = None
        self._memo[key] = value
        return value

    def text(self, node: ast.AST) -> str:
        """``ast.unparse(node)``; names, chains, literal subscripts and argument-less calls spelt directly
        (``ast.unparse`` builds a visitor per call: most of the walk's time on a long cell)."""
        got = self._texts.get(id(node))
        if got is None:
            got = _plain_text(node)
            if got is None:
                got = ast.unparse(node) if isinstance(node, ast.expr) else ""
            self._texts[id(node)] = got
        return got

    def _ev(self, node: ast.AST) -> Val | None:
        if isinstance(node, ast.Name):
            return self.name(node.id)
        root = root_name(node)
        if root is not None and root not in self.env and not self.trusted(root):
            return None
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value)
            if base is None:
                return None
            if node.attr == "T" and base.kind in ARRAY_LIKE and base.shape is not None:
                return replace(base, text=self.text(node), shape=tuple(reversed(base.shape)), summary=None)
            if node.attr == "values" and base.kind in PANDAS:
                return Val(
                    kind=Kind.NDARRAY, text=self.text(node), shape=base.shape, variables=base.variables
                )
            # ``df.columns`` / ``df.columns.values``: the labels, exactly, when the frame's are known
            labels = (
                base.labels
                if node.attr == "columns" and base.kind == Kind.DATAFRAME
                else base.value
                if node.attr == "values" and base.kind == Kind.INDEX and isinstance(base.value, tuple)
                else None
            )
            known = (
                self.snapshot.variables.get(self.text(node))
                if root is not None and root not in self.env
                else None
            )
            if labels is not None and known is not None:
                v = val_from_summary(self.text(node), known, base.variables)
                if v is not None and v.length == len(labels):
                    return replace(v, value=tuple(labels))
            if labels is not None:
                return Val(
                    kind=Kind.INDEX if node.attr == "columns" else Kind.NDARRAY,
                    text=self.text(node),
                    shape=(len(labels),),
                    length=len(labels),
                    value=tuple(labels),
                    variables=base.variables,
                )
            if root is not None and root not in self.env:
                s = self.snapshot.variables.get(self.text(node))
                if s is not None:
                    v = val_from_summary(self.text(node), s, base.variables)
                    if v is not None and v.kind in CALLABLES and v.qualname is None and base.qualname:
                        v = replace(v, qualname=f"{base.qualname}.{node.attr}")
                    if v is not None and v.kind == Kind.MODULE and v.qualname is None and s.module:
                        v = replace(v, qualname=s.module)  # ``np.random``: a submodule the probe named
                    return v
            if base.kind == Kind.MODULE and base.qualname:
                return Val(
                    kind=Kind.MODULE_ATTR, text=self.text(node), qualname=f"{base.qualname}.{node.attr}"
                )
            return None
        if isinstance(node, ast.Subscript):
            return self._ev_subscript(node)
        if isinstance(node, ast.Call):
            return self._ev_call(node)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE))
        ):
            left, (right,) = self.ev(node.left), node.comparators
            ok, value = literal(right)
            if (
                left is not None
                and left.kind in (Kind.SERIES, Kind.NDARRAY)
                and ok
                and isinstance(value, (int, float, str))
            ):
                return Val(
                    kind=left.kind,
                    text=self.text(node),
                    shape=left.shape,
                    dtype="bool",
                    variables=left.variables,
                )
            return None
        if isinstance(node, ast.Constant) and type(node.value) in (int, str):
            return Val(kind=constant_kind(node.value), text=self.text(node), value=node.value)
        if isinstance(node, (ast.List, ast.Tuple)):
            ok, value = literal(node)
            if ok:
                return Val(
                    kind=Kind.LIST_LITERAL,
                    text=self.text(node),
                    length=len(value),
                    summary=None,
                    fresh=True,
                    value=value,
                )
        return None

    def _ev_subscript(self, node: ast.Subscript) -> Val | None:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "loc":
            frame = self.ev(node.value.value)
            return self._row_mask(frame, node.slice, node) if frame is not None else None
        if isinstance(node.value, ast.Attribute) and node.value.attr == "iloc":
            frame = self.ev(node.value.value)
            got = self._iloc(frame, node) if frame is not None else None
            if got is not None:
                return got
        base = self.ev(node.value)
        if base is None:
            return None
        if base.kind == Kind.DATAFRAME and not isinstance(node.slice, (ast.Constant, ast.List, ast.Tuple)):
            got = self._row_mask(base, node.slice, node)
            if got is not None:
                return got
        ok, key = self.const(node.slice)
        if base.kind in PANDAS and isinstance(node.slice, ast.Slice):
            return self._row_slice(base, node.slice, node)
        if base.kind == Kind.DATAFRAME and ok and isinstance(key, list):
            return self._columns(base, key, node)
        if base.kind == Kind.DATAFRAME and not ok:  # ``df[cols]`` with a kernel list of column names
            keys = self.ev(node.slice)
            values = keys.summary.values if keys is not None and keys.summary is not None else None
            if (
                keys is not None
                and keys.kind == Kind.LIST
                and values is not None
                and keys.length == len(values)
            ):
                return self._columns(base, list(values), node)
        if base.kind == Kind.DATAFRAME and ok and isinstance(key, str):
            root = root_name(node)
            s = (
                self.snapshot.variables.get(self.text(node))
                if root is not None and root not in self.env
                else None
            )
            if s is not None:
                return val_from_summary(self.text(node), s, base.variables)
            if base.labels is not None and key in base.labels and base.shape and base.labels.count(key) == 1:
                col = None
                if base.summary and base.summary.columns:
                    col = next((c for c in base.summary.columns if c.name == key), None)
                return Val(
                    kind=Kind.SERIES,
                    text=self.text(node),
                    shape=(base.shape[0],),
                    dtype=col.dtype if col else None,
                    stats=col.stats if col else None,
                    variables=base.variables,
                )
            return None
        if base.kind == Kind.NDARRAY and base.shape is not None:
            new = _index_shape(base.shape, node.slice, self.const)
            if new is not None:
                return Val(
                    kind=Kind.NDARRAY,
                    text=self.text(node),
                    shape=new,
                    dtype=base.dtype,
                    variables=base.variables,
                )
        return None

    def _iloc(self, frame: Val, node: ast.Subscript) -> Val | None:
        """``df.iloc[3]`` (one row: a Series as long as the frame is wide) and ``df.iloc[:, 1:]`` (all rows,
        the columns at those positions), on a frame of pandas' own class whose shape is known."""
        s = frame.summary
        if frame.kind != Kind.DATAFRAME or frame.full_shape() is None or len(frame.shape or ()) != 2:
            return None
        if s is not None and s.type not in ("pandas.DataFrame", "pandas.core.frame.DataFrame"):
            return None
        rows, width = frame.full_shape() or (0, 0)
        ok, row = self.const(node.slice)
        if ok and type(row) is int and -rows <= row < rows:
            return Val(kind=Kind.SERIES, text=self.text(node), shape=(width,), variables=frame.variables)
        sl = node.slice
        if not (isinstance(sl, ast.Tuple) and len(sl.elts) == 2 and isinstance(sl.elts[0], ast.Slice)):
            return None
        first, cols = sl.elts
        if not isinstance(first, ast.Slice) or not isinstance(cols, ast.Slice):
            return None
        if first.lower is not None or first.upper is not None or first.step is not None:
            return None
        bounds = [
            self.const(b) if b is not None else (True, None) for b in (cols.lower, cols.upper, cols.step)
        ]
        if not all(ok and (v is None or type(v) is int) for ok, v in bounds) or bounds[2][1] == 0:
            return None
        picked = slice(*(v for _, v in bounds))
        kept = range(width)[picked]
        labels = frame.labels[picked] if frame.labels is not None else None
        all_cols = frame_columns(frame)
        return Val(
            kind=Kind.DATAFRAME,
            text=self.text(node),
            shape=(rows, len(kept)),
            labels=labels,
            variables=frame.variables,
            columns=all_cols[picked] if all_cols is not None else None,
        )

    def _columns(self, frame: Val, keys: list[Any], node: ast.AST) -> Val | None:
        """``df[['a', 'b']]``: a frame of exactly those columns, when each names one existing column."""
        labels = frame.labels
        if labels is None or frame.shape is None or len(set(map(repr, keys))) != len(keys):
            return None
        if not all(isinstance(k, str) and labels.count(k) == 1 for k in keys):
            return None
        return Val(
            kind=Kind.DATAFRAME,
            text=self.text(node),
            shape=(frame.shape[0], len(keys)),
            labels=tuple(keys),
            variables=frame.variables,
            columns=kept_columns(frame, keys),
        )

    def _row_slice(self, base: Val, sl: ast.Slice, node: ast.AST) -> Val | None:
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
        return replace(
            base, text=self.text(node), shape=(rows, *base.shape[1:]), summary=None, stats=None, length=rows
        )

    def _row_mask(self, frame: Val, mask: ast.expr, node: ast.AST) -> Val | None:
        """``df[mask]`` / ``df.loc[mask]`` with a boolean Series: the same columns, fewer rows (what is known
        of the columns' values no longer holds for the subset)."""
        m = self.ev(mask)
        if (
            frame.kind != Kind.DATAFRAME
            or frame.labels is None
            or m is None
            or m.kind != Kind.SERIES
            or m.dtype != "bool"
            or frame.summary is None
            or frame.summary.type not in ("pandas.core.frame.DataFrame", "pandas.DataFrame")  # pandas 2, 3
        ):
            return None
        return Val(
            kind=Kind.DATAFRAME,
            text=self.text(node),
            shape=(None, len(frame.labels)),
            labels=frame.labels,
            variables=frame.variables,
        )

    def _ev_call(self, node: ast.Call) -> Val | None:
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
                return Val(kind=Kind.LIST_LITERAL, text=self.text(node), length=len(parts), fresh=True)
        if isinstance(func, ast.Attribute):
            base = self.ev(func.value)
            same_shape = ("astype", "copy") if base is not None and base.kind == Kind.NDARRAY else _SAME_SHAPE
            if (
                base is not None
                and base.kind in ARRAY_LIKE
                and base.shape is not None
                and (func.attr in same_shape)
            ):
                return replace(base, text=self.text(node), summary=None)
            if (
                base is not None
                and base.kind == Kind.NDARRAY
                and func.attr == "reshape"
                and not node.keywords
            ):
                new = reshaped(base.full_shape(), node.args, self.const)
                if new is not None:  # ``X.reshape(1, -1)``: a shape known from the array's and literals
                    return Val(
                        kind=Kind.NDARRAY,
                        text=self.text(node),
                        shape=new,
                        dtype=base.dtype,
                        variables=base.variables,
                    )
            if base is not None and base.kind == Kind.DATAFRAME and func.attr == "copy" and not node.args:
                return replace(base, text=self.text(node))
            if base is not None and func.attr == "drop":
                dropped = dropped_columns(self, node, base)
                if dropped is not None:
                    return dropped
            if base is not None and base.kind in PANDAS and not has_star(node):
                if func.attr == "to_numpy" and not node.args and not node.keywords:
                    return Val(
                        kind=Kind.NDARRAY, text=self.text(node), shape=base.shape, variables=base.variables
                    )
                if func.attr == "head" and len(node.args) <= 1 and not node.keywords and base.shape:
                    ok, n = self.const(node.args[0]) if node.args else (True, 5)
                    rows = base.shape[0]
                    if ok and type(n) is int and n >= 0 and rows is not None:
                        return replace(
                            base,
                            text=self.text(node),
                            shape=(min(n, rows), *base.shape[1:]),
                            summary=None,
                            stats=None,
                            length=min(n, rows),
                        )
        built = built_array(self, node)  # np.zeros((3, 2)) and the like: a shape known from literals
        if built is not None:
            return built
        if isinstance(func, ast.Name):  # a function the user defined: what its body returns (userfuncs)
            back = _user_function_value(self, node)
            if back is not None:
                return back
        target = self.ev(func)
        if target is not None and target.kind in (Kind.CLASS, Kind.MODULE_ATTR) and target.qualname:
            module, _, cls = target.qualname.rpartition(".")
            if module.startswith("sklearn.") and cls[:1].isupper() and not has_star(node):
                params = {}
                for kw in node.keywords:
                    lit_ok, v = literal(kw.value)
                    params[kw.arg or ""] = v if lit_ok else _Unknown
                return Val(
                    fresh=not node.args and all(p is not _Unknown for p in params.values()),
                    kind=Kind.ESTIMATOR,
                    text=self.text(node),
                    est=Est(
                        cls=cls, module=module, fitted=built_fitted(cls, _wrapped(self, node)), params=params
                    ),
                    variables=(),
                )
            if target.qualname.endswith("Categorical") and module.startswith("pandas"):
                return Val(kind=Kind.CATEGORICAL, text=self.text(node))
        return None


def reshaped(shape: tuple[int, ...] | None, args: list[ast.expr], const: Any) -> tuple[int, ...] | None:
    """The shape ``a.reshape(*args)`` gives an array of ``shape``: literal ints (one -1 at most), or one
    tuple of them; None when unknown or when the reshape itself raises (``array.reshape`` says so)."""
    if shape is None or not args:
        return None
    got = [const(a) for a in args]
    if not all(ok for ok, _ in got):
        return None
    dims = got[0][1] if len(got) == 1 and isinstance(got[0][1], (tuple, list)) else [v for _, v in got]
    if not all(type(d) is int and d >= -1 for d in dims) or list(dims).count(-1) > 1:
        return None
    size = math.prod(shape)
    known = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or size % known:
            return None
        dims = [size // known if d == -1 else d for d in dims]
    return tuple(dims) if math.prod(dims) == size else None


#: Value kinds that cannot be (or hold) an estimator.
_NOT_ESTIMATOR: frozenset[ValKind] = frozenset(
    {
        Kind.NDARRAY,
        Kind.TENSOR,
        Kind.TF_TENSOR,
        Kind.SERIES,
        Kind.DATAFRAME,
        Kind.INDEX,
        Kind.STR,
        Kind.BYTES,
        Kind.INT,
        Kind.FLOAT,
        Kind.BOOL,
        Kind.COMPLEX,
        Kind.NONE,
        *SCHEMA_FRAME_KINDS,  # polars, Dask, Spark frames
        Kind.CATEGORICAL,
        Kind.LIST_LITERAL,
        Kind.CLASS,
        Kind.FUNCTION,
    }
)


def _wrapped(w: Any, call: ast.Call) -> list[bool | None]:
    """The fittedness of each value a new scikit-learn estimator may wrap (its first positional argument
    and its estimator parameters, ``analysis.sklearn_fitted.INNER_PARAMS``): True for a stateless one,
    None for a value that may be an estimator of unknown state (``sklearn_fitted.built_fitted``)."""
    out: list[bool | None] = []

    def visit(node: ast.expr, depth: int) -> None:
        if literal(node)[0]:
            return
        if isinstance(node, ast.List | ast.Tuple) and depth < 4:
            for item in node.elts:
                visit(item, depth + 1)
            return
        v = w.ev(node)
        if v is not None and v.est is not None:
            out.append(True if v.est.cls in STATELESS else v.est.fitted)
        elif v is None or v.kind not in _NOT_ESTIMATOR:
            out.append(None)

    for node in [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg in INNER_PARAMS)]:
        visit(node, 0)
    return out


def _user_function_value(w: Any, call: ast.Call) -> Val | None:
    from crane_lsp.analysis.userfuncs import returned  # userfuncs runs a CellWalk: imported late

    return returned(w, call)


def _plain_constant(value: object) -> str | None:
    """``repr`` of an int or of a plain printable str, which is what ``ast.unparse`` writes for them."""
    if type(value) is int:
        return repr(value) if value >= 0 else None
    if type(value) is str and value.isprintable() and "'" not in value and "\\" not in value:
        return repr(value)
    return None


def _plain_text(node: ast.AST) -> str | None:
    """The unparsed text of ``a``, ``a.b``, ``a['k']``, ``a[0]``, ``a.b()``, or None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and not isinstance(node.value, ast.Constant):
        base = _plain_text(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base, key = _plain_text(node.value), _plain_constant(node.slice.value)
        return f"{base}[{key}]" if base is not None and key is not None else None
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        func = _plain_text(node.func)
        return f"{func}()" if func is not None else None
    if isinstance(node, ast.Constant):
        return _plain_constant(node.value)
    return None


def _target_root(target: ast.expr) -> ast.AST | None:
    """The Name a subscript/attribute assignment target hangs off (``df`` in ``df.loc['a', 'b']``)."""
    node: ast.AST = target
    if not isinstance(node, (ast.Subscript, ast.Attribute)):
        return None
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node if isinstance(node, ast.Name) else None
