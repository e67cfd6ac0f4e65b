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
#: The probe, the jail and the dry-run sandbox travel as one private module (all standard library
#: only). Each jail module prefixes its top-level names, so joining them cannot clash; the sandbox
#: comes last and uses their names.
SOURCES = (
    "probe.py",
    "frames.py",
    "jail_seccomp.py",
    "jail_fds.py",
    "jail_maps.py",
    "jail_landlock.py",
    "jail_threads.py",
    "sandbox.py",
)
PROBE_SOURCE = "\n\n".join((_HERE / name).read_text(encoding="utf-8") for name in SOURCES)
PROBE_VERSION = hashlib.sha1(PROBE_SOURCE.encode()).hexdigest()[:10]
MODULE_NAME = "_crane_probe"


def install_code(source: str = PROBE_SOURCE, version: str = PROBE_VERSION, module: str = MODULE_NAME) -> str:
    """A statement that (re)creates ``sys.modules[module]`` from ``source``; binds no user names."""
    return (
        "(lambda _s, _v, _n: (lambda sys, types: sys.modules.__setitem__(_n, "
        "(lambda m: (m.__dict__.__setitem__('__crane_version__', _v), "
        "exec(compile(_s, '<crane-probe>', 'exec'), m.__dict__), m)[-1])(types.ModuleType(_n))))"
        "(__import__('sys'), __import__('types')))"
        f"({json.dumps(source)}, {json.dumps(version)}, {json.dumps(module)})"
    )


def installed_expression(version: str = PROBE_VERSION, module: str = MODULE_NAME) -> str:
    """A user expression that is ``True`` when this exact probe version is installed."""
    return (
        f"getattr(__import__('sys').modules.get({json.dumps(module)}), '__crane_version__', None) "
        f"== {json.dumps(version)}"
    )


def call_expression(function: str, payload: dict[str, Any], module: str = MODULE_NAME) -> str:
    """A user expression calling ``probe.<function>(payload)``; the result renders as application/json."""
    return f"__import__('sys').modules[{json.dumps(module)}].{function}({json.dumps(json.dumps(payload))})"
