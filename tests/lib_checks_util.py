"""Table-driven harness for the library checks: real kernel state, real probe, and the cell really run.

``verify(kernel, case)`` resets the kernel, runs ``case.setup``, snapshots what the cell reads, runs the
named check, then RUNS the cell: a crash case must be predicted with the exception the kernel really
raises; a near miss must run clean with the check silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crane_lsp.analysis.parse import analyze
from crane_lsp.checks.registry import REGISTRY, Finding
from crane_lsp.snapshot import ProbeQuery
from tests.check_util import crash_line
from tests.probe_util import snapshot


@dataclass(frozen=True)
class Case:
    id: str
    check: str
    setup: str
    cell: str
    exception: str | None  # None: a near miss, must run clean and stay silent
    line: int | None = None  # 0-based line the finding must point at

    def __str__(self) -> str:
        return self.id


def predict(kernel: Any, check_id: str, cell: str) -> list[Finding]:
    facts = analyze(cell)
    # generous budgets: on a loaded test machine a deadline would make a crash case flaky (silent)
    query = ProbeQuery(**facts.probe_query_fields(), object_budget_s=10, request_budget_s=30)
    snap = snapshot(kernel, query)
    return REGISTRY.checks[check_id](facts, snap)


def verify(kernel: Any, case: Case) -> None:
    kernel.run("%reset -f")
    kernel.run(case.setup)
    findings = predict(kernel, case.check, case.cell)
    reply = kernel.run(case.cell, allow_error=True)
    raised = reply.get("ename") if reply["status"] == "error" else None
    if raised is not None and findings:
        real_line = crash_line(reply)
        assert real_line is None or findings[0].span.line <= real_line <= findings[0].span.end_line, (
            f"finding on line {findings[0].span.line}, the cell really raised on line {real_line}"
        )
    if case.exception is None:
        assert raised is None, f"near miss really raised {raised}: {reply.get('evalue')}"
        assert findings == [], f"check fired on code that runs: {findings}"
        return
    assert raised == case.exception, (
        f"cell raised {raised} ({reply.get('evalue')}), case expects {case.exception}"
    )
    assert findings, f"check {case.check} stayed silent; the cell raised {raised}: {reply.get('evalue')}"
    assert findings[0].exception == raised, f"predicted {findings[0].exception}, really {raised}"
    assert findings[0].check_id == case.check
    if case.line is not None:
        assert findings[0].span.line == case.line, (
            f"finding on line {findings[0].span.line}, expected {case.line}"
        )
