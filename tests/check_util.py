"""Test helpers shared by every check's tests: predict from a REAL snapshot, then REALLY run the cell.

    assert_predicts(kernel, setup, cell, "KeyError", line=2)   # check fires, cell really raises there
    assert_silent_and_runs(kernel, setup, cell)                # no check fires, cell really runs clean

Both reset the kernel namespace first, run ``setup`` as a user cell, analyse ``cell``, take a
snapshot through the real probe (``probe_util``), run every registered check, and compare with what
the kernel does when the cell is executed.
"""

from __future__ import annotations

import re
from typing import Any

from probe_util import snapshot

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze
from crane_lsp.checks.registry import Finding
from crane_lsp.checks.runner import run_checks
from crane_lsp.snapshot import ProbeQuery, Snapshot

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")
_TIMED_LINE = re.compile(r"File <timed (?:exec|eval)>:(\d+)")


def prepare(kernel: Any, setup: str = "") -> None:
    """A clean namespace holding only what ``setup`` creates."""
    kernel.reset()
    if setup:
        kernel.run(setup)


def facts_and_snapshot(kernel: Any, cell: str) -> tuple[CellFacts, Snapshot]:
    facts = analyze(cell)
    return facts, snapshot(kernel, ProbeQuery(**facts.probe_query_fields()))


def predict(kernel: Any, cell: str, only: set[str] | None = None) -> list[Finding]:
    """All findings for ``cell`` against the kernel's current state (nothing is executed)."""
    facts, snap = facts_and_snapshot(kernel, cell)
    return run_checks(facts, snap, only=only)


def run_cell(kernel: Any, cell: str) -> tuple[str | None, int | None]:
    """Execute ``cell``; (exception class name or None, 0-based line in the cell where it was raised)."""
    errors: list[dict[str, Any]] = []  # %%time and friends print the traceback but reply "ok"

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "error":
            errors.append(msg["content"])

    reply = kernel.interact(cell, timeout=120, output_hook=hook)
    content = reply["content"]
    error = content if content["status"] == "error" else (errors[0] if errors else None)
    if error is None:
        return None, None
    return error["ename"], crash_line(error)


def crash_line(error: dict[str, Any]) -> int | None:
    """0-based line of the executed cell where an error reply's exception was raised (from its traceback)."""
    text = _ANSI.sub("", "\n".join(error.get("traceback", [])))
    match = _CELL_LINE.search(text)
    if match is None:
        return None
    # IPython 9 shows a cell magic's call (line 1) and then its body's frame: the body says the line
    timed = _TIMED_LINE.search(text, match.end())
    if timed is not None and "run_cell_magic(" in text[match.end() : timed.start()]:
        return int(timed.group(1))
    return int(match.group(1)) - 1


def assert_predicts(
    kernel: Any,
    setup: str,
    cell: str,
    exception: str,
    line: int,
    *,
    check_id: str | None = None,
    message: str | None = None,
) -> Finding:
    """The first finding is ``exception`` on ``line`` (0-based); running the cell really raises it there."""
    prepare(kernel, setup)
    findings = predict(kernel, cell)
    assert findings, f"no check fired for:\n{cell}"
    first = findings[0]
    assert (first.exception, first.span.line) == (exception, line), f"first finding: {first}"
    if check_id is not None:
        assert first.check_id == check_id, first
    if message is not None:
        assert message in first.message, first.message
    ename, raised_line = run_cell(kernel, cell)
    assert ename == exception, f"the cell raised {ename}, the check predicted {exception}"
    if raised_line is not None:
        assert raised_line == line, f"the cell raised on line {raised_line}, the check said {line}"
    return first


def assert_silent_and_runs(kernel: Any, setup: str, cell: str) -> None:
    """No check fires, and the cell really runs clean."""
    prepare(kernel, setup)
    findings = predict(kernel, cell)
    assert findings == [], f"a check fired on a cell that runs: {findings}"
    ename, raised_line = run_cell(kernel, cell)
    assert ename is None, f"the near miss raised {ename} on line {raised_line}"
