"""The code that installs the probe in a kernel, and the expression that queries it.

The probe lives as a private module in the kernel's ``sys.modules`` (never in ``user_ns``). Both
snippets are single expressions or self-deleting statements, so they leave no name behind.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent
#: The kernel agent, the jail and the dry-run sandbox travel as one private module (standard library
#: only), joined as text in this order: a module uses names of the modules before it at call time,
#: and a module-level table only those before it. ``tests/test_probe_install.py`` fails on a top-level
#: name that two of them define. Every module lives in ``agent/``: the shared contract and guards at its
#: top, then ``probe/``, ``jail/`` (the security boundary), ``dryrun/`` and ``shorten/``.
SOURCES = (
    "agent/wire.py",
    "agent/dryrun_wire.py",
    "agent/safe.py",
    "agent/guard.py",
    "agent/probe/stats.py",
    "agent/probe/frames.py",
    "agent/probe/sum_data.py",
    "agent/probe/sk_protocol.py",
    "agent/probe/sum_ml.py",
    "agent/probe/sum_python.py",
    "agent/probe/summaries.py",
    "agent/probe/facts.py",
    "agent/probe/probe.py",
    "agent/dryrun/refusal.py",
    "agent/dryrun/failfacts.py",
    "agent/dryrun/failkeywords.py",
    "agent/jail/jail_seccomp.py",
    "agent/jail/jail_semaphores.py",
    "agent/jail/jail_writes.py",
    "agent/jail/jail_answers.py",
    "agent/jail/jail_fds.py",
    "agent/jail/jail_maps.py",
    "agent/jail/jail_landlock.py",
    "agent/jail/jail_threads.py",
    "agent/jail/jail_workers.py",
    "agent/dryrun/dryrun_timeit.py",
    "agent/shorten/shorten_sample.py",
    "agent/shorten/shorten_extrapolate.py",
    "agent/shorten/shorten_report.py",
    "agent/dryrun/standin.py",
    "agent/dryrun/standin_tf.py",
    "agent/dryrun/standins.py",
    "agent/undo/undo_print.py",
    "agent/dryrun/preview.py",
    "agent/dryrun/copies.py",
    "agent/dryrun/dryrun.py",
    "agent/shorten/shorten_flow.py",
    "agent/shorten/shorten_rules.py",
    "agent/shorten/shorten.py",
    "agent/dryrun/dryrun_warm.py",
    "agent/undo/undo_hold.py",
    "agent/dryrun/dryrun_many.py",
    "agent/undo/undo_direct.py",
    "agent/undo/undo.py",
)
PROBE_SOURCE = "\n\n".join((_HERE / name).read_text(encoding="utf-8") for name in SOURCES)
PROBE_VERSION = hashlib.sha1(PROBE_SOURCE.encode()).hexdigest()[:10]
MODULE_NAME = "_crane_probe"


def install_code(source: str = PROBE_SOURCE, version: str = PROBE_VERSION, module: str = MODULE_NAME) -> str:
    """A statement that (re)creates ``sys.modules[module]`` from ``source``; binds no user names, and
    reaches builtins through ``builtins`` (a user's ``exec = ...`` or ``compile = ...`` must not break it)."""
    return (
        "(lambda _s, _v, _n: (lambda sys, types: sys.modules.__setitem__(_n, "
        "(lambda m: (m.__dict__.__setitem__('__crane_version__', _v), "
        "__import__('builtins').exec(__import__('builtins').compile(_s, '<crane-probe>', 'exec'), "
        "m.__dict__), m)[-1])(types.ModuleType(_n))))"
        "(__import__('sys'), __import__('types')))"
        f"({json.dumps(source)}, {json.dumps(version)}, {json.dumps(module)})"
    )


def installed_expression(version: str = PROBE_VERSION, module: str = MODULE_NAME) -> str:
    """A user expression that is ``True`` when this exact probe version is installed."""
    return (
        f"__import__('builtins').getattr(__import__('sys').modules.get({json.dumps(module)}), "
        f"'__crane_version__', None) == {json.dumps(version)}"
    )


def call_expression(function: str, payload: dict[str, Any], module: str = MODULE_NAME) -> str:
    """A user expression calling ``probe.<function>(payload)``; the result renders as application/json."""
    return f"__import__('sys').modules[{json.dumps(module)}].{function}({json.dumps(json.dumps(payload))})"
