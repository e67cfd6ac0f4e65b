"""A crash inside a function the user defined, shown on the line of the cell that calls it.

``prep(df)`` where ``def prep(d): return d[['a', 'b']]`` (earlier in the cell, or in an earlier cell)
and ``df`` has no column ``'b'``: every step hook runs on the function's body with ``d`` bound to
``df`` (``analysis.userfuncs``), and the first finding there is reported on the call: "raises in prep()
(its line 2): ...". It is certain when no earlier line of the body may raise, else a Warning "raises
... if reached" (``Finding.unproven_reach``) that the dry run decides.
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.userfuncs import PREPARE, follow
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import REGISTRY, CheckHook, Finding, step
from crane_lsp.snapshot import Snapshot

CHECK_ID = "user-function"


def _prepare(facts: CellFacts, snapshot: Snapshot) -> tuple[CellFacts, dict[str, CheckHook]]:
    """The inner walk's facts (library calls vouched for, as ``run_checks`` does) and every step hook."""
    from crane_lsp.checks.runner import library_function, load_checks

    load_checks()
    facts = facts.refined(library_function(facts, snapshot))
    hooks: dict[str, CheckHook] = {}
    for check_id, factory in REGISTRY.steps.items():
        hook = factory(facts, snapshot)
        if hook is not None:
            hooks[check_id] = hook
    return facts, hooks


PREPARE[:] = [_prepare]


@step(CHECK_ID, on=(ast.Call,), needs_value=False)
def user_function_crash(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    for call in w.evaluated_of(stmt, ast.Call):
        if not isinstance(call.func, ast.Name):
            continue
        got = follow(w, call)
        if got is None or got.finding is None or not isinstance(got.finding, Finding):
            continue
        inner = got.finding
        renames = got.renames or {}
        variables = tuple(dict.fromkeys(v for n in inner.variables for v in renames.get(n, (n,))))
        name = got.func.name
        unproven = inner.unproven_reach  # a call two deep: the inner call's own doubt
        if got.risky_line is not None and not unproven:
            unproven = f"line {got.risky_line} of {name}() may raise before its line {got.line} is reached"
        return [
            Finding(
                check_id=CHECK_ID,
                exception=inner.exception,
                span=w.span(call),
                message=f"raises in {name}() (its line {got.line}): {inner.message}",
                evidence=(("check inside the function", inner.check_id), *inner.evidence),
                variables=variables,
                diagnosis=(
                    f"{ast.unparse(call)} runs {name}() with these arguments; its line {got.line} "
                    f"raises {inner.exception}: {inner.diagnosis or inner.message}"
                ),
                unproven_reach=unproven,
            )
        ]
    return []
