"""Why a fork of this kernel cannot run a cell faithfully: live Spark, Dask distributed, Polars' pool.

Read statically, nothing is called; the dry run (``dryrun.py``) asks ``_frm_refusal`` before it forks.
"""

import os as _os
import re as _re
import sys as _sys
import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.probe.probe import (
        _shell,
    )
    from crane_lsp.kernel.agent.safe import (
        _cls_module,
        _instance_dict,
        _mro,
    )


def _frm_class_attr(module, cls_name, attr):
    d = _instance_dict(_sys.modules.get(module))
    cls = d.get(cls_name) if d is not None else None
    if cls is None:
        return None
    for c in type.__dict__["__mro__"].__get__(cls) if type in _mro(cls) else ():
        if attr in c.__dict__:
            return c.__dict__[attr]
    return None


def _frm_refusal(source=""):
    """Why a fork of this kernel cannot run the cell ``source`` faithfully and confined, or None.

    A live Spark session is a JVM (or a Connect server) behind a socket: the fork shares the socket,
    not the JVM, so a cell's Spark calls would reach the real session. A Dask distributed client
    likewise talks to a scheduler and workers outside the process. Polars' worker threads do not
    survive a fork: once its pool runs, a cell using Polars deadlocks in the child on its first
    parallel operation (measured: every group_by/collect timed out). Read statically, no call."""
    for module in ("pyspark.core.context", "pyspark.context"):
        sc = _frm_class_attr(module, "SparkContext", "_active_spark_context")
        if sc is not None and (_instance_dict(sc) or {}).get("_jsc") is not None:  # not stopped
            return (
                "a Spark session is live: its JVM runs outside the kernel, a fork cannot copy or confine it"
            )
    for module in ("pyspark.sql.connect.session",):
        if _frm_class_attr(module, "SparkSession", "_default_session") is not None:
            return "a Spark Connect session is live: its server runs outside the kernel"
    clients = _instance_dict(_sys.modules.get("distributed.client"))
    registry = clients.get("_global_clients") if clients is not None else None
    live = []
    try:
        for client in list(registry.values()) if registry is not None else ():
            if (_instance_dict(client) or {}).get("status") not in ("closed", "closing"):
                live.append(client)
    except Exception:
        live = []
    if live:
        return "a Dask distributed client is live: its scheduler and workers run outside the kernel"
    if source and _frm_polars_pool_live() and _frm_uses_polars(source):
        return "Polars' thread pool is running: a forked copy would deadlock on its first parallel operation"
    return None


def _frm_polars_pool_live():
    if "polars" not in _sys.modules:
        return False
    try:
        tasks = _os.listdir("/proc/self/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open("/proc/self/task/" + tid + "/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith("polars-") and name[7:].isdigit():
            return True
    return False


def _frm_uses_polars(source):
    """Whether the cell names a Polars object, function or the module itself (by the user's names)."""
    shell = _shell()
    ns = shell.user_ns if shell is not None else _sys.modules["__main__"].__dict__
    for name in set(_re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source)):
        if name == "polars":
            return True
        value = ns.get(name, None)
        if value is None:
            continue
        mro = _mro(value)
        if _types.ModuleType in mro:
            mod = (_instance_dict(value) or {}).get("__name__")
        elif type(value) in (_types.FunctionType, _types.BuiltinFunctionType):
            mod = object.__getattribute__(value, "__module__")
        else:
            mod = _cls_module(value if type in mro else type(value))
        top = mod.split(".")[0] if type(mod) is str else ""
        if top == "polars":
            return True
    return False
