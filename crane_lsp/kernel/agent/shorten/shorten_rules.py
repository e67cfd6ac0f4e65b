"""When two shortened runs' crash is the full run's crash: STANDARD LIBRARY ONLY.

Joined before ``shorten.py`` (the kernel ends a full run early only for a crash these rules trust)
and imported alone by the client (``crane_lsp/dryrun/shortened.py`` turns the runs into the verdict), so
both sides apply the same rules. A run is the child's answer as a plain dict: ``exception``,
``message``, ``line``, and ``shortened`` (``rows``/``params``/``loops``/``sizes``/``calls``/
``failure``/``extrapolated``).

The verdict follows what the shortening changed (``shorten_flow.py``), not the kind of exception:
a failing line that reads nothing the run sampled, cut short or lowered fails in the full run too; one
that reads what a loop cut short carried from the skipped iterations is no verdict; one that reads
sampled data is decided by re-running its failing operation at the full size on shapes alone
(``shorten_extrapolate.py``, in the child). Only where none of that decides do the older rules about
classes and message words below still answer, as a last fallback.
"""

import re as _shr_re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel it is joined before this module
    from crane_lsp.kernel.agent.shorten.shorten_flow import _shf_dependence, _shf_merged
try:
    _shf_dependence  # noqa: B018 - joined before this module in the kernel
except NameError:  # imported alone by the client
    from crane_lsp.kernel.agent.shorten.shorten_flow import _shf_dependence, _shf_merged

#: Failures whose message names the reason a sample can cause: too few rows or classes for a
#: parameter, empty selections, reshapes and sizes. Matched case-insensitively.
_SHR_SENSITIVE = _shr_re.compile(
    r"n_samples|n_splits|n_neighbors|n_components|n_clusters|perplexity|least populated|class|"
    r"sample\(s\)|samples|empty|reshape|array of size|size of|at least|minimum|insufficient|fewer|"
    r"more than|less than|greater than|smaller than|larger than|out of bounds|out-of-bounds|"
    r"not enough|zero|length|should be >=|must be >=|inconsistent numbers|degrees of freedom|"
    r"singular|converge",
    _shr_re.IGNORECASE,
)
#: Exceptions a run on fewer rows or iterations cannot bring about by itself (checked further below).
_SHR_DATA_FREE = frozenset({"AttributeError", "TypeError"})
_SHR_IMPORTS = frozenset({"ImportError", "ModuleNotFoundError"})
#: TensorFlow's shape errors are ``InvalidArgumentError`` (``Matrix size-incompatible: In[0]: [263,8],
#: In[1]: [7,4]``); Keras raises ValueError
_SHR_SHAPE_ERRORS = frozenset({"ValueError", "RuntimeError", "InvalidArgumentError"})
_SHR_NAME = _shr_re.compile(r"name '([^']+)' is not defined|local variable '([^']+)'")
_SHR_AXIS = _shr_re.compile(r"out of bounds for axis (\d+) with size")
_SHR_NUMBER = _shr_re.compile(r"\b\d+\b")
#: a number in a message, also one that a shape writes after an ``x`` (``8x10``); not one ending a name
_SHR_QUANTITY = _shr_re.compile(r"(?<![A-Za-wyz_0-9])\d+")
#: Keras appends the call's arguments (``kwargs=<class 'inspect._empty'>``) and colours the message:
#: neither says why it failed
_SHR_ANSI = _shr_re.compile(r"\x1b\[[0-9;]*m")
_SHR_KERAS_ARGUMENTS = "\n\nArguments received by "


def _shr_facts(run):
    return run.get("shortened") or {}


def _shr_normal(run):
    """The message with the run's own sample sizes as ``<rows>`` (a shape error names them)."""
    sizes = {str(s) for s in _shr_facts(run).get("sizes") or ()}
    text = run.get("message") or ""
    return _SHR_NUMBER.sub(lambda m: "<rows>" if m.group(0) in sizes else m.group(0), text)


def _shr_alike(first, second):
    """Both raised the same exception on the same line with the same message, but for numbers that
    scale with the two runs' sample sizes (a size, a batch count, a size times a feature count)."""
    if first.get("outcome") != "raised" or second.get("outcome") != "raised":
        return False
    keys = ("exception", "line")
    if [first.get(k) for k in keys] != [second.get(k) for k in keys]:
        return False
    return _shr_same_but_scale(first, second)


def _shr_same_but_scale(first, second):
    """The two messages differ only in numbers that scale like the runs' sample sizes: ``n1 / s1`` and
    ``n2 / s2`` agree up to the rounding of a division or an offset (``floor(s / 32)``, ``s - 1``,
    ``s * 8``); any other difference is a real one."""
    texts = [_SHR_ANSI.sub("", r.get("message") or "") for r in (first, second)]
    parts = [_SHR_QUANTITY.split(t) for t in texts]
    numbers = [_SHR_QUANTITY.findall(t) for t in texts]
    if parts[0] != parts[1] or len(numbers[0]) != len(numbers[1]):
        return False
    sizes = [sorted({int(s) for s in _shr_facts(r).get("sizes") or ()}) for r in (first, second)]
    for a, b in zip(numbers[0], numbers[1], strict=False):
        if a == b:
            continue
        n1, n2 = int(a), int(b)
        if not any(
            s1 != s2 and abs(n1 * s2 - n2 * s1) <= s1 + s2 for s1, s2 in zip(sizes[0], sizes[1], strict=False)
        ):
            return False
    return True


