"""What the scan of one cell found, each fact with its position, and the probe query built from them.

``guarded`` marks code that may not run, or whose error may be caught (branches, loop bodies, ``try``
bodies, short-circuit operands, comprehension elements, function and lambda bodies);
``CellFacts.is_trusted`` says whether a kernel value still holds at a position, given what the cell
did to the name before it.
"""

from __future__ import annotations

import ast
import builtins
import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from crane_lsp.analysis.kinds import OperationKind
from crane_lsp.analysis.positions import PosMap, Span, span_of

_BUILTIN_NAMES = frozenset(dir(builtins))
#: Builtins the checks rely on (``open``) or prove safe (``analysis.reach``), queried when the cell
#: reads them so that a kernel shadowing one is noticed.
_CHECKED_BUILTINS = frozenset(
    {"open", "print", "display", "len", "type", "id", "str", "repr", "int", "float", "abs", "round", "range"}
)

#: ``untrusted_from`` key: from this line on, NO kernel value can be trusted (exec, %run, globals()).
UNTRUSTED_ALL = "*"
#: ``untrusted_from`` key: from this line on, the file system may have changed (shell, writers, cd).
UNTRUSTED_FILES = "<files>"
#: ``untrusted_from`` key: from this line on, installed modules may have changed (%pip, !pip).
UNTRUSTED_MODULES = "<modules>"


@dataclass(frozen=True)
class NameUse:
    name: str
    span: Span
    guarded: bool = False  # may not run / its error may be caught (see module docstring)
    maybe_bound: bool = False  # the cell may have bound the name before (in a branch, loop or after del)


@dataclass(frozen=True)
class AttributeChain:
    """``np.random.rand`` -> base ``np``, attrs ``("random", "rand")``; chain text ``"np.random.rand"``."""

    base: str
    attrs: tuple[str, ...]
    span: Span  # of the whole chain expression
    attr_span: Span  # of the last attribute name only (where a missing-attribute squiggle goes)
    guarded: bool = False
    is_store: bool = False  # ``a.b = 1`` (never raises AttributeError on the last attribute)

    @property
    def text(self) -> str:
        return ".".join((self.base, *self.attrs))


@dataclass(frozen=True)
class Subscript:
    """``df['price']`` / ``d[0]`` / ``df[['a', 'b']]`` with literal keys only."""

    target: str  # the subscripted expression as text: a name or a chain ("df", "self.data")
    key: Any  # the literal value: str, int, float, tuple, or list of those
    span: Span  # of the whole subscript expression
    key_span: Span
    accessor: str | None = None  # "loc" / "iloc" / "at" / "iat" for df.loc[...]
    is_store: bool = False  # assignment target (df['new'] = ...): creates, never raises KeyError
    guarded: bool = False
    is_del: bool = False  # ``del d['k']`` (raises KeyError like a load)

    @property
    def text(self) -> str:
        acc = f".{self.accessor}" if self.accessor else ""
        return f"{self.target}{acc}[{self.key!r}]"

    @property
    def base(self) -> str:
        """The root variable name (``df`` for ``df.loc['x']`` and ``data.train['a']``)."""
        return self.target.split(".", 1)[0].split("[", 1)[0]


@dataclass(frozen=True)
class Argument:
    keyword: str | None  # None for positional
    text: str  # source text of the argument expression
    literal: Any = None  # the value when the argument is a literal (ast.literal_eval), else None
    is_literal: bool = False
    name: str | None = None  # when the argument is a plain name or chain ("df", "df.values")
    starred: bool = False  # *args / **kwargs
    span: Span | None = None


@dataclass(frozen=True)
class Call:
    """A call site: ``func`` as text (``"pd.read_csv"``, ``"model.fit"``, ``"len"``)."""

    func: str
    args: tuple[Argument, ...]
    span: Span
    func_span: Span
    receiver: str | None = None  # for method calls on a name/chain: "model" in model.fit(...)
    method: str | None = None  # "fit"
    guarded: bool = False
    func_is_name: bool = False  # ``func`` is a plain name or chain rooted at a name (not ``f()()``)

    @property
    def base(self) -> str | None:
        """Root name of the callee when ``func_is_name`` (``pd`` for ``pd.read_csv``)."""
        return self.func.split(".", 1)[0] if self.func_is_name else None

    def positional(self) -> list[Argument]:
        return [a for a in self.args if a.keyword is None and not a.starred]

    def keyword(self, name: str) -> Argument | None:
        return next((a for a in self.args if a.keyword == name), None)


