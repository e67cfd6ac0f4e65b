"""Table-driven harness for the library checks: real kernel state, real probe, and the cell really run.

``verify(kernel, case)`` resets the kernel, runs ``case.setup``, snapshots what the cell reads, runs the
named check, then RUNS the cell: a crash case must be predicted with the exception the kernel really
raises; a near miss must run clean with the check silent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crane_lsp.cellcode import analyze
from crane_lsp.checks.base import REGISTRY, Finding
from crane_lsp.runtime import ProbeQuery
from tests.probe_util import snapshot

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")


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


def predict(kernel: object, check_id: str, cell: str) -> list[Finding]:
    facts = analyze(cell)
    # generous budgets: on a loaded test machine a deadline would make a crash case flaky (silent)
    query = ProbeQuery(**facts.probe_query_fields(), object_budget_s=10, request_budget_s=30)
    snap = snapshot(kernel, query)
    return REGISTRY.checks[check_id](facts, snap)


def _crash_line(reply: dict) -> int | None:
    """0-based line of the target cell where the exception was raised, from the traceback."""
    text = _ANSI.sub("", "\n".join(reply.get("traceback", [])))
    match = _CELL_LINE.search(text)
    return int(match.group(1)) - 1 if match else None


def verify(kernel: object, case: Case) -> None:
    kernel.run("%reset -f")  # type: ignore[attr-defined]
    kernel.run(case.setup)  # type: ignore[attr-defined]
    findings = predict(kernel, case.check, case.cell)
    reply = kernel.run(case.cell, allow_error=True)  # type: ignore[attr-defined]
    raised = reply.get("ename") if reply["status"] == "error" else None
    if raised is not None and findings:
        real_line = _crash_line(reply)
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
