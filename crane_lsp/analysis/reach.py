"""Is line k of a cell certainly reached? A finding is the cell's certain crash only if it is.

A check proves that the expression on line k raises *when it runs*. Whether the cell crashes THERE
also depends on the statements before it: ``np.linalg.inv(np.zeros((2, 2)))`` on line 1 raises
``LinAlgError`` before the ``NameError`` on line 3 is ever reached. ``first_risky_line`` answers with
the first statement before line k that is not PROVEN not to raise, or None when every one is.

The proof is deliberately small and conservative: literals and displays of them, names the kernel
or an earlier proven statement holds, number/str arithmetic without division by a variable,
``print``/``len``/``type`` of well-known values, a few attributes and methods of frames and arrays
that never raise (``shape``, ``head()``), columns a kernel DataFrame has exactly once
(``df[['a', 'b']]``), imports of packages already loaded in the kernel, new scikit-learn estimators
(their constructors only store parameters), plain function and class definitions, calls of the user's
own functions whose every body line is proven with the arguments' kinds (two calls deep), and ``for``
loops over literal items whose bodies are proven too. Anything else may
raise: then the finding is not certain, and the dry run (or a Warning) decides.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.funcsource import kernel_function
from crane_lsp.analysis.kinds import ARRAY_LIKE, Kind, ProofKind, constant_kind
from crane_lsp.analysis.values import exact_labels, literal
from crane_lsp.snapshot import Snapshot

_BUILTINS = frozenset(dir(builtins))
_NUMBER: frozenset[ProofKind] = frozenset({Kind.INT, Kind.FLOAT, Kind.BOOL})
_SCALAR: frozenset[ProofKind] = _NUMBER | {Kind.STR, Kind.NONE}
#: Kinds whose ``repr``/``str`` is library code that does not raise (cell-built containers only).
_PRINTABLE: frozenset[ProofKind] = _SCALAR | {
    *(Kind.DATAFRAME, Kind.SERIES, Kind.NDARRAY, Kind.TENSOR, Kind.ESTIMATOR, Kind.MODULE),
    *(Kind.INDEX, Kind.LITERAL),
}
_SIZED: frozenset[ProofKind] = frozenset(
    {
        *(Kind.DATAFRAME, Kind.SERIES, Kind.INDEX, Kind.LIST, Kind.TUPLE, Kind.DICT, Kind.STR, Kind.SET),
        *(Kind.LITERAL, Kind.NDARRAY, Kind.TENSOR),
    }
)
#: Attributes that are stored or computed without any way to fail.
_SAFE_ATTRS: dict[ProofKind, frozenset[str]] = {
    Kind.DATAFRAME: frozenset({"shape", "columns", "index", "dtypes", "size", "ndim", "empty", "T"}),
    Kind.SERIES: frozenset({"shape", "index", "dtype", "size", "ndim", "empty", "name"}),
    Kind.NDARRAY: frozenset({"shape", "ndim", "size", "dtype", "T"}),
    Kind.TENSOR: frozenset({"shape", "dtype"}),
}
#: Methods (called with no arguments, or ``head``/``tail`` with one int) that never raise.
_SAFE_METHODS: dict[ProofKind, frozenset[str]] = {
    Kind.DATAFRAME: frozenset({"head", "tail", "copy", "info", "isna", "isnull", "notna", "notnull", "keys"}),
    Kind.SERIES: frozenset({"head", "tail", "copy", "isna", "isnull", "notna", "notnull", "keys"}),
    Kind.NDARRAY: frozenset({"copy", "ravel", "flatten", "tolist"}),
}
_SAFE_CONTEXTS = frozenset(
    {
        ("torch", "no_grad"),
        ("torch", "inference_mode"),
        ("torch", "enable_grad"),
        ("warnings", "catch_warnings"),
    }
)
#: pandas' own DataFrame (pandas 3, pandas 2), not a subclass with its own ``__getitem__``.
_PLAIN_FRAMES = frozenset({"pandas.DataFrame", "pandas.core.frame.DataFrame"})
_ITERABLE: frozenset[ProofKind] = frozenset(
    {Kind.LITERAL, Kind.LIST, Kind.TUPLE, Kind.DICT, Kind.STR, Kind.SET, Kind.INDEX, Kind.DATAFRAME}
)
#: Safe methods whose result is of the receiver's kind (the others' is ``OTHER_SAFE``).
_SAME_KIND_RESULT = frozenset({"head", "tail", "copy", "isna", "isnull"})


#: How deep the proof follows calls into the user's own functions (a call inside one is depth 2).
MAX_CALL_DEPTH = 2


@dataclass
class _Proof:
    snapshot: Snapshot
    env: dict[str, ProofKind] = field(default_factory=dict)  # names proven statements bound -> kind
    modules: dict[str, str] = field(default_factory=dict)  # names proven imports bound -> module
    defs: dict[str, ast.FunctionDef] = field(default_factory=dict)  # functions proven ``def``s bound
    # inside a followed function: its local names not bound yet (reading one raises UnboundLocalError),
    # and the functions being followed (no recursion)
    unbound: frozenset[str] = frozenset()
    stack: tuple[str, ...] = ()

    # ---- expressions -------------------------------------------------------------------------
    def kind(self, node: ast.AST) -> ProofKind | None:
        """The kind of value ``node`` evaluates to without raising, or None when it may raise."""
        if isinstance(node, ast.Constant):
            return constant_kind(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            ok = all(not isinstance(e, ast.Starred) and self.kind(e) is not None for e in node.elts)
            if isinstance(node, ast.Set):
                ok = ok and all(isinstance(e, ast.Constant) for e in node.elts)  # hashable for sure
            return Kind.LITERAL if ok else None
        if isinstance(node, ast.Dict):
            keys_ok = all(isinstance(k, ast.Constant) for k in node.keys)
            return Kind.LITERAL if keys_ok and all(self.kind(v) is not None for v in node.values) else None
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    k = self.kind(part.value)
                    if k not in _PRINTABLE or part.format_spec is not None:
                        return None
            return Kind.STR
        if isinstance(node, ast.UnaryOp):
            k = self.kind(node.operand)
            return k if (k in _NUMBER and not isinstance(node.op, ast.Invert)) or k == Kind.INT else None
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            kinds = [self.kind(node.left), *(self.kind(c) for c in node.comparators)]
            if all(k in _NUMBER for k in kinds) or all(k == Kind.STR for k in kinds):
                return Kind.BOOL
            return None
        if isinstance(node, ast.Attribute):
            base = self.kind(node.value)
            if base is not None and node.attr in _SAFE_ATTRS.get(base, ()):
                return Kind.LITERAL if node.attr in ("shape", "columns", "index") else Kind.OTHER_SAFE
            return None
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.columns(node)
        return None

    def columns(self, node: ast.Subscript) -> ProofKind | None:
        """``df['a']`` / ``df[['a', 'b']]`` of a kernel DataFrame that has each column exactly once."""
        frame = node.value
        if not isinstance(frame, ast.Name) or frame.id in self.env:
            return None
        summary = self.snapshot.variables.get(frame.id)
        if summary is None or summary.kind != Kind.DATAFRAME or summary.type not in _PLAIN_FRAMES:
            return None
        labels = exact_labels(summary)
        ok, key = literal(node.slice)
        keys = key if ok and isinstance(key, list) else [key] if ok else []
        if labels is None or not keys or not all(type(k) is str and labels.count(k) == 1 for k in keys):
            return None
        return Kind.DATAFRAME if isinstance(key, list) else Kind.SERIES

    def name(self, name: str) -> ProofKind | None:
        if name in self.env:
            return self.env[name]
        if name in self.unbound:
            return None
        summary = self.snapshot.variables.get(name)
        if summary is not None:
            kind = summary.kind
            if kind == Kind.NDARRAY and summary.type != "numpy.ndarray":
                return Kind.OTHER  # a subclass: its repr and attributes are its own
            if kind in ARRAY_LIKE and not summary.shape:
                return Kind.SCALAR_ARRAY  # 0-d (or shape unknown): ``len`` raises
            return kind if kind != Kind.ERROR else None
        if name in _BUILTINS and name not in self.snapshot.undefined:
            return Kind.BUILTIN
        return None

    def binop(self, node: ast.BinOp) -> ProofKind | None:
        left, right = self.kind(node.left), self.kind(node.right)
        if left in _NUMBER and right in _NUMBER:
            if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                return Kind.FLOAT if Kind.FLOAT in (left, right) else Kind.INT
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                divisor = node.right
                if isinstance(divisor, ast.Constant) and divisor.value not in (0, 0.0, False):
                    return Kind.FLOAT
            return None
        if left == right == Kind.STR and isinstance(node.op, ast.Add):
            return Kind.STR
        return None

    def call(self, node: ast.Call) -> ProofKind | None:
        func = node.func
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        if isinstance(func, ast.Name) and self.name(func.id) == Kind.BUILTIN:
            return self.builtin_call(func.id, node)
        if isinstance(func, ast.Name) and self.name(func.id) == Kind.FUNCTION:
            return self.user_call(func.id, node)
        if isinstance(func, ast.Attribute):
            base = self.kind(func.value)
            if base is not None and func.attr in _SAFE_METHODS.get(base, ()) and not node.keywords:
                if not node.args or (
                    func.attr in ("head", "tail")
                    and len(node.args) == 1
                    and isinstance(node.args[0], ast.Constant)
                    and type(node.args[0].value) is int
                ):
                    return base if func.attr in _SAME_KIND_RESULT else Kind.OTHER_SAFE
                return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            return self.magic(node)
        return self.estimator(node)

    def builtin_call(self, name: str, node: ast.Call) -> ProofKind | None:
        kinds = [self.kind(a) for a in node.args]
        if any(k is None for k in kinds):
            return None
        if name in ("print", "display"):
            if all(k in _PRINTABLE for k in kinds) and all(
                kw.arg in ("sep", "end") and self.kind(kw.value) == Kind.STR for kw in node.keywords
            ):
                return Kind.NONE
            return None
        if node.keywords:
            return None
        if name == "len" and len(kinds) == 1 and kinds[0] in _SIZED:
            return Kind.INT
        if name in ("type", "id") and len(kinds) == 1:
            return Kind.OTHER_SAFE
        if name in ("str", "repr") and len(kinds) == 1 and kinds[0] in _SCALAR:
            return Kind.STR
        if name in ("int", "float", "abs", "round") and len(kinds) == 1 and kinds[0] in _NUMBER:
            return Kind.FLOAT if name == "float" else Kind.INT
        if name == "range" and 1 <= len(kinds) <= 2 and all(k == Kind.INT for k in kinds):
            return Kind.LITERAL
        return None

    def user_call(self, name: str, node: ast.Call) -> ProofKind | None:
        """A call of a function the user wrote (a proven ``def`` of the cell, or a kernel function whose
        source the probe read) whose every body line is proven with the arguments' kinds: the kind its
        final ``return`` gives (``OTHER_SAFE`` when none). Plain parameters and literal defaults only; no
        ``global``/``nonlocal``, nested functions, lambdas, ``yield`` or ``await`` in the body."""
        if len(self.stack) >= MAX_CALL_DEPTH or name in self.stack:
            return None
        fn = self.defs.get(name) if name in self.env else _kernel_def(name, self.snapshot)
        if fn is None or not _plain_body(fn):
            return None
        a = fn.args
        params = [p.arg for p in a.args]
        if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or len(node.args) > len(params):
            return None
        given: dict[str, ast.expr] = dict(zip(params, node.args, strict=False))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in params or kw.arg in given:
                return None
            given[kw.arg] = kw.value
        defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
        kinds: dict[str, ProofKind] = {}
        for p in params:
            arg = given.get(p)
            if arg is None and isinstance(defaults.get(p), ast.Constant):
                arg = defaults[p]  # a literal default (another was evaluated when the ``def`` ran)
            k = self.kind(arg) if arg is not None else None
            if k is None:
                return None
            kinds[p] = k
        local = _local_names(fn)
        outer = {k: v for k, v in self.env.items() if k not in local}
        inner = _Proof(
            self.snapshot,
            {**outer, **kinds},
            {k: v for k, v in self.modules.items() if k not in local},
            {k: v for k, v in self.defs.items() if k not in local},
            frozenset(local - set(params)),
            (*self.stack, name),
        )
        if not all(inner.stmt(st) for st in fn.body):
            return None
        last = fn.body[-1]
        if isinstance(last, ast.Return) and last.value is not None:
            return inner.kind(last.value) or Kind.OTHER_SAFE
        return Kind.NONE if not any(isinstance(n, ast.Return) for n in ast.walk(fn)) else Kind.OTHER_SAFE

    def magic(self, node: ast.Call) -> ProofKind | None:
        """``%matplotlib inline`` (``get_ipython().run_line_magic(...)``) with matplotlib loaded."""
        func = node.func
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
        inner = func.value.func
        if not (isinstance(inner, ast.Name) and inner.id == "get_ipython" and func.attr == "run_line_magic"):
            return None
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if args[:1] == ["matplotlib"] and "matplotlib" in self.snapshot.imported:
            return Kind.NONE
        return None

    def estimator(self, node: ast.Call) -> ProofKind | None:
        """A scikit-learn class called with keyword literals: its ``__init__`` only stores them."""
        if node.args or not isinstance(node.func, ast.Name) or node.func.id in self.env:
            return None
        summary = self.snapshot.variables.get(node.func.id)
        if summary is None or summary.kind != Kind.CLASS or not (summary.module or "").startswith("sklearn."):
            return None
        if all(isinstance(kw.value, ast.Constant) for kw in node.keywords):
            return Kind.ESTIMATOR
        return None

    # ---- statements --------------------------------------------------------------------------
    def stmt(self, node: ast.stmt) -> bool:
        """``node`` certainly runs without raising; records what it binds."""
        if isinstance(node, (ast.Pass, ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Return):  # in a followed function's body
            return bool(self.stack) and (node.value is None or self.kind(node.value) is not None)
        if isinstance(node, ast.Expr):
            return self.kind(node.value) is not None
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if value is None or not all(isinstance(t, ast.Name) for t in targets):
                return False
            k = self.kind(value)
            if k is None:
                return False
            for t in targets:
                assert isinstance(t, ast.Name)
                self.env[t.id] = k
                self.defs.pop(t.id, None)
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            k = self.binop(ast.BinOp(left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value))
            if k is None:
                return False
            self.env[node.target.id] = k
            self.defs.pop(node.target.id, None)
            return True
        if isinstance(node, ast.Import):
            for alias in node.names:
                if "." in alias.name or alias.name not in self.snapshot.imported:
                    return False
                self.env[alias.asname or alias.name] = Kind.MODULE
                self.defs.pop(alias.asname or alias.name, None)
                self.modules[alias.asname or alias.name] = alias.name
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            defaults = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
            annotations = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.annotation]
            if node.decorator_list or node.returns is not None or annotations:
                return False
            if not all(self.kind(d) is not None for d in defaults):
                return False
            self.env[node.name] = Kind.FUNCTION
            if isinstance(node, ast.FunctionDef):
                self.defs[node.name] = node
            else:
                self.defs.pop(node.name, None)  # calling it makes a coroutine: not followed
            return True
        if isinstance(node, ast.ClassDef):
            if node.decorator_list or node.bases or node.keywords:
                return False
            inner = _Proof(self.snapshot, dict(self.env))
            if not all(inner.stmt(s) for s in node.body):
                return False
            self.env[node.name] = Kind.CLASS
            self.defs.pop(node.name, None)
            return True
        if isinstance(node, ast.If):
            if self.kind(node.test) not in _SCALAR:
                return False
            return all(self.stmt(s) for s in node.body) and all(self.stmt(s) for s in node.orelse)
        if isinstance(node, ast.For):
            return self.loop_header(node) and all(self.stmt(s) for s in [*node.body, *node.orelse])
        if isinstance(node, ast.With):
            return self.with_header(node) and all(self.stmt(s) for s in node.body)
        return False

    def with_header(self, node: ast.With) -> bool:
        """``with torch.no_grad():`` and the like: context managers whose enter and exit cannot fail."""
        for item in node.items:
            call = item.context_expr
            if item.optional_vars is not None or not isinstance(call, ast.Call) or call.args or call.keywords:
                return False
            func = call.func
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
                return False
            module = self.module_name(func.value.id)
            if (module, func.attr) not in _SAFE_CONTEXTS:
                return False
        return True

    def module_name(self, name: str) -> str | None:
        if name in self.env:
            return self.modules.get(name)
        summary = self.snapshot.variables.get(name)
        if summary is None or summary.kind != Kind.MODULE:
            return None
        return summary.module or summary.value

    def loop_header(self, node: ast.For) -> bool:
        """``for name in <proven iterable>``: binds ``name`` to an item of unknown kind."""
        if not isinstance(node.target, ast.Name) or self.kind(node.iter) not in _ITERABLE:
            return False
        it = node.iter
        is_range = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        self.env[node.target.id] = Kind.INT if is_range else Kind.OTHER_SAFE
        self.defs.pop(node.target.id, None)
        return True


def _kernel_def(name: str, snapshot: Snapshot) -> ast.FunctionDef | None:
    """The ``def`` of a kernel function the probe read the source of (``funcsource``)."""
    summary = snapshot.variables.get(name)
    if summary is None or summary.kind != Kind.FUNCTION or summary.source is None:
        return None
    got = kernel_function(name, summary)
    return got.node if got is not None else None


_NOT_PLAIN = (
    ast.Global,
    ast.Nonlocal,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
)


def _plain_body(fn: ast.FunctionDef) -> bool:
    """No scope tricks in the body: it reads its parameters, its locals and the module's names."""
    return not fn.decorator_list and not any(isinstance(n, _NOT_PLAIN) for s in fn.body for n in ast.walk(s))


