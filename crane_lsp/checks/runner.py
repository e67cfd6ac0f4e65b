"""Run every registered built-in check on one cell, isolating each from the others.

A check is imported once (its module registers it with ``@check``); a check that raises is logged
and skipped, never allowed to hide the findings of the others. Findings come back in position
order, which is execution order for the statements the checks look at: the FIRST one is the crash
that stops the cell.
"""

from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
from collections.abc import Callable

from crane_lsp.analysis.effects import PURE_LIBRARIES
from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.gcpause import gc_paused
from crane_lsp.analysis.kinds import Kind
from crane_lsp.checks.registry import REGISTRY, CheckFn, CheckHook, Finding, walk_hooks
from crane_lsp.snapshot import Snapshot

_log = logging.getLogger(__name__)

#: The order the first check modules register in (a tie in position goes to the earlier check).
_FIRST: tuple[str, ...] = (
    "crane_lsp.checks.python",
    "crane_lsp.checks.pandas",
    "crane_lsp.checks.arrays",
    "crane_lsp.checks.sklearn",
    "crane_lsp.checks.plotting",
    "crane_lsp.checks.keras",
    "crane_lsp.checks.frames",
    "crane_lsp.checks.frame_ops",
    "crane_lsp.checks.frame_keys",
    "crane_lsp.checks.containers",
    "crane_lsp.checks.aggregations",
    "crane_lsp.checks.built_methods",
    "crane_lsp.checks.user_functions",
    "crane_lsp.checks.pipelines",
    "crane_lsp.checks.text_reductions",
    "crane_lsp.checks.plot_columns",
    "crane_lsp.checks.plot_lengths",
)
#: Modules of this package that are not checks.
_NOT_CHECKS = frozenset({"registry", "runner"})


def _check_modules() -> tuple[str, ...]:
    """Every module of ``crane_lsp.checks`` but the registry and the runner: ``_FIRST`` in its order,
    then any other, found on disk (a new check module needs no edit here)."""
    import crane_lsp.checks

    found = sorted(
        m.name for m in pkgutil.iter_modules(crane_lsp.checks.__path__) if m.name not in _NOT_CHECKS
    )
    rest = tuple(f"crane_lsp.checks.{name}" for name in found if f"crane_lsp.checks.{name}" not in _FIRST)
    return _FIRST + rest


#: Modules whose import registers checks. A module that fails to import is logged and skipped.
CHECK_MODULES: tuple[str, ...] = _check_modules()


@functools.cache
def _import(module: str) -> bool:
    try:
        importlib.import_module(module)
    except Exception:
        _log.exception("check module %s failed to import; its checks are skipped", module)
        return False
    return True


def load_checks(modules: tuple[str, ...] = CHECK_MODULES) -> dict[str, CheckFn]:
    """Import the check modules (each once) and return the registry: check id -> function."""
    for name in modules:
        _import(name)
    return dict(REGISTRY.checks)


#: Top-level packages whose functions do not change the arguments they are given (the effects table).
LIBRARIES = PURE_LIBRARIES


def library_function(facts: CellFacts, snapshot: Snapshot) -> Callable[[str], bool]:
    """Whether a plain name the cell calls is a library function (imported here or in the kernel)."""

    def is_library(name: str) -> bool:
        for imp in facts.imports:
            if imp.level == 0 and name in imp.names:
                return imp.module.split(".")[0] in LIBRARIES
        summary = snapshot.variables.get(name)
        if summary is None or summary.kind not in (Kind.FUNCTION, Kind.CLASS, Kind.OTHER):
            return False
        origin = summary.module if summary.kind != Kind.OTHER else summary.type
        return (origin or "").split(".")[0] in LIBRARIES

    return is_library


def _order(finding: Finding) -> tuple[int, int, int, int]:
    s = finding.span
    return (s.line, s.col, s.end_line, s.end_col)


def run_checks(facts: CellFacts, snapshot: Snapshot, *, only: set[str] | None = None) -> list[Finding]:
    """Every finding of every check (or of the ids in ``only``), sorted by position in the cell.

    Whole-cell checks are called one by one; the step hooks all ride ONE walk of the cell."""
    facts = facts.refined(library_function(facts, snapshot))
    findings: list[Finding] = []
    hooks: dict[str, CheckHook] = {}
    for check_id, fn in load_checks().items():
        if only is not None and check_id not in only:
            continue
        try:
            factory = REGISTRY.steps.get(check_id)
            if factory is not None:
                hook = factory(facts, snapshot)
                if hook is not None:
                    hooks[check_id] = hook
                continue
            findings.extend(fn(facts, snapshot))
        except Exception:
            _log.exception("check %s raised; skipped", check_id)
    with gc_paused():
        for found in walk_hooks(facts, snapshot, hooks).values():
            findings.extend(found)
    findings.sort(key=_order)
    return findings


def first_finding(facts: CellFacts, snapshot: Snapshot) -> Finding | None:
    """The crash that stops the cell: the first finding in execution order, or None."""
    findings = run_checks(facts, snapshot)
    return findings[0] if findings else None
