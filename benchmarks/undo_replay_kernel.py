"""Run inside the kernel by ``undo_replay.py`` (as the text of a module of its own, never a user name):
keep a deep copy of every user name with its ``id()`` before the target, and say afterwards which names
differ, are missing, are new, or are new objects."""

import copy
import json
import types

kept: dict = {}
failed: dict = {}


def user_names(shell):
    for name, value in list(shell.user_ns.items()):
        if name.startswith("_") or name in shell.user_ns_hidden or isinstance(value, types.ModuleType):
            continue
        yield name, value


def same(a, b, depth=0):
    """Equal values: frames and arrays with NaN equal to NaN, containers item by item, other objects by
    ``==`` when it says so, else by what pickling them would record (``__reduce_ex__``: a fitted tree's
    arrays, a random generator's state), compared the same way."""
    import numpy as np

    if a is b:
        return True
    if type(a) is not type(b) or depth > 8:
        return False
    try:
        import pandas as pd

        if isinstance(a, (pd.DataFrame, pd.Series, pd.Index)):
            return a.equals(b) and list(getattr(a, "columns", [])) == list(getattr(b, "columns", []))
    except ImportError:
        pass
    if isinstance(a, np.ndarray):
        nan_equal = a.dtype.kind in "fc"
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=nan_equal))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, types.MethodType):  # ``from numpy.random import randint``: a generator's method
        return a.__func__ is b.__func__ and same(a.__self__, b.__self__, depth + 1)
    if isinstance(a, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)):
        return False  # not the same object
    try:
        eq = a == b
        if isinstance(eq, bool) and eq:
            return True
    except Exception:
        pass
    try:
        ra, rb = a.__reduce_ex__(4), b.__reduce_ex__(4)
    except Exception:
        return True  # neither comparable nor picklable: not judged here
    if isinstance(ra, str) or isinstance(rb, str):
        return ra == rb
    return ra[0] is rb[0] and same(tuple(ra[1:3]), tuple(rb[1:3]), depth + 1)


def keep(shell):
    """A deep copy of each name; one this module cannot tell equal to its own copy at once is not
    judged later (``unjudged``): the comparison, not the undo, would fail on it."""
    kept.clear()
    failed.clear()
    for name, value in user_names(shell):
        try:
            kept[name] = (copy.deepcopy(value), id(value))
        except Exception as exc:
            failed[name] = type(exc).__name__
            continue
        try:
            equal = same(value, kept[name][0])
        except Exception:
            equal = False
        if not equal:
            del kept[name]
            failed[name] = "unjudged"


def report(shell):
    ns = shell.user_ns
    return json.dumps(
        {
            "missing": [n for n in kept if n not in ns],
            "extra": [n for n, _ in user_names(shell) if n not in kept and n not in failed],
            "differ": [n for n, (v, _) in kept.items() if n in ns and not same(ns[n], v)],
            "moved": [n for n, (_, i) in kept.items() if n in ns and id(ns[n]) != i],
            "uncopied": sorted(failed),
        }
    )