def _shr_bound_names(source):
    """Names the cell itself binds anywhere (a shortened loop may have left them unset)."""
    import ast  # the kernel has it (IPython); nothing new is imported there

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _shr_doubt(first, second, source):
    """Why a crash both samples showed may come from the shortening; None when it cannot."""
    return _shr_decide(first, second, source)[0]


def _shr_decide(first, second, source):
    """``(doubt, why)``: the reason a crash may come from the shortening (None when it cannot), and
    what decided it."""
    exception = first.get("exception") or ""
    raw = first.get("message") or ""
    params = [p for r in (first, second) for p in _shr_facts(r).get("params") or ()]
    capped = {(p.get("param") or "").rsplit("__", 1)[-1] for p in params}
    if any(name and name in raw for name in capped):
        return "it names a parameter the shortened run lowered", "the message"
    if exception in ("NameError", "UnboundLocalError"):  # the failing value is the name: its binding decides
        found = _SHR_NAME.search(raw)
        name = next((g for g in found.groups() if g), None) if found else None
        if name is None or name in _shr_bound_names(source):
            return "the cell binds that name itself: a loop cut short may have left it unset", "the name"
        return None, "the name is bound nowhere in the cell"
    merged = _shf_merged(_shr_facts(first), _shr_facts(second))
    try:
        dependence = _shf_dependence(source, first.get("line"), merged)
    except Exception:
        dependence = None
    if dependence is None:
        return _shr_fallback(first, second, source), "the failure's kind (the cell could not be followed)"
    kinds, names = dependence["kinds"], dependence["names"]
    if "carried" in kinds:
        carried = sorted(n for n, k in names.items() if "carried" in k)
        why = f"it reads {_shr_list(carried)}, built up by a loop cut short: skipped iterations may change it"
        return why, "the data flow"
    unset = "NoneType" in raw
    if not kinds - {"loop"} and not dependence["in_function"]:
        if unset and kinds:
            return "a loop cut short may have left a value unset", "the data flow"
        return None, "the failing line reads nothing the shortening changed"
    extrapolated = [_shr_facts(r).get("extrapolated") or {} for r in (first, second)]
    status = [e.get("status") for e in extrapolated]
    if "passes" in status:
        runs = next(e.get("why") or "" for e in extrapolated if e.get("status") == "passes")
        return (
            f"at the full size the failing operation would not fail ({runs})",
            "a re-run on the full shapes",
        )
    if status == ["fails", "fails"] and "sampled" in kinds and not unset:
        return None, f"re-run on the full shapes, the failing operation fails too ({extrapolated[0]['why']})"
    return _shr_fallback(first, second, source), "the failure's kind (the full-size re-run could not decide)"


def _shr_list(names):
    return ", ".join(f"`{n}`" for n in names[:4]) + (" ..." if len(names) > 4 else "")


def _shr_fallback(first, second, source):
    """The older rules, by class and message words: used only where the data flow and the full-size
    re-run cannot decide (a failing line inside a function, an operation on objects with no shape)."""
    exception = first.get("exception") or ""
    raw = first.get("message") or ""
    message = _shr_normal(first)
    if exception in _SHR_DATA_FREE:
        return "a value is None: a loop cut short may have left it unset" if "NoneType" in raw else None
    if exception in _SHR_IMPORTS:
        return None
    if exception == "KeyError":
        facts = [_shr_facts(r).get("failure") or {} for r in (first, second)]
        if all(f.get("key_type") == "str" and f.get("key_in_full") is False for f in facts):
            return None
        return "the key may be a row label, a date or a value the sample left out"
    if exception == "IndexError":
        axis = _SHR_AXIS.search(raw)
        if axis and int(axis.group(1)) >= 1:  # only rows (axis 0) are sampled
            return None
        return "the position may lie beyond the sample"
    full_sizes = {str(r.get("of")) for r in _shr_facts(first).get("rows") or ()}
    if full_sizes & set(_SHR_NUMBER.findall(raw)):
        return "a full-size object met a sampled one"
    if exception in _SHR_SHAPE_ERRORS:
        if _SHR_SENSITIVE.search(_SHR_ANSI.sub("", message).split(_SHR_KERAS_ARGUMENTS, 1)[0]):
            return "its message is about sizes, classes or counts the sample changes"
        if "<rows>" in message and not _shr_re.search(r"[\[(]\s*<rows>\s*[,x]", message):
            return "its message names the sample's size"
        return None
    return f"a {exception} may hinge on the data the sample left out"
