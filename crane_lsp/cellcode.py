"""Parse one notebook cell into the facts the probe and the checks need, each with its exact position.

INTERFACE (stable; the implementation below is filled in by the cellcode work):
    analyze(source: str) -> CellFacts

Positions are 0-based lines and columns in the ORIGINAL cell text (what the editor shows), even
though magics and ``!shell`` lines are first turned into Python by IPython's own transformer.

Two flags make the facts safe to act on: ``guarded`` marks code that may not run, or whose error
may be caught (branches, loop bodies, ``try`` bodies, short-circuit operands, comprehension
elements, function and lambda bodies); ``CellFacts.is_trusted`` says whether a kernel value still
holds at a position, given what the cell did to the name before it.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from crane_lsp.analysis.effects import (
    DYNAMIC_CODE_CALLS,
    HIGHER_ORDER_BUILTINS,
    MUTATING_METHODS,
    NAMESPACE_CALLS,
    PANDAS_INPLACE_ONLY,
    PURE_BUILTINS,
)

_log = logging.getLogger(__name__)
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
class Span:
    """A range in the original cell text; 0-based lines, columns in characters."""

    line: int
    col: int
    end_line: int
    end_col: int


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

    kind: str  # "binop" | "iter" | "unpack"
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

    def untrust_from_start(self, key: str) -> None:
        self.trust_events.append(TrustEvent(key, (0, 0)))
        self.untrusted_pos[key] = (0, 0)
        self.untrusted_from[key] = 0

    def refined(self, library_function: Callable[[str], bool]) -> CellFacts:
        """A copy that keeps trusting values passed to functions ``library_function`` vouches for.

        ``analyze`` cannot tell ``train_test_split(X, y)`` (leaves ``X`` alone) from a user's
        ``clean(df)`` (may change it); with the snapshot a caller can, and calls this once.
        """
        pos: dict[str, tuple[int, int]] = {}
        for event in self.trust_events:
            if event.callee is not None and library_function(event.callee):
                continue
            if event.name not in pos or event.pos < pos[event.name]:
                pos[event.name] = event.pos
        return replace(self, untrusted_pos=pos, untrusted_from={k: v[0] for k, v in pos.items()})

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
            "index_labels": self.row_labels(),
        }


# ------------------------------------------------------------------------------------------------
# Magics: IPython's transformer, then a position map back to the original text
# ------------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Cell magics whose body is ordinary Python run in the user namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
#: Line magics that change nothing the checks rely on.
_HARMLESS_LINE_MAGICS = _words(
    """
    matplotlib config load_ext time timeit pinfo pinfo2 psource pdoc who whos who_ls pwd history
    precision autoreload aimport env lsmagic magic page pprint xmode ls pdef psearch prun pylab
    """
)
_FILE_LINE_MAGICS = frozenset({"cd", "mkdir", "cp", "mv", "rm", "sx", "system", "bookmark", "writefile"})
_MODULE_LINE_MAGICS = frozenset({"pip", "conda", "mamba", "uv"})


def _transform(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return str(TransformerManager().transform_cell(source))


class _PosMap:
    """Maps (line, byte col) in the parsed Python back to (line, char col) in the original cell."""

    def __init__(self, original_lines: list[str], python_lines: list[str], line_offset: int = 0) -> None:
        self.orig = original_lines
        self.py = python_lines
        self.offset = line_offset
        self.line_map: list[int] = list(range(len(python_lines)))
        self._same: list[bool] | None = None
        body = original_lines[line_offset:]
        if len(body) != len(python_lines):
            matcher = difflib.SequenceMatcher(a=python_lines, b=body, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                for k in range(i1, i2):
                    self.line_map[k] = j1 + (k - i1 if tag == "equal" else min(k - i1, max(j2 - j1 - 1, 0)))

    def _orig_line(self, py_line: int) -> int:
        if 0 <= py_line < len(self.line_map):
            return self.line_map[py_line] + self.offset
        return max(len(self.orig) - 1, 0)

    def pos(self, lineno: int, byte_col: int) -> tuple[int, int]:
        """``lineno`` 1-based (ast), ``byte_col`` UTF-8 offset (ast)."""
        py_idx = lineno - 1
        if self._same is None:  # per line: the parsed text is the cell's own, in ASCII (cols are chars)
            body = self.orig[self.offset :]
            self._same = [a == b and a.isascii() for a, b in zip(self.py, body, strict=False)]
        if 0 <= py_idx < len(self._same) and self._same[py_idx] and self.line_map[py_idx] == py_idx:
            return py_idx + self.offset, byte_col
        py_text = self.py[py_idx] if 0 <= py_idx < len(self.py) else ""
        char_col = len(py_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return self._char_pos(py_idx, char_col)

    def _char_pos(self, py_idx: int, char_col: int) -> tuple[int, int]:
        py_text = self.py[py_idx] if 0 <= py_idx < len(self.py) else ""
        line = self._orig_line(py_idx)
        orig_text = self.orig[line] if 0 <= line < len(self.orig) else ""
        if py_text == orig_text:
            return line, char_col
        if py_text and orig_text.endswith(py_text):  # IPython removed the cell's common indentation
            return line, char_col + len(orig_text) - len(py_text)
        common = 0
        for a, b in zip(py_text, orig_text, strict=False):
            if a != b:
                break
            common += 1
        return line, char_col if char_col <= common else max(common, min(char_col, len(orig_text)))

    def span(self, node: ast.AST) -> Span:
        line, col = self.pos(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end_lineno = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col_offset = getattr(node, "end_col_offset", None)
        if end_col_offset is None:
            end_col_offset = node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = self.pos(end_lineno, end_col_offset)
        return Span(line, col, end_line, end_col)

    def char_span(self, lineno: int, col: int, end_lineno: int, end_col: int) -> Span:
        """Span from 1-based lines and 0-based CHARACTER columns (SyntaxError positions)."""
        line, c = self._char_pos(lineno - 1, col)
        end_line, ec = self._char_pos(end_lineno - 1, end_col)
        return Span(line, c, end_line, ec)


# ------------------------------------------------------------------------------------------------
# The analysis
# ------------------------------------------------------------------------------------------------

_READER_FUNCS = _words(
    """
    read_csv read_excel read_json read_parquet read_table read_pickle read_feather read_hdf
    read_fwf read_stata read_sas read_spss read_orc read_xml load loadtxt genfromtxt fromfile
    listdir scandir imread load_img read_image read_file read_text read_bytes walk
    """
)
_PATH_KEYWORDS = ("filepath_or_buffer", "path", "io", "fname", "file", "filename", "fp", "path_or_buf")
_OPEN_FUNCS = frozenset({"open", "io.open", "Image.open", "PIL.Image.open", "codecs.open"})

# the effects of calls: one table for the cell analysis, the checks' walk and the dry-run screen
_MUTATING_METHODS = MUTATING_METHODS
_PANDAS_INPLACE_ONLY = PANDAS_INPLACE_ONLY
_PURE_BUILTINS = PURE_BUILTINS | HIGHER_ORDER_BUILTINS
_DYNAMIC_FUNCS = DYNAMIC_CODE_CALLS - {"compile"} | NAMESPACE_CALLS  # ``compile`` only builds code
_FILE_METHODS = _words(
    """
    system run call check_call check_output Popen urlretrieve download download_file extract
    extractall unpack_archive copy copy2 copyfile copytree move rename replace mkdir makedirs chdir
    symlink link remove unlink rmtree rmdir touch write write_text write_bytes writelines save
    savez savez_compressed savetxt savefig dump to_csv to_excel to_json to_parquet to_pickle
    to_feather to_hdf to_sql to_string to_html to_markdown to_latex to_xml save_weights save_model
    imwrite tofile get_file load_dataset snapshot_download hf_hub_download flow_from_directory cd
    getoutput competition_download_files dataset_download_files
    """
)


_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
    ast.BitAnd: "&", ast.BitXor: "^",
}  # fmt: skip


#: Context managers known to let exceptions through (``__exit__`` returns a false value).
_PASS_THROUGH_CONTEXTS = _words(
    """
    open no_grad enable_grad inference_mode set_grad_enabled autocast GradientTape catch_warnings
    option_context context device name_scope scope TemporaryDirectory NamedTemporaryFile Pool
    ThreadPoolExecutor ProcessPoolExecutor tqdm redirect_stdout redirect_stderr start_run errstate
    printoptions profile record_function ZipFile File Timer timer stream
    """
)


def _never_suppresses(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    parts = _chain_parts(func)
    return parts is not None and parts[-1] in _PASS_THROUGH_CONTEXTS


_MAX_ROW_LABELS = 100


def _row_label(value: Any) -> bool:
    """A row label the probe can look up exactly: str, int or finite float (JSON keeps each type)."""
    if isinstance(value, float):
        return type(value) is float and math.isfinite(value)
    return type(value) in (str, int)


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _chain_parts(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None when not rooted at a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


_LEAVES = (ast.Break, ast.Continue, ast.Return, ast.Raise, ast.Try, ast.Yield, ast.YieldFrom, ast.Await)


def _non_empty(node: ast.expr) -> bool:
    """A ``for`` iterable that certainly yields an item: a non-empty literal, or ``range`` of int literals."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and not any(isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        args = [a.value if isinstance(a, ast.Constant) and type(a.value) is int else None for a in node.args]
        if node.keywords or not 1 <= len(args) <= 3 or None in args:
            return False
        try:
            return len(range(*args)) > 0  # type: ignore[arg-type]
        except ValueError:
            return False
    return False


