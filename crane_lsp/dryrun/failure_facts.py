"""An observed crash that explains itself: the facts the dry run's child read at the failing line.

The child (``kernel/agent/dryrun/failfacts.py``) answers the values the failing line reads (and those of the
innermost function from an earlier cell), the loop it was in and where each value was last bound.
Here they become what the user reads, the way the checks show theirs: a one-line cause in the checks'
voice where the facts make it plain (``causes.py``), the raw message kept beneath it, evidence
rows, and origins in editor coordinates (the executed cell that last assigned each operand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.analysis.origins import origins
from crane_lsp.kernel.agent.wire import Kind
from crane_lsp.prediction import Evidence, Origin
from crane_lsp.render import format_shape
from crane_lsp.snapshot import ObjectSummary

Scope = Literal["line", "frame"]
#: Evidence rows a verdict carries at most (the JupyterLab verdict shows the first eight).
MAX_EVIDENCE = 8


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")  # keys of ``wire.FailFactsWire``: a misspelt one fails


class FailValue(_Wire):
    name: str  # ``w``, ``self.w``, ``labels[i]``
    scope: Scope
    summary: ObjectSummary
    assigned: int | None = None  # 1-based line of its source that last bound it before the failing line
    again: int | None = None  # a line of the enclosing loop, at or after the failing one, that rebinds it
    loop: int | None = None  # the variable of the loop on this line


class FailFrame(_Wire):
    function: str
    line: int  # 1-based, in the cell that defines the function
    first_line: int | None = None
    execution_count: int | None = None
    text: str | None = None


class FailLoop(_Wire):
    scope: Scope
    line: int
    target: str
    iterable: str
    iteration: int | None = None  # 1-based
    total: int | None = None
    positions: list[int] = Field(default_factory=list)


class FailKeyword(_Wire):
    call: str  # ``gen.flow_from_directory``
    keyword: str  # the keyword its parameters lack
    near: str  # the closest of its named parameters (or of ``via``'s setter properties)
    via: str | None = Field(default=None)  # the class that rejected a keyword the callee handed on


class FailFacts(_Wire):
    """``wire.FailFactsWire``, validated."""

    line: int | None = None
    values: list[FailValue] = Field(default_factory=list)
    frame: FailFrame | None = None
    loops: list[FailLoop] = Field(default_factory=list)
    keywords: list[FailKeyword] = Field(default_factory=list)
    elapsed_ms: float | None = None
    deadline_hit: bool = False
    truncated: bool = False
    privacy: bool = False  # collected in privacy mode: nothing shown here may carry a value either
    error: str | None = None

    def value(self, name: str, scope: Scope | None = None) -> FailValue | None:
        return next((v for v in self.values if v.name == name and scope in (None, v.scope)), None)

    def loop(self, scope: Scope) -> FailLoop | None:
        """The innermost loop of that scope (the child lists the innermost first)."""
        return next((lp for lp in self.loops if lp.scope == scope), None)


def short_type(summary: ObjectSummary) -> str:
    return summary.type.rsplit(".", 1)[-1]


def describe(summary: ObjectSummary, privacy: bool = False) -> str:
    """One value in a few words: ``ndarray (1, 4) float64``, ``DataFrame (891, 11); columns a, b…``."""
    kind, name = summary.kind, short_type(summary)
    if summary.shape is not None and kind not in (Kind.DATAFRAME,):
        text = f"{name} {format_shape(summary.shape)}" + (f" {summary.dtype}" if summary.dtype else "")
    elif kind == Kind.DATAFRAME:
        text = f"{name} {format_shape(summary.shape)}" + _columns_text(summary)
    elif kind in (Kind.STR, Kind.BYTES):
        shown = summary.value is not None and not privacy
        text = f"{name} {summary.value!r}" if shown else f"{name} of {summary.length} characters"
    elif summary.value is not None:
        text = f"{name} {summary.value}"
    elif kind in (Kind.LIST, Kind.TUPLE, Kind.SET):
        items = "/".join(summary.element_types or []) or "nothing"
        text = f"{name} of {summary.length} ({items})"
        if summary.repr and not privacy and len(summary.repr) <= 60:
            text += f" = {summary.repr}"
    elif kind == Kind.DICT:
        keys = ", ".join((summary.keys or [])[:6]) + ("…" if (summary.length or 0) > 6 else "")
        text = f"{name} of {summary.length}" + (f"; keys {keys}" if keys else "")
    elif summary.estimator is not None:
        e = summary.estimator
        text = f"{name}, " + ("fitted" if e.fitted else "not fitted" if e.fitted is False else "fit unknown")
        if e.n_features_in is not None:
            text += f", n_features_in_ {e.n_features_in}"
    elif summary.length is not None:
        text = f"{name} of length {summary.length}"
    else:
        text = name
    stats = summary.stats
    if stats is not None and stats.has_nan:
        text += f", NaN: {stats.nan_count}" if stats.nan_count is not None else ", has NaN"
    read = bool(summary.shape or summary.value or summary.columns) or summary.length is not None
    if summary.error and not read:  # a deadline after the shape and dtype loses only statistics
        text += " (summary incomplete)"
    return text


def _columns_text(summary: ObjectSummary, limit: int = 6) -> str:
    cols = summary.columns or []
    if not cols:
        return ""
    total = summary.n_columns if summary.n_columns is not None else len(cols)
    names = ", ".join(str(c.name) for c in cols[:limit])
    return f"; columns {names}" + ("…" if total > limit else "")


def _bound_note(value: FailValue, facts: FailFacts) -> str:
    """Where the value was last bound, as the user counts lines (1-based)."""
    if value.loop is not None:
        return ""
    loop = facts.loop(value.scope)
    if value.again is not None and loop is not None and (loop.iteration is None or loop.iteration > 1):
        return f"; rebound by line {value.again} in an earlier iteration"
    if value.assigned is None:
        return ""
    frame = facts.frame
    if value.scope == "frame" and frame is not None and value.assigned == frame.first_line:
        return f"; an argument of {frame.function}()"
    where = f" of {frame.function}()" if value.scope == "frame" and frame is not None else ""
    return f"; assigned on line {value.assigned}{where}"


def loop_text(loop: FailLoop) -> str:
    """``iteration 2 of 2 of for i in range(2) (line 1)``."""
    head = f"for {loop.target} in {loop.iterable} (line {loop.line})"
    if loop.iteration is not None:
        of = f" of {loop.total}" if loop.total is not None else ""
        return f"iteration {loop.iteration}{of} of {head}"
    if loop.positions:
        places = ", ".join(str(p) for p in loop.positions)
        return f"{head}, at item {places} of its {loop.total} (the value occurs more than once)"
    return head


def evidence(facts: FailFacts, privacy: bool = False) -> list[Evidence]:
    """The facts as evidence rows: where it raised, the loop, then each value (innermost frame first)."""
    rows: list[Evidence] = []
    frame = facts.frame
    if frame is not None:
        cell = f"cell [{frame.execution_count}]" if frame.execution_count else "an earlier cell"
        text = f"{frame.function}() from {cell}, line {frame.line}" + (
            f": {frame.text}" if frame.text else ""
        )
        rows.append(Evidence(fact="raised inside", value=text))
    for loop in facts.loops[:2]:
        rows.append(Evidence(fact="loop", value=loop_text(loop)))
    for v in facts.values:
        where = f" in {frame.function}()" if v.scope == "frame" and frame is not None else ""
        rows.append(Evidence(fact=v.name + where, value=describe(v.summary, privacy) + _bound_note(v, facts)))
    if facts.deadline_hit:
        rows.append(Evidence(fact="facts", value="cut short by their budget: some values are left out"))
    return rows[:MAX_EVIDENCE]


def operand_origins(facts: FailFacts, executed: Sequence[str], first: Sequence[str] = ()) -> list[Origin]:
    """The executed cells behind the failing line: the function it raised in, then each operand not
    bound earlier in the target cell (``first``: the operands the cause names), in editor coordinates."""
    names: list[str] = []
    if facts.frame is not None:
        names.append(facts.frame.function)
    line_values = [v for v in facts.values if v.scope == "line" and v.assigned is None and v.loop is None]
    ordered = sorted(line_values, key=lambda v: (v.name not in first, facts.values.index(v)))
    names.extend(v.name.split(".", 1)[0].split("[", 1)[0] for v in ordered)
    return origins(names[:5], executed)