@dataclass(frozen=True)
class ImportUse:
    module: str  # "sklearn.model_selection"
    names: tuple[str, ...]  # from-imports: ("train_test_split",); plain import: ()
    alias: str | None
    span: Span
    guarded: bool = False
    level: int = 0  # relative import dots


@dataclass(frozen=True)
class Assignment:
    """A name bound by the cell (assignment, for target, with, import, def, class, augmented)."""

    name: str
    span: Span
    value_text: str | None = None  # source of the assigned expression, when a simple assignment
    guarded: bool = False  # bound only on some paths (branch, loop, try)


@dataclass(frozen=True)
class Operation:
    """A binary operation, unpacking or iteration whose operands are names or literals (for type checks)."""

    kind: OperationKind
    span: Span
    op: str | None = None  # "+", "/", ... for binop; "+=" ... for augmented assignment
    left: Argument | None = None  # operand (binop left; iter/unpack: the iterated value)
    right: Argument | None = None  # binop right
    n_targets: int | None = None  # unpack: number of targets (None when starred)
    guarded: bool = False


@dataclass(frozen=True)
class TrustEvent:
    """From ``pos`` on, the kernel's value of ``name`` may have been changed by the cell."""

    name: str
    pos: tuple[int, int]
    callee: str | None = None  # the only reason: ``name`` was passed to this plain-name function
    # the end of the plain-name call ``f(name)`` whose argument (or global, for a function the cell
    # defines) ``name`` is: the walk drops the event when it followed that call and nothing changed
    site: tuple[int, int] | None = None


