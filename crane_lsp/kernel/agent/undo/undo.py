"""Undo the last cell, and say what it changed: STANDARD LIBRARY ONLY, joined after ``undo_hold.py``.

``undo_changes(payload)`` compares the held copy's fingerprints (the state before the cell) with the
kernel's now: the names the cell bound, rebound, deleted and mutated in place. ``undo_last_cell``
then asks the copy to pickle every name the cell rebound, deleted or mutated, loads them all, and
only then changes the namespace: values mutated in place are written back into the same object where
its type allows (a list, dict, set, bytearray, an ndarray of the same shape and dtype: every other
reference sees the old contents again), the others are bound again; names the cell created are
deleted. A name that cannot come back (an open file, a socket, a generator, a GPU tensor, what does
not pickle) is listed with its reason and left as the cell left it. Nothing is changed when the
answer is a refusal: no copy, a copy for another cell, a cell still running, the copy released.
"""

import json as _ud_json
import time as _ud_time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.dryrun import _sb_sys
    from crane_lsp.kernel.agent.dryrun.dryrun_warm import _dw_generation
    from crane_lsp.kernel.agent.guard import _JSONResult
    from crane_lsp.kernel.agent.safe import _isa
    from crane_lsp.kernel.agent.undo.undo_direct import _udd_eligible, _udd_restore
    from crane_lsp.kernel.agent.undo.undo_hold import (
        _uh_drop,
        _uh_is_held,
        _uh_read,
        _uh_request,
        _uh_state,
        _uh_why,
    )
    from crane_lsp.kernel.agent.undo.undo_print import _ufp_all, _ufp_diff

_UD_NO_COPY = (
    "no copy of the state before the last cell is held in this kernel process (undo is off here, "
    "or the kernel restarted since)"
)


def _ud_shell_ns():
    ipython = _sb_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    namespace = shell.user_ns if shell is not None else _sb_sys.modules["__main__"].__dict__
    return shell, namespace


def _ud_refusal(payload):
    """``(held, None)`` when the held copy is the state before the last cell, else ``(None, why)``."""
    count = _dw_generation()
    expect = payload.get("expect_count")
    held = _uh_state.get("held")
    gone = _uh_state.get("gone", {})
    if expect is not None and expect in gone and (held is None or held.count != expect):
        return None, f"cannot undo cell [{expect}]: {gone[expect]}"
    if held is None:
        why = _uh_state.get("why")
        if why is not None and why[1] and (expect is None or why[0] == expect):
            return None, f"cannot undo cell [{why[0]}]: {why[1]}"
        return None, "cannot undo: " + _UD_NO_COPY
    if expect is not None and held.count != expect:
        why = f"the copy held is from before cell [{held.count}] (another client ran code)"
        return None, f"cannot undo cell [{expect}]: {why}"
    if not held.finished:
        return None, "cannot undo: the cell is still running"
    if held.generation != count:
        return None, f"cannot undo cell [{held.count}]: the kernel has moved on since"
    if not held.child.alive():
        return None, f"cannot undo cell [{held.count}]: the copy exited"
    return held, None


def _ud_changes(held, deadline):
    shell, namespace = _ud_shell_ns()
    _uh_request(held, {"op": "fingerprints"})
    before = _uh_read(held, deadline)[0]["fingerprints"]
    after = _ufp_all(namespace, shell)
    return before, after, _ufp_diff(before, after)


def undo_changes(payload_json):
    """What the last cell changed (``{"cell", "bound", "rebound", "deleted", "mutated"}``), or
    ``{"refused": why}``. Changes nothing."""
    payload = _ud_json.loads(payload_json)
    held, why = _ud_refusal(payload)
    if held is None:
        return _JSONResult({"refused": why})
    with held.lock:
        if not _uh_is_held(held):
            return _JSONResult({"refused": "cannot say: " + (_uh_state.get("why") or (0, "released"))[1]})
        try:
            diff = _ud_changes(held, _ud_time.monotonic() + float(payload.get("timeout_s", 10.0)))[2]
        except OSError as exc:
            return _JSONResult({"refused": f"cannot say: {exc}"})
    return _JSONResult({"cell": held.count, **diff})


