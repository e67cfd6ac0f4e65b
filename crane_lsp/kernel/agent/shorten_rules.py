"""When two shortened runs' crash cannot hinge on the sample: STANDARD LIBRARY ONLY.

Joined before ``shorten.py`` (the kernel ends a full run early only for a crash these rules trust)
and imported alone by the client (``crane_lsp/shortened.py`` turns the runs into the verdict), so
both sides apply the same rules. A run is the child's answer as a plain dict: ``exception``,
``message``, ``line``, and ``shortened`` (``rows``/``params``/``sizes``/``failure``).
"""

import re as _shr_re

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
    """Both raised the same exception on the same line with the same message, sizes aside."""
    if first.get("outcome") != "raised" or second.get("outcome") != "raised":
        return False
    keys = ("exception", "line")
    return [first.get(k) for k in keys] == [second.get(k) for k in keys] and (
        _shr_normal(first) == _shr_normal(second)
    )


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
    exception = first.get("exception") or ""
    raw = first.get("message") or ""
    message = _shr_normal(first)
    params = [p for r in (first, second) for p in _shr_facts(r).get("params") or ()]
    capped = {(p.get("param") or "").rsplit("__", 1)[-1] for p in params}
    if any(name and name in raw for name in capped):
        return "it names a parameter the shortened run lowered"
    if exception in ("NameError", "UnboundLocalError"):
        found = _SHR_NAME.search(raw)
        name = next((g for g in found.groups() if g), None) if found else None
        if name is None or name in _shr_bound_names(source):
            return "the cell binds that name itself: a loop cut short may have left it unset"
        return None
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
