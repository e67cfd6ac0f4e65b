"""What every built-in check is and returns.

A check is a pure function ``(facts, snapshot) -> list[Finding]``, registered with ``@check("id")``.
It reports only crashes that the kernel state PROVES (certain means certain): when a fact is
unknown, sampled past the budget, or the cell may have changed a value before the line
(``facts.untrusted_from``), the check stays silent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crane_lsp.cellcode import CellFacts, Span
from crane_lsp.runtime import Snapshot


@dataclass(frozen=True)
class Finding:
    check_id: str
    exception: str  # class name the cell will raise, e.g. "KeyError"
    span: Span  # where the squiggle goes (the offending expression, not the whole line)
    message: str  # one sentence, e.g. "column 'Hour' does not exist in df"
    evidence: tuple[tuple[str, str], ...] = ()  # (fact, value), e.g. ("df.columns", "['a', 'b']")
    variables: tuple[str, ...] = ()  # kernel variables involved (for origin lookup)
    diagnosis: str = ""  # longer explanation; defaults to the message
    # a certain repair, e.g. the existing column a misspelt literal was meant to name:
    # (span of the text to replace, the replacement source text, a short description)
    replacement: tuple[Span, str, str] | None = None


CheckFn = Callable[[CellFacts, Snapshot], list[Finding]]


@dataclass
class _Registry:
    checks: dict[str, CheckFn] = field(default_factory=dict)


REGISTRY = _Registry()


def check(check_id: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check under a stable id (shown to users as ``check:<id>``)."""

    def register(fn: CheckFn) -> CheckFn:
        if check_id in REGISTRY.checks:
            raise ValueError(f"duplicate check id {check_id!r}")
        REGISTRY.checks[check_id] = fn
        return fn

    return register