def undo_last_cell(payload_json):
    """Undo the last cell from the held copy: ``{"cell", "restored", "deleted", "kept": [{"name",
    "reason"}], "ms"}``, or ``{"refused": why}`` (then nothing changed)."""
    payload = _ud_json.loads(payload_json)
    started = _ud_time.perf_counter()
    held, why = _ud_refusal(payload)
    if held is None:
        return _JSONResult({"refused": why})
    deadline = _ud_time.monotonic() + float(payload.get("timeout_s", 60.0))
    with held.lock:
        if not _uh_is_held(held):
            return _JSONResult({"refused": "cannot undo: the copy was just released"})
        try:
            answer = _ud_undo(held, deadline)
        except (OSError, TimeoutError) as exc:  # before anything was changed: nothing is half-done
            return _JSONResult({"refused": f"cannot undo cell [{held.count}]: {exc}"})
        _uh_why(held.count, "it was undone already")
        _uh_state.setdefault("gone", {})[held.count] = "it was undone already"
    answer["ms"] = round((_ud_time.perf_counter() - started) * 1000, 1)
    return _JSONResult(answer)


def _ud_undo(held, deadline):
    """Fetch every value first, then change the namespace (raises before any change, never after);
    an array changed in place is written back from the copy's memory directly (``undo_direct.py``)."""
    _shell, namespace = _ud_shell_ns()
    clock = _ud_time.perf_counter
    t0 = clock()
    before, _after, diff = _ud_changes(held, deadline)
    t1 = clock()
    wanted = [*diff["rebound"], *diff["mutated"], *diff["deleted"]]
    values: dict[str, object] = {}
    kept: list[dict[str, str]] = []
    direct = [n for n in diff["mutated"] if _udd_eligible(before.get(n), namespace.get(n))]
    _ud_fetch(
        held, [n for n in wanted if n not in direct], values, kept, deadline
    )  # may raise: no change yet
    done = []  # then the arrays changed in place: their bytes before the cell, read from the copy
    for name in direct:
        if _udd_restore(held.child.pid, before[name]["data"], namespace[name]):
            done.append(name)
        else:  # the read failed part-way: the whole value through the pipe finishes it
            _ud_fetch(held, [name], values, kept, deadline)
    _uh_state.pop("held", None)  # every value is here: the copy has served. Gone BEFORE the values
    _uh_drop(held)  # are written back, or each page written would first be copied for it
    held.child.reap(timeout=2.0)
    t2 = clock()
    restored = []
    for name in wanted:
        if name in done:
            restored.append(name)
        if name not in values:
            continue
        if not (name in diff["mutated"] and _ud_in_place(namespace.get(name), values[name])):
            namespace[name] = values[name]
        restored.append(name)
    deleted = []
    for name in diff["bound"]:
        if namespace.pop(name, None) is not None or name not in namespace:
            deleted.append(name)
    phases = {"fingerprints": t1 - t0, "fetch": t2 - t1, "apply": clock() - t2}
    phases_ms = {k: round(v * 1000, 1) for k, v in phases.items()}
    return {
        "cell": held.count,
        "restored": restored,
        "deleted": deleted,
        "kept": kept,
        "phases_ms": phases_ms,
        "direct": done,  # written back from the copy's memory, not pickled
    }


def _ud_fetch(held, names, values, kept, deadline):
    """The values of ``names`` pickled by the copy (into ``values``), or why not (into ``kept``)."""
    import pickle

    if not names:
        return
    _uh_request(held, {"op": "pickle", "names": names})
    while True:
        meta, buffers = _uh_read(held, deadline)
        if meta.get("done"):
            return
        name = meta["name"]
        if "reason" in meta:
            kept.append({"name": name, "reason": meta["reason"]})
            continue
        try:
            values[name] = pickle.loads(buffers[0], buffers=buffers[1:])
        except Exception as exc:
            why = f"does not unpickle here: {type(exc).__name__}: {exc}"
            kept.append({"name": name, "reason": why[:200]})


def _ud_in_place(current, value):
    """Write ``value``'s contents back into ``current`` (the same object the cell mutated), where its
    type allows it exactly; False otherwise (the name is then bound to ``value``)."""
    cls = type(current)
    if cls is not type(value):
        return False
    if cls in (list, bytearray):
        current[:] = value
        return True
    if cls in (dict, set):
        current.clear()
        current.update(value)
        return True
    if _isa(current, "ndarray") and cls is getattr(_sb_sys.modules.get("numpy"), "ndarray", None):
        if current.shape != value.shape or current.dtype != value.dtype or not current.flags.writeable:
            return False
        current[...] = value
        return True
    return False