def _bound_in(body: list[ast.stmt]) -> set[str]:
    """Names a block binds in its own scope (not descending into nested scopes)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            for d in node.decorator_list:
                visit(d)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                out.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            out.add(node.name)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
                for sub in ast.walk(child):
                    if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                        out.add(sub.target.id)
                continue
            visit(child)

    for stmt in body:
        visit(stmt)
    return out


@dataclass
class _Scope:
    kind: str  # "module" | "function" | "class" | "comprehension"
    local: set[str] = field(default_factory=set)
    globals_declared: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)  # module names this (function) scope uses


class _Analyzer:
    def __init__(self, facts: CellFacts, pmap: _PosMap, python: str) -> None:
        self.f = facts
        self.pm = pmap
        self.python = python
        self.py_bytes = [line.encode("utf-8") for line in python.split("\n")]
        self.scopes: list[_Scope] = [_Scope("module")]
        self.bound: set[str] = set()  # module names definitely bound by the cell so far
        self.maybe: set[str] = set()  # module names bound on some path
        self.guard = 0
        self.loop_starts: list[tuple[int, int]] = []
        self.functions: dict[str, set[str]] = {}  # cell-defined function -> module names it uses
        self.stmt_end: tuple[int, int] = (0, 0)
        self.callee: str | None = None  # set while recording what a plain-name call may change

    # -- helpers ------------------------------------------------------------------------------
    @property
    def guarded(self) -> bool:
        return self.guard > 0

    @property
    def in_function(self) -> bool:
        return any(s.kind == "function" for s in self.scopes)

    def text(self, node: ast.AST) -> str:
        """Source of ``node`` (``ast.get_source_segment`` re-splits the whole cell on every call)."""
        lineno, end_lineno = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if lineno is None or end_lineno is None or col is None or end_col is None:
            return ast.unparse(node)
        lines = self.py_bytes[lineno - 1 : end_lineno]
        if not lines:
            return ast.unparse(node)
        if len(lines) == 1:
            return lines[0][col:end_col].decode("utf-8", errors="replace")
        parts = [lines[0][col:], *lines[1:-1], lines[-1][:end_col]]
        return b"\n".join(parts).decode("utf-8", errors="replace")

    def is_global(self, name: str) -> bool:
        """Whether ``name`` at this point resolves to the module (kernel) namespace."""
        innermost = len(self.scopes) - 1
        for i in range(innermost, 0, -1):
            scope = self.scopes[i]
            if name in scope.globals_declared:
                return True
            if scope.kind == "class" and i != innermost:
                continue
            if name in scope.local:
                return False
        return True

    def untrust(self, name: str, pos: tuple[int, int]) -> None:
        if self.in_function:
            return  # runs when called; calls to cell functions untrust what the body uses
        if self.loop_starts:
            pos = min(pos, self.loop_starts[0])
        self.f.trust_events.append(TrustEvent(name, pos, self.callee))
        old = self.f.untrusted_pos.get(name)
        if old is None or pos < old:
            self.f.untrusted_pos[name] = pos
            self.f.untrusted_from[name] = pos[0]

    def end_pos(self, node: ast.AST) -> tuple[int, int]:
        sp = self.pm.span(node)
        return sp.end_line, sp.end_col

    def bind(
        self, name: str, node: ast.AST, value: ast.AST | None = None, pos: tuple[int, int] | None = None
    ) -> None:
        """A Store of ``name`` in the current scope."""
        scope = self.scopes[-1]
        if scope.kind != "module" and name not in scope.globals_declared:
            scope.local.add(name)
            return
        if self.in_function:  # ``global x; x = ...`` inside a function: bound when called
            self.maybe.add(name)
            return
        conditional = self.guarded or bool(self.loop_starts)
        self.f.defines.append(
            Assignment(name, self.pm.span(node), self.text(value) if value is not None else None, conditional)
        )
        if conditional:
            self.maybe.add(name)
        else:
            self.bound.add(name)
        self.untrust(name, pos or self.stmt_end)

    def header(self, node: ast.AST) -> None:
        """A compound statement's header expression: its effects show from its own end on."""
        saved, self.stmt_end = self.stmt_end, self.end_pos(node)
        self.expr(node)
        self.stmt_end = saved

    # -- statements ---------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        self.stmts(tree.body)

    def stmts(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            saved = self.stmt_end
            self.stmt_end = self.end_pos(stmt)
            self.stmt(stmt)
            self.stmt_end = saved

    def guarded_block(self, body: list[ast.stmt]) -> None:
        self.guard += 1
        self.stmts(body)
        self.guard -= 1

    def loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        start = self.pm.span(node)
        self.loop_starts.append((start.line, start.col))
        body_names = _bound_in(node.body)
        if isinstance(node, ast.For | ast.AsyncFor):
            body_names |= _bound_in([ast.Assign(targets=[node.target], value=ast.Constant(None))])
        if not self.in_function:
            for name in body_names:
                if self.is_global(name) and name not in self.bound:
                    self.maybe.add(name)
        if isinstance(node, ast.While):
            self.guard += 1
            self.header(node.test)
            self.guard -= 1
        target_names: set[str] = set()
        if isinstance(node, ast.For | ast.AsyncFor):
            self.store(node.target, None)
            if not self.in_function:
                target_names = {
                    n.id for n in ast.walk(node.target) if isinstance(n, ast.Name) and self.is_global(n.id)
                } - self.bound
        self.bound |= target_names  # inside the body the loop variable is always bound
        head: list[ast.stmt] = []
        if isinstance(node, ast.For) and _non_empty(node.iter):  # the first pass certainly runs ...
            for st in node.body:  # ... up to a statement that could leave it early
                if any(isinstance(n, _LEAVES) for n in ast.walk(st)):
                    break
                head.append(st)
        self.stmts(head)
        self.guarded_block(node.body[len(head) :])
        self.bound -= target_names
        self.loop_starts.pop()
        self.guarded_block(node.orelse)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            self.expr(node.value)
            for target in node.targets:
                self.store(target, node.value if len(node.targets) == 1 else None)
                self.unpack_op(target, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expr(node.value)
                self.store(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self.expr(node.target, aug=True)
            self.expr(node.value)
            self.binop_op(node.op, node.target, node.value, self.pm.span(node), aug=True)
            if isinstance(node.target, ast.Name):
                self.bind(node.target.id, node.target)
            else:
                self.mutate_root(node.target)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self.header(node.iter)
            self.iter_op(node.iter)
            self.unpack_op(node.target, None)
            self.loop(node)
        elif isinstance(node, ast.While):
            self.loop(node)
        elif isinstance(node, ast.If):
            self.header(node.test)
            self.guarded_block(node.body)
            self.guarded_block(node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                self.header(item.context_expr)
                if item.optional_vars is not None:
                    saved, self.stmt_end = self.stmt_end, self.end_pos(item.optional_vars)
                    self.store(item.optional_vars, None)
                    self.stmt_end = saved
            # a context manager may swallow the body's exception (contextlib.suppress, pytest.raises)
            if all(_never_suppresses(item.context_expr) for item in node.items):
                self.stmts(node.body)
            else:
                self.guarded_block(node.body)
        elif isinstance(node, ast.Try | ast.TryStar):
            self.guarded_block(node.body)
            for handler in node.handlers:
                self.guard += 1
                if handler.type is not None:
                    self.expr(handler.type)
                if handler.name:
                    hspan = self.pm.span(handler)
                    self.bind(handler.name, handler, pos=(hspan.line, hspan.col))
                self.stmts(handler.body)
                self.guard -= 1
            self.guarded_block(node.orelse)
            self.stmts(node.finalbody)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.function_def(node)
        elif isinstance(node, ast.ClassDef):
            for d in node.decorator_list:
                self.expr(d)
            for b in node.bases:
                self.expr(b)
            for kw in node.keywords:
                self.expr(kw.value)
            self.scopes.append(_Scope("class"))
            self.stmts(node.body)
            self.scopes.pop()
            self.bind(node.name, node)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.delete(target)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.import_(node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            if isinstance(node, ast.Global):
                self.scopes[-1].globals_declared.update(node.names)
            self.scopes[-1].local.difference_update(node.names)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.guard += 1
                self.expr(node.msg)
                self.guard -= 1
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self.expr(node.exc)
            if node.cause is not None:
                self.expr(node.cause)
        elif isinstance(node, ast.Match):
            self.header(node.subject)
            self.guard += 1
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, ast.MatchAs | ast.MatchStar) and sub.name:
                        self.bind(sub.name, sub)
                    elif isinstance(sub, ast.MatchValue):
                        self.expr(sub.value)
                if case.guard is not None:
                    self.expr(case.guard)
                self.stmts(case.body)
            self.guard -= 1
        else:  # pass, break, continue, type aliases
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.expr(d)
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.expr(default)
        scope = _Scope("function")
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                scope.local.add(a.arg)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Global):
                scope.globals_declared.update(sub.names)
        scope.local |= _bound_in(node.body) - scope.globals_declared
        self.scopes.append(scope)
        self.guard += 1
        self.stmts(node.body)
        self.guard -= 1
        self.scopes.pop()
        if not self.in_function:
            self.functions[node.name] = scope.free | scope.globals_declared
        self.bind(node.name, node)

    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        span = self.pm.span(node)
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.f.imports.append(ImportUse(alias.name, (), alias.asname, span, self.guarded))
                self.bind(alias.asname or alias.name.split(".")[0], node)
        else:
            module = node.module or ""
            names = tuple(a.name for a in node.names)
            self.f.imports.append(ImportUse(module, names, None, span, self.guarded, node.level))
            for alias in node.names:
                if alias.name == "*":
                    self.untrust(UNTRUSTED_ALL, self.stmt_end)
                else:
                    self.bind(alias.asname or alias.name, node)

    # -- stores and deletes -------------------------------------------------------------------
    def store(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, target, value)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self.store(elt, None)
        elif isinstance(target, ast.Starred):
            self.store(target.value, None)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            self.record_chain(target, store=True)
            self.mutate_root(target)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
            self.record_subscript(target, store=True)
            self.mutate_root(target)

    def delete(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if self.is_global(target.id):
                self.read(target)
                if not self.in_function:
                    self.bound.discard(target.id)
                    self.maybe.add(target.id)
                    self.untrust(target.id, self.stmt_end)
            else:
                self.scopes[-1].local.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self.delete(elt)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
            self.record_subscript(target, store=False, is_del=True)
            self.mutate_root(target)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            self.record_chain(target)
            self.mutate_root(target)

    def mutate_root(self, node: ast.AST, pos: tuple[int, int] | None = None) -> None:
        root = node
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
            root = root.value
        if isinstance(root, ast.Name) and self.is_global(root.id):
            if self.in_function:
                self.scopes_function().free.add(root.id)
            self.untrust(root.id, pos or self.stmt_end)

    def scopes_function(self) -> _Scope:
        return next(s for s in reversed(self.scopes) if s.kind == "function")

    # -- expressions --------------------------------------------------------------------------
    def read(self, node: ast.Name) -> None:
        name = node.id
        if not self.is_global(name):
            return
        if self.in_function:
            self.scopes_function().free.add(name)
        if name in self.bound and not self.in_function:
            return
        if name == "get_ipython":
            return
        maybe = name in self.maybe or (self.in_function and name in self.bound)
        self.f.reads.append(NameUse(name, self.pm.span(node), self.guarded, maybe))

    def expr(self, node: ast.AST, aug: bool = False) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) or aug:
                self.read(node)
            return
        if isinstance(node, ast.Attribute):
            self.expr(node.value)
            self.record_chain(node)
            return
        if isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.expr(node.slice)
            self.record_subscript(node, store=False)
            return
        if isinstance(node, ast.Call):
            self.call(node)
            return
        if isinstance(node, ast.BoolOp):
            self.expr(node.values[0])
            self.guard += 1
            for v in node.values[1:]:
                self.expr(v)
            self.guard -= 1
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            self.guard += 1
            self.expr(node.body)
            self.expr(node.orelse)
            self.guard -= 1
            return
        if isinstance(node, ast.NamedExpr):
            self.expr(node.value)
            self.walrus(node)
            return
        if isinstance(node, ast.Lambda):
            self.lambda_(node)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            self.comprehension(node)
            return
        if isinstance(node, ast.BinOp):
            self.expr(node.left)
            self.expr(node.right)
            self.binop_op(node.op, node.left, node.right, self.pm.span(node))
            return
        for child in ast.iter_child_nodes(node):
            self.expr(child)

    def walrus(self, node: ast.NamedExpr) -> None:
        assert isinstance(node.target, ast.Name)
        # in a comprehension the target binds in the enclosing scope
        saved = self.scopes
        idx = len(self.scopes) - 1
        while idx > 0 and self.scopes[idx].kind == "comprehension":
            idx -= 1
        self.scopes = self.scopes[: idx + 1]
        self.guard += int(idx < len(saved) - 1)
        self.bind(node.target.id, node.target, node.value, pos=self.end_pos(node))
        self.guard -= int(idx < len(saved) - 1)
        self.scopes = saved

    def lambda_(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.expr(default)
        scope = _Scope("function")
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                scope.local.add(a.arg)
        self.scopes.append(scope)
        self.guard += 1
        self.expr(node.body)
        self.guard -= 1
        self.scopes.pop()

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        gens = node.generators
        self.expr(gens[0].iter)
        self.iter_op(gens[0].iter)
        scope = _Scope("comprehension")
        for gen in gens:
            for sub in ast.walk(gen.target):
                if isinstance(sub, ast.Name):
                    scope.local.add(sub.id)
        self.scopes.append(scope)
        self.guard += 1
        for i, gen in enumerate(gens):
            if i:
                self.expr(gen.iter)
            for cond in gen.ifs:
                self.expr(cond)
        if isinstance(node, ast.DictComp):
            self.expr(node.key)
            self.expr(node.value)
        else:
            self.expr(node.elt)
        self.guard -= 1
        self.scopes.pop()

    def call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "get_ipython":
            return  # the receiver of a transformed magic; ``ipython_effects`` handles the magic
        self.expr(node.func)
        for arg in node.args:
            self.expr(arg)
        for kw in node.keywords:
            self.expr(kw.value)
        parts = _chain_parts(node.func)
        func_text = ".".join(parts) if parts else self.text(node.func)
        receiver = method = None
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            recv_parts = _chain_parts(node.func.value)
            receiver = ".".join(recv_parts) if recv_parts else None
        args: list[Argument] = []
        for arg in node.args:
            args.append(self.argument(None, arg))
        for kw in node.keywords:
            args.append(self.argument(kw.arg, kw.value, starred=kw.arg is None))
        call = Call(
            func=func_text,
            args=tuple(args),
            span=self.pm.span(node),
            func_span=self.pm.span(node.func),
            receiver=receiver,
            method=method,
            guarded=self.guarded,
            func_is_name=parts is not None,
        )
        if not self.is_ipython(node):
            self.f.calls.append(call)
        self.path_of(call)
        self.call_effects(node, call, parts)

    def is_ipython(self, node: ast.Call) -> bool:
        f = node.func
        return (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name)
            and f.value.func.id == "get_ipython"
        )

    def argument(self, keyword: str | None, node: ast.AST, starred: bool = False) -> Argument:
        if isinstance(node, ast.Starred):
            node, starred = node.value, True
        ok, value = _literal(node)
        parts = _chain_parts(node)
        return Argument(
            keyword=keyword,
            text=self.text(node),
            literal=value if ok else None,
            is_literal=ok,
            name=".".join(parts) if parts else None,
            starred=starred,
            span=self.pm.span(node),
        )

    def path_of(self, call: Call) -> None:
        last = call.func.rsplit(".", 1)[-1]
        is_open = call.func in _OPEN_FUNCS or (call.func == "open")
        if not (is_open or (last in _READER_FUNCS and call.func_is_name)):
            return
        if is_open and call.func in ("open", "io.open", "codecs.open"):
            mode = call.positional()[1] if len(call.positional()) > 1 else call.keyword("mode")
            if mode is not None and (not mode.is_literal or set(str(mode.literal)) & set("wax+")):
                return
        first = call.positional()[0] if call.positional() else None
        if first is None:
            first = next((a for a in call.args if a.keyword in _PATH_KEYWORDS), None)
        if first is None or not first.is_literal or not isinstance(first.literal, str):
            return
        path = first.literal
        if not path or "://" in path or any(ch in path for ch in "*?{"):
            return
        assert first.span is not None
        self.f.paths.append((path, first.span))

    def call_effects(self, node: ast.Call, call: Call, parts: list[str] | None) -> None:
        end = self.end_pos(node)
        if self.is_ipython(node):
            self.ipython_effects(node, end)
            return
        last = parts[-1] if parts else None
        if last in _DYNAMIC_FUNCS and parts is not None and len(parts) == 1:
            self.untrust(UNTRUSTED_ALL, end)
        if last in _FILE_METHODS or (parts and parts[0] in ("os", "shutil", "subprocess")):
            self.untrust(UNTRUSTED_FILES, end)
        if call.func in ("open", "io.open"):
            mode = call.positional()[1] if len(call.positional()) > 1 else call.keyword("mode")
            if mode is not None and (not mode.is_literal or set(str(mode.literal)) & set("wax+")):
                self.untrust(UNTRUSTED_FILES, end)
        # a method that changes its receiver
        if isinstance(node.func, ast.Attribute) and last is not None:
            inplace = call.keyword("inplace")
            mutates = (
                (last in _MUTATING_METHODS and last not in _PANDAS_INPLACE_ONLY)
                or (last.endswith("_") and not last.startswith("_"))
                or (inplace is not None and not (inplace.is_literal and inplace.literal is False))
            )
            if mutates:
                self.mutate_root(node.func.value, end)
            if last in ("shuffle", "seed") or (last.endswith("_") and not last.startswith("_")):
                for arg in node.args:
                    self.mutate_root(arg, end)
        # a call we cannot follow may change its arguments
        if isinstance(node.func, ast.Name):
            name = node.func.id
            if name not in _PURE_BUILTINS or not self.is_global(name):
                # a library function leaves its arguments alone; which callee is one, only the
                # snapshot can tell (``CellFacts.refined``), so the event remembers the callee
                known = self.is_global(name) and name not in self.functions and name not in _MUTATING_METHODS
                self.callee = name if known else None
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    self.mutate_root_of_arg(arg, end)
                if name not in _PURE_BUILTINS and name not in _DYNAMIC_FUNCS:
                    self.callee = self.callee if name not in _FILE_METHODS else None
                    self.untrust(UNTRUSTED_FILES, end)
                self.callee = None
            if name in self.functions and not self.in_function:
                for used in self.functions[name]:
                    self.untrust(used, end)
            if name == "next":
                for arg in node.args:
                    self.mutate_root_of_arg(arg, end)

    def mutate_root_of_arg(self, arg: ast.AST, pos: tuple[int, int]) -> None:
        if isinstance(arg, ast.List | ast.Tuple | ast.Set):
            for elt in arg.elts:
                self.mutate_root_of_arg(elt, pos)
        elif isinstance(arg, ast.Dict):
            for v in arg.values:
                self.mutate_root_of_arg(v, pos)
        else:
            self.mutate_root(arg, pos)

    def ipython_effects(self, node: ast.Call, end: tuple[int, int]) -> None:
        assert isinstance(node.func, ast.Attribute)
        kind = node.func.attr
        magic = ""
        if node.args and isinstance(node.args[0], ast.Constant):
            magic = str(node.args[0].value)
        args_text = ""
        if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            args_text = str(node.args[1].value)
        if kind in ("system", "getoutput"):
            self.untrust(UNTRUSTED_FILES, end)
            first = magic.split()[:2]
            if first and (first[0] in _MODULE_LINE_MAGICS or first[0].startswith("pip")):
                self.untrust(UNTRUSTED_MODULES, end)
            if first and first[0] in ("python", "python3", "ipython"):
                self.untrust(UNTRUSTED_ALL, end)
        elif kind == "run_line_magic":
            if magic in _MODULE_LINE_MAGICS:
                self.untrust(UNTRUSTED_MODULES, end)
                self.untrust(UNTRUSTED_FILES, end)
            elif magic in _FILE_LINE_MAGICS:
                self.untrust(UNTRUSTED_FILES, end)
            elif magic not in _HARMLESS_LINE_MAGICS:
                self.untrust(UNTRUSTED_ALL, end)
                self.untrust(UNTRUSTED_FILES, end)
            elif magic in ("time", "timeit", "prun") and args_text.strip():
                self.untrust(UNTRUSTED_ALL, end)  # the timed statement runs in the namespace
        else:
            self.untrust(UNTRUSTED_ALL, end)
            self.untrust(UNTRUSTED_FILES, end)

    # -- facts --------------------------------------------------------------------------------
    def record_chain(self, node: ast.Attribute, store: bool = False) -> None:
        parts = _chain_parts(node)
        if parts is None or not self.is_global(parts[0]):
            return
        # only the outermost chain of a nested a.b.c is recorded (the visitor sees a.b first)
        span = self.pm.span(node)
        end_line, end_col = span.end_line, span.end_col
        attr_span = Span(end_line, max(end_col - len(node.attr), 0), end_line, end_col)
        chain = AttributeChain(parts[0], tuple(parts[1:]), span, attr_span, self.guarded, store)
        if self.f.chains:
            prev = self.f.chains[-1]
            if (
                prev.base == chain.base
                and chain.attrs[: len(prev.attrs)] == prev.attrs
                and (prev.span.line, prev.span.col) == (span.line, span.col)
                and not prev.is_store
            ):
                self.f.chains[-1] = chain
                return
        self.f.chains.append(chain)

    def record_subscript(self, node: ast.Subscript, store: bool, is_del: bool = False) -> None:
        ok, key = _literal(node.slice)
        if not ok:
            return
        value = node.value
        accessor = None
        if isinstance(value, ast.Attribute) and value.attr in ("loc", "iloc", "at", "iat"):
            accessor = value.attr
            value = value.value
        target = self.target_text(value)
        if target is None or not self.is_global(target.split(".", 1)[0].split("[", 1)[0]):
            return
        self.f.subscripts.append(
            Subscript(
                target=target,
                key=key,
                span=self.pm.span(node),
                key_span=self.pm.span(node.slice),
                accessor=accessor,
                is_store=store,
                guarded=self.guarded,
                is_del=is_del,
            )
        )

    def target_text(self, node: ast.AST) -> str | None:
        parts = _chain_parts(node)
        if parts is not None:
            return ".".join(parts)
        if isinstance(node, ast.Subscript):
            inner = self.target_text(node.value)
            ok, key = _literal(node.slice)
            if inner is not None and ok:
                return f"{inner}[{key!r}]"
        return None

    def operand(self, node: ast.AST) -> Argument | None:
        ok, _ = _literal(node)
        if ok or _chain_parts(node) is not None:
            return self.argument(None, node)
        return None

    def binop_op(
        self, op: ast.operator, left: ast.AST, right: ast.AST, span: Span, aug: bool = False
    ) -> None:
        lhs, rhs = self.operand(left), self.operand(right)
        if lhs is None and rhs is None:
            return
        sym = _OPERATORS.get(type(op), "?") + ("=" if aug else "")
        self.f.operations.append(Operation("binop", span, sym, lhs, rhs, None, self.guarded))

    def iter_op(self, node: ast.AST) -> None:
        arg = self.operand(node)
        if arg is not None:
            self.f.operations.append(Operation("iter", self.pm.span(node), left=arg, guarded=self.guarded))

    def unpack_op(self, target: ast.AST, value: ast.AST | None) -> None:
        if not isinstance(target, ast.Tuple | ast.List) or value is None:
            return
        arg = self.operand(value)
        if arg is None:
            return
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        self.f.operations.append(
            Operation(
                "unpack",
                self.pm.span(value),
                left=arg,
                n_targets=None if starred else len(target.elts),
                guarded=self.guarded,
            )
        )


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------


def _split_cell_magic(source: str) -> tuple[str | None, int]:
    """The cell magic name and the line its body starts on (``%%time`` -> ("time", 1))."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("%%"):
            name = stripped[2:].split(maxsplit=1)[0] if len(stripped) > 2 else ""
            return name, i + 1
        return None, 0
    return None, 0


def analyze(source: str) -> CellFacts:
    """Parse ``source`` (magics allowed) into ``CellFacts``; never raises on bad code."""
    try:
        return _analyze(source)
    except Exception:  # a bug here must not take the server down: no facts, and everything untrusted
        _log.exception("cell analysis failed")
        facts = CellFacts(source=source, python=source, analyzed=False)
        for key in (UNTRUSTED_ALL, UNTRUSTED_FILES, UNTRUSTED_MODULES):
            facts.untrust_from_start(key)
        return facts


def _analyze(source: str) -> CellFacts:
    original_lines = source.split("\n")
    magic, body_start = _split_cell_magic(source)
    if magic is not None:
        if magic not in _PYTHON_CELL_MAGICS:
            facts = CellFacts(source=source, python=_safe_transform(source), magic=magic, analyzed=False)
            facts.untrust_from_start(UNTRUSTED_FILES)
            if magic not in ("markdown", "html", "latex", "javascript", "js", "svg", "md"):
                facts.untrust_from_start(UNTRUSTED_ALL)
            return facts
        body = "\n".join(original_lines[body_start:])
        parse_text = _safe_transform(body)
        python = "\n" * body_start + parse_text
        pmap = _PosMap(original_lines, parse_text.split("\n"), body_start)
    else:
        python = parse_text = _safe_transform(source)
        pmap = _PosMap(original_lines, python.split("\n"))
    facts = CellFacts(source=source, python=python, magic=magic)
    try:
        tree = ast.parse(parse_text)
    except SyntaxError as exc:
        facts.syntax_error = f"{type(exc).__name__}: {exc.msg}"
        lineno = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        end_lineno = exc.end_lineno or lineno
        end_col = (
            max((exc.end_offset or 0) - 1, col + 1) if end_lineno == lineno else (exc.end_offset or 1) - 1
        )
        facts.syntax_error_span = pmap.char_span(lineno, col, end_lineno, max(end_col, 0))
        return facts
    except (ValueError, RecursionError, MemoryError) as exc:
        facts.syntax_error = f"{type(exc).__name__}: {exc}"
        facts.syntax_error_span = Span(0, 0, 0, len(original_lines[0]) if original_lines else 0)
        return facts
    analyzer = _Analyzer(facts, pmap, parse_text)
    analyzer.run(tree)
    return facts


def _safe_transform(source: str) -> str:
    """Magics -> Python. Text that already parses as Python is left as it is (IPython would not change
    it), which skips IPython's token passes: they cost seconds on a cell of thousands of lines."""
    try:
        ast.parse(source)
        return source
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        return _transform(source)
    except Exception:  # IPython rejects some malformed magics; parse the text as it is
        return source
