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

A keyword the callee takes through ``**kwargs`` and hands on (``plt.subplots(figsizes=...)`` passes
it to ``figure()`` and ``Figure``, whose ``set`` raises; ``sns.set(styles=...)`` to ``set_theme``) is
judged along the path it took, which the traceback records: every frame whose ``**kwargs`` dict
still holds the word names parameters the user may have meant (``figure``'s ``figsize``); the
function the error names, where the innermost such frame holds it, names its own; and the object
whose class the error names takes property keywords by its setters (``set_label`` makes ``label`` a
keyword), which the class dictionaries list without running any of its code. The nearest of all
those is reported, with ``via`` naming the function or class that rejected the word.

A method of a call's result (``df.groupby(...).get_group(...).sort_values(bys=...)``) has no chain to
look up; the error names it by its qualified name (``DataFrame.sort_values()``), and that class is
found among the classes of the values the failing statement names.
"""

import difflib as _fkw_difflib
import re as _fkw_re
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
    return _fkw_signature_names(value, drop_self)


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
            _fkw_collect(facts, scope, frame, line, exc)
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


def _fkw_type_attr(cls, name):
    """``cls.__name__`` / ``cls.__mro__`` as ``type`` keeps them (a metaclass property never runs)."""
    return type.__dict__[name].__get__(cls)


def _fkw_traceback(exc):
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _fkw_setters(cls):
    """The property keywords ``cls``'s ``set`` takes by its setters: ``set_label`` -> ``label``. A
    property setter is a plain function of one value (``set_label(self, s)``, or ``(self, *args)``
    for an alias); ``set_params(self, **params)`` or ``set_output(self, *, transform)`` are not."""
    found = set()
    for klass in _fkw_type_attr(cls, "__mro__"):
        for attr, value in _fkw_type_attr(klass, "__dict__").items():
            if not (isinstance(attr, str) and attr.startswith("set_") and len(attr) > 4):
                continue
            code = getattr(value, "__code__", None) if type(value) is _fkw_types.FunctionType else None
            if code is not None and (
                code.co_argcount == 2 or (code.co_argcount == 1 and code.co_flags & 0x04)
            ):
                found.add(attr[4:])
    return found


def _fkw_handed_on(exc, word):
    """``(names, rejecter)`` along the path keyword ``word`` took through ``**kwargs``, or None when the
    error's words do not quote it: the named parameters of every traceback frame whose ``**kwargs``
    holds the word (each took it because it names no such parameter, and the user may have meant one
    it does name), the parameters of the function the error names where the innermost of those frames
    holds it (``set_theme() got an unexpected keyword argument``), the names the error's words list in
    brackets (scikit-learn's ``Valid parameters are: ['alpha', ...]``), and the setter properties of the
    innermost ``self`` whose class the error names (``Line2D.set() ...``); ``rejecter`` names that
    function or class."""
    message = str(exc)
    if f"'{word}'" not in message and f'"{word}"' not in message:
        return None
    names: set[str] = set()
    rejecter = None
    holder = None
    frames = _fkw_traceback(exc)
    for frame in frames:
        code = frame.f_code
        if not code.co_flags & 0x08:  # CO_VARKEYWORDS
            continue
        named = code.co_argcount + code.co_kwonlyargcount
        varkw = code.co_varnames[named + (1 if code.co_flags & 0x04 else 0)]  # after *args
        held = frame.f_locals.get(varkw)
        if type(held) is dict and word in held:
            names.update(n for n in code.co_varnames[:named] if n not in ("self", "cls"))
            holder = frame
    if holder is not None:  # the library's words list what it takes: "Valid parameters are: ['a', ...]"
        for listed in _fkw_re.findall(r"\[((?:'\w+',\s*)+'\w+')\]", message):
            names.update(_fkw_re.findall(r"'(\w+)'", listed))
    called = _fkw_re.search(r"([\w.]+)\(\) got an unexpected keyword argument", message)
    if holder is not None and called:
        value = holder.f_globals.get(called[1].rpartition(".")[2], _MISSING)
        if value is not _MISSING and _fkw_signature_safe(value):
            names.update(_fkw_signature_names(value) or ())
            rejecter = called[1]
    for frame in reversed(frames):
        owner = frame.f_locals.get("self", _MISSING)
        if owner is _MISSING:
            continue
        name = _fkw_type_attr(type(owner), "__name__")
        if name in message:
            setters = _fkw_setters(type(owner))
            if word in setters:
                return None  # it takes that property: the error is about something else
            if setters:
                names |= setters
                rejecter = rejecter or name
            break
    return names, rejecter


def _fkw_named_method(message, frame, stmt):
    """The parameters of the method the error names by its qualified name (``DataFrame.sort_values()
    got an unexpected keyword argument``), found in the dictionary of that class among the classes of
    the values the failing statement names: a method of a call's result
    (``df.groupby(...).get_group(...).sort_values(bys=...)``) has no chain to look up, but its class is
    a class of ``df``. Read from the class dictionaries: no code of the object runs."""
    import ast

    called = _fkw_re.search(r"([\w.]+)\.(\w+)\(\) got an unexpected keyword argument", message)
    if not called:
        return None
    owner, method = called[1], called[2]
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Name):
            continue
        value = _ff_lookup(frame, node.id)
        if value is _MISSING:
            continue
        for klass in _fkw_type_attr(type(value), "__mro__"):
            if _fkw_type_attr(klass, "__qualname__") != owner:
                continue
            function = _fkw_type_attr(klass, "__dict__").get(method, _MISSING)
            if type(function) is _fkw_types.FunctionType and _fkw_signature_safe(function):
                return _fkw_signature_names(function, drop_self=True)
    return None


def _fkw_signature_names(value, drop_self=False):
    """The named parameters of ``value`` (its signature judged safe to read), None when unreadable;
    ``drop_self``: a method found on its class, not bound."""
    import inspect

    try:
        params = list(inspect.signature(value).parameters.values())
    except Exception:
        return None
    params = params[1:] if drop_self else params
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _fkw_collect(out, scope, frame, line, exc=None):
    """Add to ``out["keywords"]`` the keywords of the calls on ``line`` their callee does not name
    but names one close to (``{"call", "keyword", "near"}``), or that the object the callee handed
    them to rejects by its setters (``via``)."""
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
        # a callee that is no plain chain (``axes[0].hist``) is not looked up here; the traceback
        # may still tell what it takes (``_fkw_handed_on``)
        plain = text is not None and "[" not in text
        names = (_fkw_params(frame, text) or []) if plain else []
        if not names and exc is not None:  # a method of a call's result: the class the error names
            names = _fkw_named_method(str(exc), frame, stmt) or []
        text = text or ast.unparse(node.func)
        if len(text) > 80:
            continue
        for keyword in node.keywords:
            word = keyword.arg
            if word is None or word in names:
                continue
            near = _fkw_nearest(word, names) if names else None
            if near is not None:
                found.append({"call": text, "keyword": word, "near": near})
                continue
            handed = _fkw_handed_on(exc, word) if exc is not None else None
            if handed is None:
                continue
            near = _fkw_nearest(word, sorted(handed[0] | set(names)))
            if near is not None:
                entry: FailKeywordWire = {"call": text, "keyword": word, "near": near}
                if handed[1]:
                    entry["via"] = handed[1]
                found.append(entry)
    if found:
        out["keywords"] = found[:_FKW_MAX]
