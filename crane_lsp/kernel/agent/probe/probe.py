"""The agent's entry point: ``snapshot(query_json)`` -> JSON shaped as ``wire.SnapshotWire``.

Called through ``probe_install.call_expression``; returns an object whose ``_repr_json_`` gives the
answer as ``application/json``. Rules (ARCHITECTURE, "trace-free probing"): it imports only modules
an IPython kernel has already loaded and reaches libraries through ``sys.modules`` only; objects
are hostile (``safe.py``); a per-object and per-request deadline bounds the work, after which
fields read ``None`` with ``error="deadline"``. Nothing it does changes ``user_ns``, ``_``, ``Out``,
``In``, the execution count, an RNG or an iterator.
"""

import builtins as _builtins
import json as _json
import os as _os
import platform as _platform
import sys as _sys
import threading as _threading
import time as _time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
        _Deadline,
        _JSONResult,
    )
    from crane_lsp.kernel.agent.probe.facts import (
        _find_spec_static,
        _lookup_static,
        _module_chain,
        _module_chain_end,
        _parse_subscript,
        _resolve_chain,
        _subscript_value,
    )
    from crane_lsp.kernel.agent.probe.sum_data import (
        _index_has,
    )
    from crane_lsp.kernel.agent.probe.sum_python import (
        _free_globals_wanted,
        _sum_callable,
    )
    from crane_lsp.kernel.agent.probe.summaries import (
        _summarise,
    )
    from crane_lsp.kernel.agent.safe import (
        _MISSING,
        _cls_name,
        _exc_text,
        _instance_dict,
        _qualname,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        DEFAULT_BUDGETS,
        PANDAS_KINDS,
        AttributeFactWire,
        Kind,
        ObjectWire,
        QueryWire,
        SnapshotWire,
    )


_VERSION_TEXT = "numpy pandas sklearn torch tensorflow keras matplotlib seaborn statsmodels scipy"


_VERSION_PACKAGES = tuple(_VERSION_TEXT.split())


#: Packages every kernel loads for itself: left out of ``imported`` to keep the JSON small.
_KERNEL_INFRA_TEXT = (
    "IPython ipykernel jupyter_client jupyter_core zmq tornado traitlets debugpy jedi parso "
    "prompt_toolkit pygments pexpect ptyprocess wcwidth stack_data executing asttokens pure_eval "
    "decorator pickleshare backcall comm platformdirs psutil nest_asyncio matplotlib_inline "
    "cython_runtime colorama orjson typing_extensions packaging six dateutil pytz certifi"
)


_KERNEL_INFRA = frozenset(_KERNEL_INFRA_TEXT.split())


def _shell():
    ipy = _sys.modules.get("IPython")
    get = getattr(ipy, "get_ipython", None) if ipy is not None else None
    return get() if get is not None else None


def _versions():
    pkgs = {}
    for name in _VERSION_PACKAGES:
        mod = _sys.modules.get(name)
        if mod is None:
            continue
        v = (_instance_dict(mod) or {}).get("__version__")
        if type(v) is str:
            pkgs[name] = v
    return {"python": _platform.python_version(), "packages": pkgs}


def _imported():
    std: frozenset = getattr(_sys, "stdlib_module_names", frozenset())
    tops = set()
    for name in list(_sys.modules):
        top = name.split(".")[0]
        if top.startswith(("_", "pydev")) or top in std or top in _KERNEL_INFRA:
            continue
        tops.add(top)
    return sorted(tops)


def snapshot(query_json):
    """Summaries and facts for one target cell's query (a ``snapshot.ProbeQuery`` as JSON)."""
    try:
        query: QueryWire = {**DEFAULT_BUDGETS, **_json.loads(query_json)}  # absent budgets: the wire's
    except Exception as exc:
        return _JSONResult({"ok": False, "errors": [f"bad query: {exc}"]})
    try:
        return _JSONResult(_snapshot(query))
    except BaseException as exc:  # never let a probe failure surface as a kernel error
        if type(exc) in (KeyboardInterrupt, SystemExit):
            raise
        return _JSONResult(
            {"ok": False, "errors": [f"probe failed: {_cls_name(type(exc))}: {_exc_text(exc)}"]}
        )


def _generation(shell):
    """The shell's execution count; beside a running cell (a subshell thread), that cell's own count.

    IPython 9 counts a cell before running it, IPython 8 after, so a probe beside cell N reads N+1
    under 9: report N under both, as the cell's ``execute_input`` said.
    """
    count = getattr(shell, "execution_count", None) if shell is not None else None
    if type(count) is not int or _threading.current_thread() is _threading.main_thread():
        return count
    version = getattr(_sys.modules.get("IPython"), "version_info", None)
    if type(version) is tuple and version and type(version[0]) is int and version[0] >= 9:
        return count - 1
    return count


def _fact_wire(fact) -> AttributeFactWire:
    """The fact without its unknown fields (``exists`` stays: None there is the answer "cannot tell")."""
    out: AttributeFactWire = {"exists": fact.get("exists")}
    if fact.get("owner_type") is not None:
        out["owner_type"] = fact["owner_type"]
    if fact.get("owner_kind") is not None:
        out["owner_kind"] = fact["owner_kind"]
    if fact.get("dynamic") is not None:
        out["dynamic"] = fact["dynamic"]
    if fact.get("hook") is not None:
        out["hook"] = fact["hook"]
    return out