def _local_names(fn: ast.FunctionDef) -> set[str]:
    """Every name the function binds (so reads of it are local, not the module's)."""
    out = {p.arg for p in fn.args.args}
    for s in fn.body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.alias):
                out.add((n.asname or n.name).split(".")[0])
    return out


def _bounds(stmt: ast.stmt) -> tuple[tuple[int, int], tuple[int, int]]:
    end = ((stmt.end_lineno or stmt.lineno) - 1, stmt.end_col_offset or 0)
    return (stmt.lineno - 1, stmt.col_offset), end


def _risky_before(proof: _Proof, body: list[ast.stmt], pos: tuple[int, int]) -> int | None:
    """First statement of ``body`` that runs before position ``pos`` and may raise, as a 0-based line."""
    for stmt in body:
        start, end = _bounds(stmt)
        if start >= pos:
            return None
        if end <= pos:  # entirely before the finding
            if not proof.stmt(stmt):
                return start[0]
            continue
        # the finding lies inside this statement
        if not _compound(stmt):
            return None  # the finding's own statement
        if isinstance(stmt, ast.For):
            if not proof.loop_header(stmt):
                return start[0]
            for inner in stmt.body:  # earlier passes ran the whole body: every other statement too
                s, e = _bounds(inner)
                if s <= pos < e:
                    got = _risky_before(proof, [inner], pos)
                    if got is not None:
                        return got
                elif not proof.stmt(inner):
                    return s[0]
            return None
        if isinstance(stmt, ast.With):
            if not proof.with_header(stmt):
                return start[0]
            return _risky_before(proof, stmt.body, pos)
        if isinstance(stmt, ast.If):
            if proof.kind(stmt.test) not in _SCALAR:
                return start[0]
            inside = any(_bounds(s)[0] <= pos < _bounds(s)[1] for s in stmt.body)
            return _risky_before(proof, stmt.body if inside else stmt.orelse, pos)
        return start[0]  # with / try / while bodies: not followed
    return None


def _compound(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try))


def first_risky_line(facts: CellFacts, snapshot: Snapshot, line: int, col: int = 0) -> int | None:
    """0-based line of the first statement running before (``line``, ``col``) that may raise; None
    when none may.

    The position is in the cell as the editor shows it. When the parsed Python does not keep the
    cell's line numbering (a multi-line magic rewrite), nothing after line 0 is proven.
    """
    if line <= 0 and col <= 0:
        return None
    if facts.syntax_error or not facts.analyzed:
        return 0
    if len(facts.python.split("\n")) != len(facts.source.split("\n")):
        return 0
    tree = facts.tree()
    if tree is None:
        return 0
    return _risky_before(_Proof(snapshot), tree.body, (line, col))