@dataclass
class CellFacts:
    """Everything ``analyze`` learned about one cell."""

    source: str
    python: str  # the transformed Python source (magics -> Python), what was actually parsed
    syntax_error: str | None = None  # message when the cell does not parse
    syntax_error_span: Span | None = None
    reads: list[NameUse] = field(default_factory=list)  # names read before the cell assigns them
    defines: list[Assignment] = field(default_factory=list)  # in order of appearance
    chains: list[AttributeChain] = field(default_factory=list)
    subscripts: list[Subscript] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    paths: list[tuple[str, Span]] = field(default_factory=list)  # literal file paths given to readers
    imports: list[ImportUse] = field(default_factory=list)
    # lines (0-based) from which on the analysis can no longer vouch for a name's value, because
    # code it cannot follow (user function call, loop body, exec, del, augmented/attribute assign)
    # may have changed it: name -> first such line. Special keys: UNTRUSTED_ALL, UNTRUSTED_FILES,
    # UNTRUSTED_MODULES. Prefer ``is_trusted`` (column-exact, so ``df = df.drop(...)`` still trusts
    # the ``df`` read on its right-hand side).
    untrusted_from: dict[str, int] = field(default_factory=dict)
    untrusted_pos: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (line, col)
    operations: list[Operation] = field(default_factory=list)
    trust_events: list[TrustEvent] = field(default_factory=list)  # what built ``untrusted_pos``
    magic: str | None = None  # the cell magic name (``time``) when the cell starts with ``%%``
    analyzed: bool = True  # False for cell magics whose body is not Python (``%%bash``)
    # 0-based line where the analysis stopped: the cell is longer than ``analyze``'s ``max_lines``, so the
    # statements from there on were not read (every name is untrusted there, and no check looks at them)
    unchecked_from: int | None = None
    # ``ast.parse(python)``, parsed once and shared by the scan, the value walk, the reach rule and the
    # dry-run screen; a one-item list so that ``replace`` (``refined``) shares it too
    parsed: list[ast.Module | None] = field(default_factory=list, repr=False, compare=False)
    # maps positions in ``tree()`` back to the cell as the editor shows it (magics rewritten by IPython)
    posmap: PosMap | None = field(default=None, repr=False, compare=False)
    # ``python`` as identifiers read it (NFKC), computed once for ``mentions``; shared like ``parsed``
    _ident_text: list[str] = field(default_factory=list, repr=False, compare=False)

    def span(self, node: ast.AST) -> Span:
        """Where a node of ``tree()`` is in the cell the editor shows: the one coordinate map."""
        if self.posmap is not None:
            return self.posmap.span(node)
        return span_of(node, self.python.split("\n"))

    def tree(self) -> ast.Module | None:
        """The parsed ``python`` (None when it does not parse); the same object on every call."""
        if not self.parsed:
            try:
                self.parsed.append(ast.parse(self.python))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.parsed.append(None)
        return self.parsed[0]

    def mentions(self, word: str) -> bool:
        """Whether ``word`` occurs anywhere in the cell's Python (an identifier the cell may use: Python
        reads identifiers NFKC-normalised, so the text is too). False proves the cell never names it."""
        if not self._ident_text:
            text = self.python
            self._ident_text.append(text if text.isascii() else unicodedata.normalize("NFKC", text))
        return word in self._ident_text[0]

    def untrust_from_start(self, key: str) -> None:
        self.untrust_from(key, (0, 0))

    def untrust_from(self, key: str, pos: tuple[int, int]) -> None:
        """From ``pos`` (line, col) on, the kernel's value of ``key`` no longer holds."""
        self.trust_events.append(TrustEvent(key, pos))
        old = self.untrusted_pos.get(key)
        if old is None or pos < old:
            self.untrusted_pos[key] = pos
            self.untrusted_from[key] = pos[0]

    def refined(self, library_function: Callable[[str], bool]) -> CellFacts:
        """A copy that keeps trusting values passed to functions ``library_function`` vouches for.

        ``analyze`` cannot tell ``train_test_split(X, y)`` (leaves ``X`` alone) from a user's
        ``clean(df)`` (may change it); with the snapshot a caller can, and calls this once.
        """
        pos: dict[str, tuple[int, int]] = {}
        kept: list[TrustEvent] = []
        for event in self.trust_events:
            if event.callee is not None and library_function(event.callee):
                continue
            kept.append(event)
            if event.name not in pos or event.pos < pos[event.name]:
                pos[event.name] = event.pos
        return replace(
            self, untrusted_pos=pos, untrusted_from={k: v[0] for k, v in pos.items()}, trust_events=kept
        )

    def is_trusted(self, name: str, at: Span | tuple[int, int]) -> bool:
        """Whether the kernel's value of ``name`` still holds at position ``at`` of the cell."""
        pos = (at.line, at.col) if isinstance(at, Span) else at
        for key in (name, UNTRUSTED_ALL):
            limit = self.untrusted_pos.get(key)
            if limit is not None and pos >= limit:
                return False
        return True

    def defined_before(self, name: str, at: Span | tuple[int, int]) -> bool:
        """Whether the cell binds ``name`` (on some path) before position ``at``."""
        pos = (at.line, at.col) if isinstance(at, Span) else at
        return any(d.name == name and (d.span.line, d.span.col) < pos for d in self.defines)

    def read_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.reads:
            seen.setdefault(r.name, None)
        return list(seen)

    def row_labels(self) -> dict[str, list[Any]]:
        """Literal row labels the cell looks up on a name or chain (``df``, ``data.train``): ``.loc``/``.at``
        reads (not stores: they enlarge) and ``drop`` of rows, each kept only when it is a str, an int or a
        finite float (bools are masks to ``.loc``). The object may not be a frame at all: the probe tells."""
        kernel = set(self.read_names())
        out: dict[str, dict[Any, None]] = {}

        def add(target: str, value: Any) -> None:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if _row_label(item) and len(out.setdefault(target, {})) < _MAX_ROW_LABELS:
                    out[target].setdefault((type(item), item), None)

        for sub in self.subscripts:
            if sub.accessor not in ("loc", "at") or sub.is_store or sub.is_del or sub.base not in kernel:
                continue
            if "[" in sub.target:
                continue
            key = sub.key
            add(sub.target, key[0] if isinstance(key, tuple) and len(key) == 2 else key)
        for call in self.calls:
            if call.method != "drop" or call.receiver is None or call.receiver.split(".")[0] not in kernel:
                continue
            for arg in (*call.positional()[:1], call.keyword("labels"), call.keyword("index")):
                if arg is not None and arg.is_literal:
                    add(call.receiver, arg.literal)
        return {target: [item for _, item in labels] for target, labels in out.items() if labels}

    def _built_by_kernel_class(self, kernel: set[str]) -> dict[str, str]:
        """Cell names bound to ``C(...)``, ``C`` a kernel name: name -> ``C`` (checks/built_methods.py)."""
        out: dict[str, str] = {}
        receivers = {call.receiver for call in self.calls if call.method}
        for d in self.defines:
            if d.name not in receivers or not d.value_text or "(" not in d.value_text:
                continue
            try:
                node = ast.parse(d.value_text, mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in kernel:
                out[d.name] = node.func.id
        return out

    def imported_names(self) -> dict[str, str]:
        """Names the cell binds by an absolute import, each to the ``@module.name`` probe chain of what it
        binds (``from sklearn.ensemble import RandomForestClassifier as RFC`` -> ``RFC``:
        ``@sklearn.ensemble.RandomForestClassifier``; ``import sklearn.svm as svm`` -> ``@sklearn.svm``), when
        that import, run on every path, is the name's only binding in the cell. The probe reads the chain
        from a module the kernel has already loaded, never importing one."""
        tree = self.tree() if self.imports else None
        if tree is None:
            return {}
        found: dict[str, list[tuple[str, Span]]] = {}
        for node in _statements(tree.body):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    found.setdefault(a.asname or a.name, []).append(
                        (f"@{node.module}.{a.name}", self.span(node))
                    )
            elif isinstance(node, ast.Import):
                for a in node.names:
                    name = a.asname or a.name.split(".")[0]
                    found.setdefault(name, []).append((f"@{a.name if a.asname else name}", self.span(node)))
        out: dict[str, str] = {}
        for name, binds in found.items():
            defines = [d for d in self.defines if d.name == name]
            if (
                len(binds) == 1
                and len(defines) == 1
                and not defines[0].guarded
                and defines[0].span == binds[0][1]
            ):
                out[name] = binds[0][0]
        return out

    def probe_query_fields(self) -> dict[str, Any]:
        """Names, chains, subscripts, paths, modules and row labels for a ``runtime.ProbeQuery``.

        Builtin names the cell reads (``print``, ``len``) are left out unless the cell uses them as
        the root of a chain or subscript; a kernel that shadows one is rare and costs prompt tokens.
        """
        names = self.read_names()
        kernel = set(names)
        rooted = {ch.base for ch in self.chains} | {sub.base for sub in self.subscripts} | _CHECKED_BUILTINS
        names = [n for n in names if n not in _BUILTIN_NAMES or n in rooted]
        chains: dict[str, None] = {}  # the probe answers every prefix of a chain too
        for ch in self.chains:
            if ch.base in kernel:
                chains.setdefault(ch.text if not ch.is_store else ".".join((ch.base, *ch.attrs[:-1])), None)
        chains.pop("", None)
        for name in [c for c in chains if "." not in c]:
            del chains[name]
        built = self._built_by_kernel_class(kernel)
        for call in self.calls:  # ``m = C(); m.fit(...)``: the method's contract, read on the kernel class
            if call.receiver in built and call.method:
                chains.setdefault(f"{built[call.receiver]}.{call.method}", None)
        imported = self.imported_names()
        for call in self.calls:  # ``from m import C`` then ``C(...)``: C's contract, from the loaded module
            if call.func_is_name and call.base in imported and not call.guarded:
                chains.setdefault(imported[call.base] + call.func[len(call.base) :], None)
        for name, cls in self._built_by_kernel_class(set(imported)).items():  # ``m = C(); m.fit(...)``
            for call in self.calls:
                if call.receiver == name and call.method:
                    chains.setdefault(f"{imported[cls]}.{call.method}", None)
        agg_labels: dict[str, list[str]] = {}
        for call in self.calls:  # ``df.agg('meen')``: how pandas resolves the name (checks/aggregations.py)
            if call.receiver in kernel:
                for name in agg_names(call):
                    chains.setdefault(f"{call.receiver}.{name}", None)
                    chains.setdefault(f"{NUMPY_CHAIN}.{name}", None)
            root = call.func.split(".", 1)[0].split("[", 1)[0] if call.method in _AGG_METHODS else ""
            if root in kernel:  # groupby, list, dict and named forms: the classes, the frame's index
                for name in agg_spec_names(call):
                    for cls_chain in AGG_CLASS_CHAINS:
                        chains.setdefault(f"{cls_chain}.{name}", None)
                    agg_labels.setdefault(root, []).append(name)
        subs: dict[str, None] = {}
        for sub in self.subscripts:
            if sub.base in kernel and not sub.is_store:
                subs.setdefault(sub.text, None)
        paths: dict[str, None] = {p: None for p, _ in self.paths}
        modules: dict[str, None] = {}
        for imp in self.imports:  # top-level packages and the dotted modules (the probe never imports)
            if imp.level == 0 and imp.module:
                modules.setdefault(imp.module.split(".")[0], None)
                modules.setdefault(imp.module, None)
        return {
            "names": names,
            "chains": list(chains),
            "subscripts": list(subs),
            "paths": list(paths),
            "modules": list(modules),
            "index_labels": _merged(self.row_labels(), agg_labels),
        }


_MAX_ROW_LABELS = 100
#: Chain root the probe resolves from the kernel's loaded ``numpy`` module, whatever name holds it.
NUMPY_CHAIN = "@numpy"
_AGG_METHODS = frozenset({"agg", "aggregate"})


def agg_names(call: Call) -> tuple[str, ...]:
    """The function names a plain ``x.agg('name')`` / ``x.agg(['a', 'b'])`` call gives as literal text."""
    if call.method not in _AGG_METHODS or any(a.starred for a in call.args):
        return ()
    pos = call.positional()
    arg = pos[0] if pos else call.keyword("func")
    if arg is None or not arg.is_literal:
        return ()
    value = arg.literal
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    if not names or not all(isinstance(n, str) and n.isidentifier() for n in names):
        return ()
    return tuple(dict.fromkeys(names))


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement in ``body`` and the blocks nested in it (no expressions: what an import can be)."""
    out: list[ast.stmt] = []
    todo = list(reversed(body))
    while todo:
        stmt = todo.pop()
        out.append(stmt)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                todo.extend(reversed([b for b in block if isinstance(b, ast.stmt)]))
                for b in block:  # except handlers and match cases hold statements, not being ones
                    if not isinstance(b, ast.stmt):
                        todo.extend(reversed(getattr(b, "body", [])))
    return out


#: Probe chains whose attributes resolve an aggregation name: a column's Series, a groupby and its column,
#: numpy (read from the loaded modules: checks/aggregations.py).
AGG_CLASS_CHAINS = (
    "@pandas.Series",
    "@pandas.core.groupby.DataFrameGroupBy",
    "@pandas.core.groupby.SeriesGroupBy",
    NUMPY_CHAIN,
)


def agg_spec_names(call: Call) -> tuple[str, ...]:
    """Every function name an ``agg`` call spells as literal text: ``'a'``, ``['a', np.mean]``,
    ``{'col': 'a'}``, ``{'col': ['a', np.std]}``, ``new=('col', 'a')``, ``new='a'``."""
    if call.method not in _AGG_METHODS:
        return ()
    found: list[str] = []

    def add(node: ast.expr) -> None:
        for item in node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]:
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value.isidentifier():
                found.append(item.value)

    for arg in call.args:
        if arg.starred or len(arg.text) > _MAX_AGG_TEXT:
            continue
        try:
            node = ast.parse(arg.text.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if arg.keyword not in (None, "func"):  # named: new=('col', 'a'), or new='a' on a groupby's column
            if isinstance(node, ast.Tuple) and len(node.elts) == 2:
                add(node.elts[1])
            elif isinstance(node, ast.Constant):
                add(node)
            elif isinstance(node, ast.Call):  # pd.NamedAgg('col', 'a') / NamedAgg(column=..., aggfunc='a')
                given = next((k.value for k in node.keywords if k.arg == "aggfunc"), None)
                if given is None and len(node.args) > 1:
                    given = node.args[1]
                if given is not None:
                    add(given)
        elif isinstance(node, ast.Dict):
            for item in node.values:
                add(item)
        else:
            add(node)
    return tuple(dict.fromkeys(found))[:_MAX_AGG_NAMES]


_MAX_AGG_TEXT = 2000
_MAX_AGG_NAMES = 50


def _merged(labels: dict[str, list[Any]], more: dict[str, list[str]]) -> dict[str, list[Any]]:
    for target, names in more.items():
        have = labels.setdefault(target, [])
        for name in names:
            if name not in have and len(have) < _MAX_ROW_LABELS:
                have.append(name)
    return labels


def _row_label(value: Any) -> bool:
    """A row label the probe can look up exactly: str, int or finite float (JSON keeps each type)."""
    if isinstance(value, float):
        return type(value) is float and math.isfinite(value)
    return type(value) in (str, int)