def _snapshot(query: QueryWire) -> SnapshotWire:
    clock = _Clock(float(query["request_budget_s"]), float(query["object_budget_s"]))
    shell = _shell()
    ns = shell.user_ns if shell is not None else _sys.modules["__main__"].__dict__
    out: SnapshotWire = {
        "ok": True,
        "generation": _generation(shell),
        "variables": {},
        "attributes": {},
        "paths": {},
        "undefined": [],
        "modules": {},
        "errors": [],
    }
    try:
        out["cwd"] = _os.getcwd()
    except Exception:
        out["cwd"] = None
    variables: dict[str, ObjectWire] = out["variables"]

    # which DataFrame columns the cell subscripts: their stats are computed even past max_columns
    wanted: dict = {}
    subs = []
    for text in query.get("subscripts", []):
        parsed = _parse_subscript(text)
        subs.append((text, parsed))
        if parsed is not None:
            keys = parsed[2] if type(parsed[2]) is list else [parsed[2]]
            wanted.setdefault(".".join(parsed[0]), []).extend(keys)

    for name in query.get("names", []):
        if name in ns:
            variables[name] = _summarise(ns[name], query, clock, wanted.get(name, ()))
        elif not hasattr(_builtins, name):
            out["undefined"].append(name)
    known = frozenset(query.get("known") or ())  # the client holds these for this state already
    done: set = set()
    for _depth in range(3):  # what cell functions read (and the functions those call), two levels deep
        for name in _free_globals_wanted(variables, ns, done):
            if name not in known:
                variables[name] = _summarise(dict.__getitem__(ns, name), query, clock)

    for chain in query.get("chains", []):
        parts = chain.split(".")
        if parts[0].startswith("@"):  # a loaded module's namespace (``@numpy.amax``), whatever name holds it
            try:
                steps = _module_chain(parts)
                for key, fact, _value, _plain in steps:
                    out["attributes"][key] = _fact_wire(fact)
                end = _module_chain_end(parts, steps)
                if end is not _MISSING and chain not in variables:
                    variables[chain] = _summarise(end, query, clock)
            except Exception as exc:
                out["errors"].append(f"chain {chain}: {_cls_name(type(exc))}")
            continue
        if len(parts) < 2 or parts[0] not in ns:
            if (
                parts
                and parts[0] not in ns
                and not hasattr(_builtins, parts[0])
                and parts[0] not in out["undefined"]
            ):
                out["undefined"].append(parts[0])
            continue
        base = ns[parts[0]]
        if parts[0] not in variables and parts[0] not in known:
            variables[parts[0]] = _summarise(base, query, clock, wanted.get(parts[0], ()))
        try:
            steps = _resolve_chain(base, parts[1:])
        except Exception as exc:
            out["errors"].append(f"chain {chain}: {_cls_name(type(exc))}")
            continue
        for n_attrs, fact, value, plain, drop_self in steps:
            key = ".".join(parts[: n_attrs + 1])
            out["attributes"][key] = _fact_wire(fact)
            if value is not _MISSING and plain and key not in variables and key not in known:
                if drop_self:
                    s: ObjectWire = {"type": _qualname(type(value)), "kind": Kind.FUNCTION}
                    clock.begin_object()
                    _sum_callable(value, s, query, clock, drop_self=True)
                    variables[key] = s
                else:
                    variables[key] = _summarise(value, query, clock, wanted.get(key, ()))

    for text, parsed in subs:
        if parsed is None or text in variables:
            continue
        parts, accessor, key = parsed
        try:
            target = _lookup_static(ns, parts)
            if target is _MISSING:
                continue
            value = _subscript_value(target, accessor, key)
        except Exception as exc:
            out["errors"].append(f"subscript {text}: {_cls_name(type(exc))}")
            continue
        if value is not _MISSING:
            variables[text] = _summarise(value, query, clock)

    index_labels = query.get("index_labels") or {}
    for text, labels in index_labels.items() if type(index_labels) is dict else ():
        summ = variables.get(text)
        if type(text) is not str or summ is None or summ.get("kind") not in PANDAS_KINDS:
            continue
        clock.begin_object()
        try:
            target = _lookup_static(ns, text.split("."))
            if target is not _MISSING:
                summ["index_has"] = _index_has(target, labels, clock)
        except _Deadline:
            summ.setdefault("error", DEADLINE)
        except Exception as exc:
            out["errors"].append(f"index labels of {text}: {_cls_name(type(exc))}")

    for p in query.get("paths", []):
        try:
            out["paths"][p] = _os.path.exists(_os.path.expanduser(p))
        except Exception:
            out["paths"][p] = False
    for m in query.get("modules", []):
        found = _find_spec_static(m)
        if found is not None:
            out["modules"][m] = found
    out["imported"] = _imported()
    out["versions"] = _versions()
    out["deadline_hit"] = clock.hit
    out["elapsed_ms"] = round((_time.monotonic() - clock.start) * 1000, 2)
    return out
