"""Certain Python-level crashes: names, attributes, imports, signatures, files, keys, types.

Every check here reads only facts the kernel snapshot proves, at positions where the cell cannot
have changed them yet (``CellFacts.is_trusted``), in code that certainly runs (not ``guarded``).
Anything unknown means silence. Values are compared by exact builtin or library type names, so a
user subclass (a ``defaultdict``, a callable ``list`` subclass) never counts as the plain type.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import operator
from collections.abc import Callable
from typing import Any

from crane_lsp.analysis.facts import (
    UNTRUSTED_ALL,
    UNTRUSTED_FILES,
    UNTRUSTED_MODULES,
    Argument,
    Call,
    CellFacts,
)
from crane_lsp.analysis.kinds import CALLABLES, Kind, Op
from crane_lsp.analysis.positions import Span
from crane_lsp.checks.registry import Finding, check
from crane_lsp.snapshot import ObjectSummary, Snapshot

_BUILTINS = frozenset(dir(builtins))
_BUNCH = "sklearn.utils._bunch.Bunch"


# ------------------------------------------------------------------------------------------------
# Helpers: what the kernel proves about an expression at a position
# ------------------------------------------------------------------------------------------------


def root_name(text: str) -> str:
    return text.split(".", 1)[0].split("[", 1)[0]


def kernel_value(facts: CellFacts, snap: Snapshot, text: str, at: Span) -> ObjectSummary | None:
    """The snapshot's summary of ``text`` (a name, chain or literal subscript) if still valid at ``at``."""
    if not facts.is_trusted(root_name(text), at):
        return None
    summary = snap.variables.get(text)
    if summary is None or summary.kind == Kind.ERROR:
        return None
    return summary


def type_name(summary: ObjectSummary) -> str:
    """The summary's exact type, module-qualified (the probe writes builtins bare: ``dict``)."""
    return summary.type if "." in summary.type else f"builtins.{summary.type}"


def operand_value(facts: CellFacts, snap: Snapshot, arg: Argument) -> tuple[bool, Any, ObjectSummary | None]:
    """(known, literal value, summary) of a literal or name/chain operand."""
    if arg.is_literal:
        return True, arg.literal, None
    if arg.name is not None and arg.span is not None:
        summary = kernel_value(facts, snap, arg.name, arg.span)
        return summary is not None, None, summary
    return False, None, None


#: Exact type names of values that are certainly not callable.
_NOT_CALLABLE_TYPES = frozenset(
    {
        "builtins.NoneType",
        "builtins.int",
        "builtins.float",
        "builtins.bool",
        "builtins.complex",
        "builtins.str",
        "builtins.bytes",
        "builtins.list",
        "builtins.tuple",
        "builtins.dict",
        "builtins.set",
        "builtins.frozenset",
        "builtins.module",
        "numpy.ndarray",
        "pandas.core.frame.DataFrame",
        "pandas.core.series.Series",
        "pandas.core.indexes.base.Index",
        "pandas.core.indexes.range.RangeIndex",
        "pandas.DataFrame",  # pandas 3 names its classes by their public module
        "pandas.Series",
        "pandas.Index",
        "pandas.RangeIndex",
        "torch.Tensor",
        "torch.Size",
    }
)

#: Properties of library types that hold plain data (calling them raises TypeError).
_DATA_PROPERTIES: dict[str, frozenset[str]] = {
    "pandas.core.frame.DataFrame": frozenset(
        {"shape", "columns", "index", "values", "dtypes", "size", "ndim", "T", "empty", "axes"}
    ),
    "pandas.core.series.Series": frozenset(
        {"shape", "index", "values", "dtype", "size", "ndim", "T", "empty", "axes", "nbytes"}
    ),
    "numpy.ndarray": frozenset({"shape", "dtype", "size", "ndim", "T", "nbytes", "itemsize", "strides"}),
}
_DATA_PROPERTIES["pandas.DataFrame"] = _DATA_PROPERTIES["pandas.core.frame.DataFrame"]  # pandas 3
_DATA_PROPERTIES["pandas.Series"] = _DATA_PROPERTIES["pandas.core.series.Series"]


def _type_label(summary: ObjectSummary) -> str:
    return type_name(summary).rsplit(".", 1)[-1]


