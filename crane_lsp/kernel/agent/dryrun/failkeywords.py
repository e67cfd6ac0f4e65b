"""Keywords on the failing line that the callee does not take: STANDARD LIBRARY ONLY, in the child.

Joined after ``failfacts`` into the probe's private module: top-level names carry ``_fkw_``.

A misspelt keyword is often passed to an object the cell itself built (``gen =
ImageDataGenerator(...)`` then ``gen.flow_from_directory(target_sizes=...)``), which no probe of the
kernel can see, or through ``**kwargs`` to a function that words the error its own way. The crashed
child holds the objects: for each call on the failing line, the callee the call names (a name, or a
stored attribute chain, looked up statically) gives its parameters by ``inspect.signature`` where
that runs no code of the object (functions, methods, compiled callables, classes of a plain
metaclass); a keyword that is none of them but close to one is reported with the nearest name. The
client's cause says "did you mean ...?" only where the error's own words name that keyword.
"""

import difflib as _fkw_difflib
import types as _fkw_types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.dryrun.failfacts import (
        _ff_cell_scope,
        _ff_frames,
        _ff_lookup,
        _ff_statement,
        _ff_text,
    )
    from crane_lsp.kernel.agent.safe import _MISSING, _instance_dict
    from crane_lsp.kernel.agent.wire import FailKeywordWire

_FKW_MAX = 3  # keywords reported per failing line
#: compiled callables whose signature is text the interpreter keeps (no code of the object runs)
_FKW_COMPILED = frozenset(
    ("builtin_function_or_method", "method_descriptor", "cython_function_or_method", "fused_cython_function")
)


def _fkw_signature_safe(obj):
    """Whether ``inspect.signature(obj)`` reads only what the interpreter keeps for it."""
    if isinstance(obj, (_fkw_types.FunctionType, _fkw_types.BuiltinFunctionType)):
        return True
    if isinstance(obj, _fkw_types.MethodType):
        return _fkw_signature_safe(obj.__func__)
    if isinstance(obj, type):  # ``Dense(...)``: its ``__init__``, when no metaclass decides the call
        return type(obj).__call__ is type.__call__  # type: ignore[comparison-overlap]
    return type(obj).__name__ in _FKW_COMPILED


def _fkw_params(frame, text):
    """The named parameters of the callable ``text`` names in ``frame``, or None when unknown. A
    method found on an object's class (functions are descriptors: never bound here) loses ``self``."""
    import inspect

    value = _ff_lookup(frame, text)
    drop_self = False
    if value is _MISSING and "." in text:
        head, _, attr = text.rpartition(".")
        owner = _ff_lookup(frame, head)
        if owner is _MISSING:
            return None
        own = _instance_dict(owner)
        if own is not None and attr in own:
            return None  # a stored value _ff_lookup declined: not a plain callable
        try:
            value = inspect.getattr_static(owner, attr, _MISSING)
        except Exception:
            return None
        if isinstance(value, staticmethod):
            value = value.__func__
        elif isinstance(value, classmethod):
            value, drop_self = value.__func__, True
        else:
            drop_self = not isinstance(owner, (type, _fkw_types.ModuleType))
    if value is _MISSING or not _fkw_signature_safe(value):
        return None
    try:
        sig = inspect.signature(value)
    except Exception:
        return None
    params = list(sig.parameters.values())[1:] if drop_self else list(sig.parameters.values())
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _fkw_add(facts, exc, payload):
    """Add to the facts block (``failfacts._ff_collect``'s) the keywords of the calls on the cell's
    failing line that their callee does not name but names one close to. Never raises."""

    if facts is None or facts.get("deadline_hit"):
        return
    try:
        cell, _user, _names = _ff_frames(exc)
        if cell is None:
            return
        frame, line = cell
        scope = _ff_cell_scope(frame, payload)
        if scope is not None:
            _fkw_collect(facts, scope, frame, line)
    except Exception as exc_:  # a fact is a bonus: never lose the verdict to it
        facts.setdefault("error", f"keywords: {type(exc_).__name__}")


def _fkw_nearest(word, names):
    """The closest of ``names`` to ``word`` (difflib's measure); among equally close ones, the one
    that shares the longest beginning with it (``cs`` -> ``c``, not ``s``)."""
    close = _fkw_difflib.get_close_matches(word, names, n=3)
    if not close:
        return None

    def ratio(name):
        return _fkw_difflib.SequenceMatcher(None, word, name).ratio()

    def shared(name):
        n = 0
        while n < min(len(word), len(name)) and word[n] == name[n]:
            n += 1
        return n

    best = ratio(close[0])
    return max((n for n in close if ratio(n) == best), key=shared)


def _fkw_collect(out, scope, frame, line):
    """Add to ``out["keywords"]`` the keywords of the calls on ``line`` their callee does not name
    but names one close to (``{"call", "keyword", "near"}``)."""
    import ast

    stmt, _loops = _ff_statement(scope, line)
    if stmt is None:
        return
    found: list[FailKeywordWire] = []
    for node in ast.walk(stmt):
        if len(found) >= _FKW_MAX:
            break
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        text = _ff_text(node.func)
        if text is None or "[" in text:
            continue
        names = _fkw_params(frame, text)
        if not names:
            continue
        for keyword in node.keywords:
            word = keyword.arg
            if word is None or word in names:
                continue
            near = _fkw_nearest(word, names)
            if near is not None:
                found.append({"call": text, "keyword": word, "near": near})
    if found:
        out["keywords"] = found[:_FKW_MAX]
