"""Summaries of plain Python values: containers, scalars, callables, classes, modules, anything else.

Containers are read through the builtin base type's own methods (``dict.items``, ``list.__getitem__``),
never the object's overrides; a ``repr`` runs only for trusted library objects, under the alarm.
"""

import inspect as _inspect
import sys as _sys
import threading as _threading
import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
        _Deadline,
        _guarded,
    )
    from crane_lsp.kernel.agent.probe.sum_ml import (
        _sum_history,
    )
    from crane_lsp.kernel.agent.safe import (
        _KERAS_TOPS,
        _REPR_MAX,
        _VALUE_MAX,
        _cls_module,
        _cls_name,
        _defining_class,
        _has_base_prefix,
        _instance_dict,
        _mro,
        _plain,
        _qualname,
        _safe_repr,
        _static,
        _trunc,
        _trusted,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        Kind,
        ObjectWire,
        QueryWire,
    )


def _sum_mapping(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    n = dict.__len__(obj)
    s["length"] = n
    cap = query["max_list_items"]
    keys = []
    vtypes: list = []
    for i, (k, v) in enumerate(dict.items(obj)):
        if i >= cap:
            break
        keys.append(_safe_repr(k, 60) if not (query.get("privacy") and type(k) is not str) else "<key>")
        tn = _cls_name(type(v))
        if tn not in vtypes and len(vtypes) < 10:
            vtypes.append(tn)
    s["keys"] = keys
    s["element_types"] = vtypes


def _sum_sequence(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    """list, tuple, set or frozenset (or a subclass), read through the builtin base's own methods."""
    mro = _mro(obj)
    base = next(b for b in (list, tuple, set, frozenset) if b in mro)
    n = base.__len__(obj)
    s["length"] = n
    cap = query["max_list_items"]
    types: list = []
    if base in (list, tuple):
        items = base.__getitem__(obj, slice(0, cap))
    else:
        items = []
        for i, v in enumerate(base.__iter__(obj)):
            if i >= cap:
                break
            items.append(v)
    for v in items:
        tn = _cls_name(type(v))
        if tn not in types and len(types) < 10:
            types.append(tn)
    s["element_types"] = types
    if base in (list, tuple) and not query.get("privacy") and n <= cap:
        vals = _exact_values(items)
        if vals is not None:
            s["values"] = vals
        r = _safe_repr(base(items))
        if "object>" not in r:
            s["repr"] = r


def _exact_values(items):
    """The items themselves when every one is a plain str (<= 200 chars), int (< 2**62) or finite float."""
    out = []
    for v in items:
        t = type(v)
        ok = (
            (t is str and str.__len__(v) <= 200)
            or (t is int and -(2**62) < v < 2**62)
            or (t is float and float.__abs__(v) < float("inf"))  # False for NaN
        )
        if not ok:
            return None
        out.append(v)
    return out


def _sum_scalar(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    t = type(obj)
    if t is str or str in _mro(obj):
        s["length"] = str.__len__(obj)
        if not query.get("privacy"):
            s["value"] = _trunc(str.__str__(obj), _VALUE_MAX)
    elif t is bytes:
        s["length"] = bytes.__len__(obj)
    else:
        s["value"] = _safe_repr(obj, _VALUE_MAX)


def _params(sig):
    out = []
    for p in sig.parameters.values():
        out.append({"name": p.name, "kind": p.kind.name, "has_default": p.default is not p.empty})
    return out


def _sig_text(sig):
    parts = []
    seen_kwonly = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            parts.append("*" + p.name)
            seen_kwonly = True
            continue
        if p.kind == p.VAR_KEYWORD:
            parts.append("**" + p.name)
            continue
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        text = p.name
        if p.default is not p.empty:
            text += "=" + _safe_repr(p.default, 40)
        parts.append(text)
        if p.kind == p.POSITIONAL_ONLY:
            nxt = list(sig.parameters.values())
            if nxt.index(p) == len(nxt) - 1 or nxt[nxt.index(p) + 1].kind != p.POSITIONAL_ONLY:
                parts.append("/")
    return "(" + ", ".join(parts) + ")"


def _function_module(obj):
    """``__module__`` of a plain Python or builtin function (a slot, so ``getattr_static`` misses it)."""
    if type(obj) in (_types.FunctionType, _types.BuiltinFunctionType):
        mod = obj.__module__  # a C-level slot of a real function: runs no user code
        return mod if type(mod) is str else None
    return None


#: Bounds on the source text a summary carries for a function defined in a notebook cell.
_SOURCE_MAX_LINES = 200
_SOURCE_MAX_CHARS = 20_000
_MAX_FREE_GLOBALS = 30


def _cell_filename(name):
    """Whether a code object's file name is an IPython cell (ipykernel's ``.../ipykernel_<pid>/<hash>.py``
    or IPython's ``<ipython-input-N-...>``): the only files whose text is read, and only from linecache."""
    if type(name) is not str:
        return False
    if name.startswith("<ipython-input-"):
        return True
    parts = name.replace("\\", "/").split("/")
    return len(parts) >= 2 and parts[-2].startswith("ipykernel_") and parts[-1].endswith(".py")


def _code_names(code, out, depth=0):
    """Global (and attribute) names a code object and its nested code objects read, bounded."""
    for n in code.co_names:
        if type(n) is str and not n.startswith("__") and n not in out and len(out) < _MAX_FREE_GLOBALS:
            out.append(n)
    if depth < 3:
        for c in code.co_consts:
            if type(c) is _types.CodeType:
                _code_names(c, out, depth + 1)


def _cell_source(obj, s: ObjectWire):
    """The source of a plain function defined in a notebook cell, read from ``linecache.cache`` entries
    only (never the disk, never ``updatecache``), bounded; or ``source_note`` saying why not.

    Only an exact ``types.FunctionType`` is read (it cannot be subclassed: its slots run no user code);
    its ``__code__`` is a plain code object whose fields are data."""
    if type(obj) is not _types.FunctionType:
        return
    code = obj.__code__
    if type(code) is not _types.CodeType or not _cell_filename(code.co_filename):
        return
    if obj.__closure__ is not None:
        s["source_note"] = "closure"
        return
    lc = _sys.modules.get("linecache")
    cache = getattr(lc, "cache", None) if type(lc) is _types.ModuleType else None
    entry = dict.get(cache, code.co_filename) if type(cache) is dict else None
    lines = entry[2] if type(entry) is tuple and len(entry) >= 3 else None
    first = code.co_firstlineno
    if type(lines) is not list or type(first) is not int or not 0 < first <= len(lines):
        s["source_note"] = "source not in linecache"
        return
    head = lines[first - 1 : first - 1 + _SOURCE_MAX_LINES + 1]
    if not all(type(x) is str for x in head):
        return
    try:
        block = _inspect.getblock(head)
    except Exception:
        s["source_note"] = "source not readable"
        return
    text = "".join(block)
    if len(block) > _SOURCE_MAX_LINES or len(text) > _SOURCE_MAX_CHARS:
        s["source_note"] = f"source omitted: over {_SOURCE_MAX_LINES} lines or {_SOURCE_MAX_CHARS} characters"
        return
    s["source"] = text
    s["source_line"] = first
    names: list = []
    _code_names(code, names)
    s["free_globals"] = names


def _free_globals_wanted(variables, ns, done):
    """Names the summarised cell functions read that the kernel holds and nobody summarised yet (so their
    values reach the walk that follows a call into the function); ``done`` is updated."""
    out = []
    for key, summ in list(variables.items()):
        if key in done or "source" not in summ:
            continue
        done.add(key)
        for n in summ.get("free_globals") or ():
            if n not in variables and n not in out and type(ns) is dict and dict.__contains__(ns, n):
                out.append(n)
    return out


#: Wrappers that hand every argument on, unchanged, to the function in their ``__wrapped__``, so that
#: function's own signature is the contract of a call: (module the wrapper's code is defined in, the
#: code's qualified name; ``functools.wraps`` copies the wrapped function's names, never the code's).
#: pandas' ``deprecate_nonkeyword_arguments`` and matplotlib's ``make_keyword_only`` declare keyword-only
#: parameters (``__signature__``) yet pass positional ones on with a warning: the wrapped function's own
#: signature decides, never the declared one. Any other wrapper may accept more than any signature says
#: (pandas' ``deprecate_kwarg`` and matplotlib's ``rename_parameter`` take an old keyword).
_FORWARDING_WRAPPERS = frozenset(
    {
        ("pandas.util._decorators", "deprecate_nonkeyword_arguments.<locals>.decorate.<locals>.wrapper"),
        ("matplotlib._api.deprecation", "make_keyword_only.<locals>.wrapper"),
        ("sklearn.utils._param_validation", "validate_params.<locals>.decorator.<locals>.wrapper"),
        # validates the estimator's own parameters first, then calls ``fit`` with the same arguments
        ("sklearn.base", "_fit_context.<locals>.decorator.<locals>.wrapper"),
        ("sklearn.utils._set_output", "_wrap_method_output.<locals>.wrapped"),
    }
)


def _own_function(f):
    """The plain function whose own code decides which arguments a call of ``f`` takes: ``f`` when nothing
    overrides its signature, the function behind a known forwarding wrapper; None for any other wrapper,
    a ``__signature__`` override or anything not a plain function (read from slots and ``__dict__``)."""
    for _ in range(4):
        if type(f) is not _types.FunctionType:
            return None
        d = f.__dict__
        if type(d) is not dict:
            return None
        if "__wrapped__" not in d:
            return None if "__signature__" in d else f
        g = f.__globals__
        where = (
            dict.get(g, "__name__") if type(g) is dict else None,
            getattr(f.__code__, "co_qualname", None),
        )
        if where[1] is None or where not in _FORWARDING_WRAPPERS:
            return None
        f = d["__wrapped__"]
    return None


def _call_contract(obj):
    """The signature that really decides a call of ``obj``, or None when no signature can prove a call
    wrong: a wrapper that may take more than its signature says, a C function of a third-party library
    (hand-written text signatures), a partial, anything else."""
    f = obj.__func__ if type(obj) is _types.MethodType else obj
    own = _own_function(f)
    try:
        if own is not None:
            sig = _inspect.signature(own, follow_wrapped=False)
            if f is not obj:
                sig = sig.replace(parameters=list(sig.parameters.values())[1:])
            return sig
        text = obj.__text_signature__ if type(obj) is _types.BuiltinFunctionType else None  # type: ignore[attr-defined]
        if type(text) is str:
            mod = obj.__module__
            holder = obj.__self__
            if type(mod) is not str and holder is not None:
                mod = _cls_module(type(holder))
            std: frozenset = getattr(_sys, "stdlib_module_names", frozenset())
            if type(mod) is str and (mod.split(".")[0] in std or mod == "builtins"):
                return _inspect.signature(obj)
    except Exception:
        return None
    return None


def _class_dict(cls):
    return type.__dict__["__dict__"].__get__(cls)


def _class_contract(cls):
    """The signature of ``cls(...)`` when a plain ``__init__`` decides it (the metaclass call is
    ``type``'s, ``__new__`` is ``object``'s, no ``__signature__`` anywhere); else None."""
    try:
        meta_call = next((c for c in _mro(cls) if "__call__" in _class_dict(c)), None)
        if meta_call is not type:
            return None
        mro = type.__dict__["__mro__"].__get__(cls)
        if any("__signature__" in _class_dict(c) for c in mro):
            return None
        new_owner = next((c for c in mro if "__new__" in _class_dict(c)), None)
        init_owner = next((c for c in mro if "__init__" in _class_dict(c)), None)
        if new_owner is not object or init_owner is None or init_owner is object:
            return None
        own = _own_function(_class_dict(init_owner)["__init__"])
        if own is None:
            return None
        sig = _inspect.signature(own, follow_wrapped=False)
        return sig.replace(parameters=list(sig.parameters.values())[1:])
    except Exception:
        return None


def _sum_callable(obj, s: ObjectWire, query: QueryWire, clock: _Clock, drop_self=False):
    s["callable"] = True
    if not drop_self:
        _cell_source(obj, s)
    mod = _static(obj, "__module__")
    if type(mod) is not str:
        mod = _function_module(obj)
    if type(mod) is str:
        s["module"] = mod
    contract = _call_contract(obj)
    try:
        sig = contract if contract is not None else _inspect.signature(obj, follow_wrapped=True)
    except Exception:
        return
    if drop_self:
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    s["signature"] = _trunc(_sig_text(sig), 300)
    if contract is not None:  # only a signature no wrapper can widen decides a call (checks bind to params)
        s["params"] = _params(sig)


def _sum_class(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["module"] = _cls_module(obj)
    s["repr"] = "<class " + _qualname(obj) + ">"
    s["callable"] = True
    try:  # reads __signature__/__init__/__new__ statically; calls none of them
        sig = _inspect.signature(obj)
    except Exception:
        return
    s["signature"] = _trunc(_sig_text(sig), 300)
    contract = _class_contract(obj)
    if contract is not None:
        s["params"] = _params(contract)


def _sum_module(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    d = _instance_dict(obj) or {}
    name = d.get("__name__")
    s["module"] = name if type(name) is str else None
    s["repr"] = "<module " + repr(name) + ">"


def _sum_other(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    if _has_base_prefix(obj, "History", _KERAS_TOPS):
        _sum_history(obj, s, query, clock)
        return
    off_main = _threading.current_thread() is not _threading.main_thread()
    if not _trusted(obj) or (off_main and _defining_class(obj, "__iter__") is not None):
        s["repr"] = _plain(obj)  # a container's repr runs its items' __repr__; no alarm guards a subshell
        return
    try:
        r = _guarded(clock, repr, obj)
        s["repr"] = _trunc(r, _REPR_MAX) if type(r) is str else _plain(obj)
    except _Deadline:
        s["repr"] = _plain(obj)
        s["error"] = DEADLINE
    except Exception as exc:
        s["repr"] = _plain(obj)
        s["error"] = "__repr__ raised " + _cls_name(type(exc))


def _sum_unread(obj, s: ObjectWire, query, clock):
    """Generators and iterators: never advanced, so nothing but the type is read."""
    s["repr"] = _plain(obj)


#: kind -> the summariser that fills its ``ObjectWire`` (merged into ``summaries._SUMMARISERS``).
_PY_SUMMARISERS = {
    Kind.DICT: _sum_mapping,
    Kind.LIST: _sum_sequence,
    Kind.TUPLE: _sum_sequence,
    Kind.SET: _sum_sequence,
    Kind.STR: _sum_scalar,
    Kind.BYTES: _sum_scalar,
    Kind.INT: _sum_scalar,
    Kind.FLOAT: _sum_scalar,
    Kind.BOOL: _sum_scalar,
    Kind.COMPLEX: _sum_scalar,
    Kind.MODULE: _sum_module,
    Kind.FUNCTION: _sum_callable,
    Kind.CLASS: _sum_class,
    Kind.GENERATOR: _sum_unread,
    Kind.OTHER: _sum_other,
}