def _finding(check_id: str, exception: str, span: Span, message: str, **kw: Any) -> Finding:
    return Finding(check_id=check_id, exception=exception, span=span, message=message, **kw)


# ------------------------------------------------------------------------------------------------
# Syntax
# ------------------------------------------------------------------------------------------------


@check("python.syntax")
def syntax_error(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """A cell that does not parse raises before any line runs."""
    if not facts.syntax_error or facts.syntax_error_span is None:
        return []
    exception = facts.syntax_error.split(":", 1)[0]
    if exception not in ("SyntaxError", "IndentationError", "TabError"):
        return []
    return [_finding("python.syntax", exception, facts.syntax_error_span, facts.syntax_error)]


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------


@check("python.undefined-name")
def undefined_name(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """A name neither in the kernel nor bound by the cell before it runs -> NameError."""
    undefined = set(snap.undefined)
    out: list[Finding] = []
    for use in facts.reads:
        if use.guarded or use.maybe_bound or use.name not in undefined or use.name in _BUILTINS:
            continue
        if not facts.is_trusted(use.name, use.span):
            continue
        later = facts.defined_before(use.name, (10**9, 0))
        hint = " (the cell assigns it only later)" if later else ""
        out.append(
            _finding(
                "python.undefined-name",
                "NameError",
                use.span,
                f"name '{use.name}' is not defined in the kernel{hint}",
                evidence=(("kernel namespace", f"no variable '{use.name}'"),),
                variables=(use.name,),
            )
        )
        break  # the first one stops the cell
    return out


# ------------------------------------------------------------------------------------------------
# Attributes
# ------------------------------------------------------------------------------------------------


@check("python.missing-attribute")
def missing_attribute(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``np.float``, ``df.append`` on pandas 2, ``None.x``: the probe proved the attribute absent."""
    out: list[Finding] = []
    for chain in facts.chains:
        if chain.guarded or not facts.is_trusted(chain.base, chain.span):
            continue
        attrs = chain.attrs[:-1] if chain.is_store else chain.attrs
        for i in range(1, len(attrs) + 1):
            text = ".".join((chain.base, *attrs[:i]))
            fact = snap.attributes.get(text)
            if fact is None or fact.exists is None:
                break
            if fact.exists:
                continue
            if fact.dynamic and fact.owner_type == _BUNCH:
                break  # a Bunch's missing key: python.bunch-attribute names its keys
            owner = fact.owner_type or "the object"
            owner_text = ".".join((chain.base, *attrs[: i - 1]))
            last = i == len(chain.attrs)
            span = chain.attr_span if last else chain.span
            if fact.owner_kind == Kind.NONE:
                message = f"'{owner_text}' is None, so it has no attribute '{attrs[i - 1]}'"
            elif fact.owner_kind == Kind.MODULE:
                message = f"module '{owner_text}' has no attribute '{attrs[i - 1]}'"
            else:
                message = f"'{owner_text}' ({owner.rsplit('.', 1)[-1]}) has no attribute '{attrs[i - 1]}'"
            versions = snap.versions.packages if snap.versions else {}
            lib = owner.split(".", 1)[0]
            evidence: list[tuple[str, str]] = [(f"type({owner_text})", owner)]
            if lib in versions:
                evidence.append((f"{lib} version", versions[lib]))
            unproven = ""
            if fact.hook:  # a PEP 562 hook that does not mention the name: not run, so not proof
                evidence.append(("served by", f"{fact.hook} (PEP 562; not run by the probe)"))
                unproven = f"{fact.hook} (PEP 562) was not run; it could still serve '{attrs[i - 1]}'"
            out.append(
                _finding(
                    "python.missing-attribute",
                    "AttributeError",
                    span,
                    message,
                    evidence=tuple(evidence),
                    variables=(chain.base,),
                    unproven_hook=unproven,
                )
            )
            break
    return out


# ------------------------------------------------------------------------------------------------
# Imports
# ------------------------------------------------------------------------------------------------


@check("python.missing-module")
def missing_module(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``import x`` / ``from x import y`` where the kernel's environment has no module ``x``."""
    out: list[Finding] = []
    for imp in facts.imports:
        if imp.guarded or imp.level or not imp.module:
            continue
        at = imp.span
        if not (facts.is_trusted(UNTRUSTED_MODULES, at) and facts.is_trusted(UNTRUSTED_FILES, at)):
            continue
        if not facts.is_trusted("sys", at):  # sys.path.append(...) earlier in the cell
            continue
        parts = imp.module.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            found = snap.modules.get(name)
            if found is None:
                break
            if found:
                continue
            top = name == parts[0]
            message = f"No module named '{name}'" + (
                "" if top else f" ('{parts[0]}' has no submodule '{parts[i - 1]}')"
            )
            versions = snap.versions.packages if snap.versions else {}
            evidence: list[tuple[str, str]] = [("importable in the kernel", f"{name}: no")]
            if parts[0] in versions:
                evidence.append((f"{parts[0]} version", versions[parts[0]]))
            out.append(
                _finding(
                    "python.missing-module",
                    "ModuleNotFoundError",
                    imp.span,
                    message,
                    evidence=tuple(evidence),
                )
            )
            return out
    return out


# ------------------------------------------------------------------------------------------------
# Calls: signatures and callability
# ------------------------------------------------------------------------------------------------


def _signature(summary: ObjectSummary) -> inspect.Signature | None:
    if not summary.params:
        return None
    try:
        params = [
            inspect.Parameter(
                p.name,
                getattr(inspect.Parameter, p.kind),
                default=None if p.has_default else inspect.Parameter.empty,
            )
            for p in summary.params
        ]
        return inspect.Signature(params)
    except (ValueError, TypeError):
        return None


@check("python.call-signature")
def call_signature(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """A call whose arguments the callee's signature rejects (too many, unknown keyword, missing)."""
    out: list[Finding] = []
    imported = facts.imported_names()
    for call in facts.calls:
        if call.guarded or not call.func_is_name or any(a.starred for a in call.args):
            continue
        summary = kernel_value(facts, snap, call.func, call.func_span)
        if summary is None:
            summary = imported_value(facts, snap, imported, call.func, call.func_span)
        if summary is None or summary.kind not in CALLABLES:
            continue
        sig = _signature(summary)
        if sig is None:
            continue
        positional = [object() for a in call.args if a.keyword is None]
        keywords = {a.keyword: object() for a in call.args if a.keyword is not None}
        try:
            sig.bind(*positional, **keywords)
        except TypeError as exc:
            out.append(
                _finding(
                    "python.call-signature",
                    "TypeError",
                    call.span,
                    f"{call.func}{summary.signature or ''} rejects these arguments: {exc}"
                    + _did_you_mean(exc, sig),
                    evidence=((f"signature of {call.func}", summary.signature or str(sig)),),
                    variables=(root_name(call.func),),
                )
            )
    return out


def imported_value(
    facts: CellFacts, snap: Snapshot, imported: dict[str, str], text: str, at: Span
) -> ObjectSummary | None:
    """The summary of ``text`` (``RandomForestClassifier``, ``svm.SVC``) whose root the cell binds by an
    import before ``at`` (``CellFacts.imported_names``): the probe read it from the module the kernel has
    loaded (``@sklearn.ensemble.RandomForestClassifier``); None when the module is not loaded there, or when
    code the analysis cannot follow (``exec``, ``%pip``) may run between the import and ``at``."""
    root = root_name(text)
    chain = imported.get(root)
    if chain is None or "[" in text:
        return None
    define = next((d for d in facts.defines if d.name == root), None)
    pos = (at.line, at.col)
    if define is None or (define.span.line, define.span.col) >= pos:
        return None
    for key in (UNTRUSTED_ALL, UNTRUSTED_MODULES):
        limit = facts.untrusted_pos.get(key)
        if limit is not None and limit <= pos:
            return None
    summary = snap.variables.get(chain + text[len(root) :])
    return summary if summary is not None and summary.kind != Kind.ERROR else None


def _did_you_mean(exc: TypeError, sig: inspect.Signature) -> str:
    """``; did you mean 'n_estimators'?`` for an unknown keyword close to a parameter's name."""
    text = str(exc)
    if "unexpected keyword argument" not in text:
        return ""
    word = text.rsplit("'", 2)[-2] if text.count("'") >= 2 else ""
    names = [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    close = difflib.get_close_matches(word, names, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


@check("python.not-callable")
def not_callable(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """Calling data: ``df.shape()``, ``x()`` where ``x`` is an int, list, frame, module."""
    out: list[Finding] = []
    for call in facts.calls:
        if call.guarded or not call.func_is_name:
            continue
        if not facts.is_trusted(root_name(call.func), call.func_span):
            continue
        summary = kernel_value(facts, snap, call.func, call.func_span)
        label: str | None = None
        if summary is not None and type_name(summary) in _NOT_CALLABLE_TYPES:
            if summary.callable:
                continue
            label = "module" if summary.kind == Kind.MODULE else _type_label(summary)
        elif "." in call.func:
            owner, attr = call.func.rsplit(".", 1)
            fact = snap.attributes.get(call.func)
            owner_summary = kernel_value(facts, snap, owner, call.func_span)
            owner_type = (fact.owner_type if fact is not None else None) or (
                type_name(owner_summary) if owner_summary else None
            )
            if (
                fact is not None
                and fact.exists
                and owner_type in _DATA_PROPERTIES
                and attr in _DATA_PROPERTIES[owner_type]
            ):
                label = f"the {attr} property of {owner_type.rsplit('.', 1)[-1]}"
        if label is None:
            continue
        out.append(
            _finding(
                "python.not-callable",
                "TypeError",
                call.span,
                f"'{call.func}' is not callable ({label})",
                evidence=((f"type({call.func})", type_name(summary) if summary else label),),
                variables=(root_name(call.func),),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------

#: Readers that raise FileNotFoundError on a missing path: (module or None for a builtin, function).
_FILE_READERS = {
    (None, "open"),
    ("io", "open"),
    ("pandas", "read_csv"),
    ("pandas", "read_table"),
    ("pandas", "read_excel"),
    ("pandas", "read_json"),
    ("pandas", "read_parquet"),
    ("pandas", "read_pickle"),
    ("pandas", "read_feather"),
    ("numpy", "load"),
    ("numpy", "loadtxt"),
    ("numpy", "genfromtxt"),
    ("os", "listdir"),
    ("os", "scandir"),
    ("PIL.Image", "open"),
    ("torch", "load"),
    ("joblib", "load"),
}


def module_of(facts: CellFacts, snap: Snapshot, name: str, at: Span) -> str | None:
    """The module a name refers to at ``at``: a cell import before it, or a kernel module variable."""
    for imp in reversed(facts.imports):
        if (imp.span.line, imp.span.col) >= (at.line, at.col) or imp.guarded:
            continue
        if not imp.names and (imp.alias or imp.module.split(".")[0]) == name:
            return imp.module if imp.alias else imp.module.split(".")[0]
        if imp.names and name in imp.names and imp.level == 0:
            return f"{imp.module}.{name}"
    summary = kernel_value(facts, snap, name, at)
    if summary is not None and summary.kind == Kind.MODULE:
        return summary.module
    return None


def _reader(facts: CellFacts, snap: Snapshot, call: Call) -> tuple[str | None, str] | None:
    if not call.func_is_name:
        return None
    parts = call.func.split(".")
    if len(parts) == 1:
        if parts[0] != "open" or facts.defined_before("open", call.span) or "open" in snap.undefined:
            return None
        kernel_open = snap.variables.get("open")  # IPython puts a wrapper of io.open in user_ns
        if kernel_open is not None and not (kernel_open.signature or "").startswith("(file, mode="):
            return None  # a user variable shadows the builtin
        return (None, "open")
    module = module_of(facts, snap, parts[0], call.func_span)
    if module is None:
        return None
    full = ".".join([module, *parts[1:-1]])
    key = (full, parts[-1])
    return key if key in _FILE_READERS else None


@check("python.missing-file")
def missing_file(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """A literal path given to a reader does not exist relative to the kernel's working directory."""
    out: list[Finding] = []
    for path, span in facts.paths:
        if snap.paths.get(path) is not False or not facts.is_trusted(UNTRUSTED_FILES, span):
            continue
        call = next((c for c in facts.calls if any(a.span == span for a in c.args)), None)
        if call is None or call.guarded:
            continue
        if _reader(facts, snap, call) is None:
            continue
        out.append(
            _finding(
                "python.missing-file",
                "FileNotFoundError",
                span,
                f"No such file or directory: '{path}' (relative to {snap.cwd or 'the kernel directory'})",
                evidence=(
                    ("kernel working directory", snap.cwd or "unknown"),
                    (f"exists({path!r})", "False"),
                ),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# Keys and indexes of plain containers
# ------------------------------------------------------------------------------------------------


#: dict types whose ``[key]`` raises KeyError exactly when the key is absent (scikit-learn's ``Bunch`` only
#: warns on a deprecated key first); a user subclass may define ``__missing__``, so only these exact types.
PLAIN_MAPPINGS = frozenset({"builtins.dict", "collections.OrderedDict", "sklearn.utils._bunch.Bunch"})


def dict_keys(summary: ObjectSummary) -> list[Any] | None:
    """Every key of a plain dict, parsed; None when capped or any key is not a literal."""
    if type_name(summary) not in PLAIN_MAPPINGS or summary.keys is None:
        return None
    if summary.length is None or len(summary.keys) != summary.length:
        return None
    out: list[Any] = []
    for text in summary.keys:
        try:
            out.append(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return out


@check("python.missing-key")
def missing_key(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``d['k']`` on a dict without the key -> KeyError; ``xs[9]`` past a list's end -> IndexError."""
    out: list[Finding] = []
    for sub in facts.subscripts:
        if sub.guarded or sub.is_store or sub.accessor is not None:
            continue
        summary = kernel_value(facts, snap, sub.target, sub.span)
        if summary is None:
            continue
        keys = dict_keys(summary)
        if keys is not None:
            try:
                present = sub.key in keys
            except TypeError:
                continue
            if present:
                continue
            shown = ", ".join(summary.keys or [])
            out.append(
                _finding(
                    "python.missing-key",
                    "KeyError",
                    sub.key_span,
                    f"{sub.target} has no key {sub.key!r}",
                    evidence=((f"{sub.target}.keys()", f"[{shown}]"),),
                    variables=(sub.base,),
                )
            )
            continue
        if (
            type_name(summary) in ("builtins.list", "builtins.tuple")
            and summary.length is not None
            and type(sub.key) is int
            and not -summary.length <= sub.key < summary.length
        ):
            out.append(
                _finding(
                    "python.missing-key",
                    "IndexError",
                    sub.key_span,
                    f"{sub.target} has {summary.length} items, so index {sub.key} is out of range",
                    evidence=((f"len({sub.target})", str(summary.length)),),
                    variables=(sub.base,),
                )
            )
    return out


# ------------------------------------------------------------------------------------------------
# Iteration, unpacking, operators
# ------------------------------------------------------------------------------------------------

_SCALAR_TYPES = {
    "builtins.NoneType": None,
    "builtins.int": 2,
    "builtins.float": 2.0,
    "builtins.bool": True,
    "builtins.complex": 2j,
}
_CONTAINER_REPS: dict[str, Callable[[], Any]] = {
    "builtins.str": lambda: "s",
    "builtins.list": lambda: [1],
    "builtins.tuple": lambda: (1,),
    "builtins.dict": lambda: {1: 1},
    "builtins.set": lambda: {1},
}


def _representative(known: bool, literal: Any, summary: ObjectSummary | None) -> tuple[bool, Any]:
    """A stand-in value of the same builtin type (type errors between builtins do not depend on values)."""
    if not known:
        return False, None
    if summary is None:
        return True, literal
    if type_name(summary) in _SCALAR_TYPES:
        return True, _SCALAR_TYPES[type_name(summary)]
    if type_name(summary) in _CONTAINER_REPS:
        return True, _CONTAINER_REPS[type_name(summary)]()
    return False, None


def _number_value(known: bool, literal: Any, summary: ObjectSummary | None) -> tuple[bool, Any]:
    """The exact value of a builtin number (literal or kernel int/float/bool)."""
    if not known:
        return False, None
    if summary is None:
        return (True, literal) if type(literal) in (int, float, bool, complex) else (False, None)
    numeric = type_name(summary) in ("builtins.int", "builtins.float", "builtins.bool")
    if numeric and summary.value is not None:
        try:
            value = ast.literal_eval(summary.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None
        if type(value) in (int, float, bool):
            return True, value
    return False, None


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "<<": operator.lshift, ">>": operator.rshift, "|": operator.or_, "&": operator.and_, "^": operator.xor,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
    "<<=": operator.ilshift, ">>=": operator.irshift, "|=": operator.ior, "&=": operator.iand,
    "^=": operator.ixor,
}  # fmt: skip


def _describe(arg: Argument, summary: ObjectSummary | None) -> str:
    if summary is None:
        return f"{arg.text} ({type(arg.literal).__name__})"
    return f"{arg.text} ({_type_label(summary)})"


@check("python.operator-type")
def operator_type(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``None + 1``, ``'a' - 1``, ``x / 0``: operators on known builtin values that always raise."""
    out: list[Finding] = []
    for op in facts.operations:
        if op.kind != Op.BINOP or op.guarded or op.left is None or op.right is None or op.op not in _BINOPS:
            continue
        lk, llit, lsum = operand_value(facts, snap, op.left)
        rk, rlit, rsum = operand_value(facts, snap, op.right)
        if not (lk and rk):
            continue
        base_op = op.op.rstrip("=")
        # division by zero: needs the exact numbers
        lnum, lval = _number_value(lk, llit, lsum)
        rnum, rval = _number_value(rk, rlit, rsum)
        if base_op in ("/", "//", "%") and lnum and rnum and rval == 0 and type(lval) is not complex:
            out.append(
                _finding(
                    "python.operator-type",
                    "ZeroDivisionError",
                    op.span,
                    f"{op.right.text} is zero, so {op.left.text} {base_op} {op.right.text} divides by zero",
                    evidence=((op.right.text, repr(rval)),),
                    variables=tuple(a.name for a in (op.left, op.right) if a.name),
                )
            )
            continue
        lrep_ok, lrep = _representative(lk, llit, lsum)
        rrep_ok, rrep = _representative(rk, rlit, rsum)
        if not (lrep_ok and rrep_ok):
            continue
        if base_op == "%" and isinstance(lrep, str | bytes):
            continue  # string formatting depends on the values
        try:
            _BINOPS[op.op](lrep, rrep)
        except TypeError as exc:
            out.append(
                _finding(
                    "python.operator-type",
                    "TypeError",
                    op.span,
                    f"{_describe(op.left, lsum)} {base_op} {_describe(op.right, rsum)}: {exc}",
                    evidence=tuple(
                        (f"type({a.text})", type_name(s))
                        for a, s in ((op.left, lsum), (op.right, rsum))
                        if s is not None
                    ),
                    variables=tuple(a.name for a in (op.left, op.right) if a.name),
                )
            )
        except Exception:  # overflow and value errors depend on the values: not our business
            continue
    return out


_NOT_ITERABLE = frozenset(
    {"builtins.NoneType", "builtins.int", "builtins.float", "builtins.bool", "builtins.complex"}
)
_SIZED = frozenset({"builtins.list", "builtins.tuple", "builtins.dict", "builtins.set"})


@check("python.iterate")
def iterate(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """Iterating or unpacking None or a number (TypeError); unpacking a container of the wrong length."""
    out: list[Finding] = []
    for op in facts.operations:
        if op.kind not in (Op.ITER, Op.UNPACK) or op.guarded or op.left is None:
            continue
        known, literal, summary = operand_value(facts, snap, op.left)
        if not known:
            continue
        tname = type_name(summary) if summary is not None else f"builtins.{type(literal).__name__}"
        label = tname.rsplit(".", 1)[-1]
        variables = (root_name(op.left.name),) if op.left.name else ()
        if tname in _NOT_ITERABLE:
            what = "unpack" if op.kind == Op.UNPACK else "iterate over"
            out.append(
                _finding(
                    "python.iterate",
                    "TypeError",
                    op.span,
                    f"cannot {what} {op.left.text}: '{label}' object is not iterable",
                    evidence=((f"type({op.left.text})", tname),),
                    variables=variables,
                )
            )
            continue
        if op.kind == Op.UNPACK and op.n_targets is not None:
            length = summary.length if summary is not None else None
            if summary is None and isinstance(literal, list | tuple | dict | set):
                length = len(literal)
            if length is None or (summary is not None and type_name(summary) not in _SIZED):
                continue
            if length != op.n_targets:
                detail = "too many values" if length > op.n_targets else "not enough values"
                out.append(
                    _finding(
                        "python.iterate",
                        "ValueError",
                        op.span,
                        f"{detail} to unpack: {op.left.text} has {length} items, {op.n_targets} targets",
                        evidence=((f"len({op.left.text})", str(length)),),
                        variables=variables,
                    )
                )
    return out
