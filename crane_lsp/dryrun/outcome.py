"""What the kernel's sandbox answers (validated at the boundary) and the Prediction it makes.

``raised`` is an *observed* crash on its exact line, ``completed`` a final "ran clean"; a timeout,
a blocked operation or a cell that ends the kernel is a no-verdict with its reason
(``Prediction.no_verdict``) and a headline saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.dryrun.causes import with_failure_facts
from crane_lsp.dryrun.failure_facts import FailFacts
from crane_lsp.dryrun.shortened import ShortenedRuns, judge
from crane_lsp.kernel.agent.dryrun_wire import DryRunOutcomeName, PrepareOutcomeName, PreviewChangeName
from crane_lsp.prediction import NoVerdictReason, Prediction, Source, exception_line, line_position


class PreviewValue(BaseModel):
    """A value's facts before or after a preview's cell: exactly ``dryrun_wire.PreviewValueWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    type: str | None = None
    shape: list[int] | None = None
    len: int | None = None
    columns: list[str] | None = None  # a DataFrame's first 200
    dtype: str | None = None


class PreviewChange(BaseModel):
    """One name a preview's cell changed: exactly ``dryrun_wire.PreviewChangeWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    name: str
    change: PreviewChangeName
    before: PreviewValue | None = None  # absent for a name the cell bound
    after: PreviewValue | None = None  # absent for a name it deleted


class PreviewFacts(BaseModel):
    """What a preview saw in the sandbox (``agent/dryrun/preview.py``): ``dryrun_wire.PreviewWire``."""

    model_config = ConfigDict(extra="forbid")

    stdout: str = ""
    stdout_cut: bool = False
    result: str | None = None  # the last expression's value as IPython shows it
    result_cut: bool = False
    changes: list[PreviewChange] = Field(default_factory=list)
    more: int = 0  # changed names beyond those listed
    error: str | None = None  # why there is no diff


class DryRunOutcome(BaseModel):
    """What the kernel-side sandbox answers: exactly ``dryrun_wire.DryRunWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    outcome: DryRunOutcomeName
    exception: str | None = None
    message: str | None = None
    line: int | None = None  # 1-based within the cell
    elapsed_s: float | None = None  # in the child: confinement + the cell
    setup_s: float | None = None  # in the child: limits, transform, compile, the jail (before the cell)
    fork_s: float | None = None  # in the kernel: the fork() call itself
    round_trip_s: float | None = None
    budget_s: float | None = None
    setup_cpu_s: float | None = None  # CPU time the child used up to the cell (limits + jail)
    child_cpu_s: float | None = None  # CPU time the child used (process_time counts from the fork)
    jail_ms: dict[str, float] | None = None  # in the child: CPU milliseconds per confinement step
    phases_ms: dict[str, float] | None = None  # one clock, ms since the fork: when each phase ended
    child_private_dirty_kb: int | None = None
    child_pid: int | None = None
    notes: list[str] | None = None
    prepared: bool | None = None  # run in a child prepared ahead (no fork, no jail on its way)
    prepared_age_s: float | None = None  # how long that child had waited
    shortened: ShortenedRuns | None = None  # runs on samples beside a full run that did not finish
    facts: FailFacts | None = None  # what the failing line read (kernel/agent/dryrun/failfacts.py)
    standin: dict[str, Any] | None = None  # a shape-level run: why, names, devices (agent/dryrun/standin.py)
    unbound: list[str] | None = None  # of ``expect_bound``, the names a completed run left unbound
    preview: PreviewFacts | None = None  # asked with ``preview``: "Try in sandbox" (crane_lsp/preview.py)


class DryRunPrepared(BaseModel):
    """What ``dry_run_prepare`` answers: exactly ``dryrun_wire.DryRunPreparedWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    outcome: PrepareOutcomeName
    message: str | None = None
    fresh: bool | None = None
    child_pid: int | None = None
    age_s: float | None = None
    prepare_ms: float | None = None


def _shape_level(outcome: DryRunOutcome) -> str | None:
    """``(tensors on cuda:0 stood in by their shapes)`` for a shape-level run, else None. TensorFlow's
    (``how``: ``keras``) runs no operation and traces Keras models on the data's shapes."""
    if not outcome.standin:
        return None
    devices = ", ".join(str(d) for d in outcome.standin.get("devices") or ()) or "no device"
    how = outcome.standin.get("how") or ["meta"]
    words = []
    if "meta" in how:
        words.append(f"tensors on {devices} stood in by their shapes")
    if "keras" in how:
        words.append(f"TensorFlow on {devices} stood in: Keras traced on the data's shapes")
    return f"({'; '.join(words)})"


def _note(text: str) -> Prediction:
    """Nothing decided here, said in a note: the next layer (or "nothing found") answers."""
    p = Prediction.nothing_found()
    p.notes.append(text)
    return p


def _unanswered(reason: NoVerdictReason, headline: str, text: str) -> Prediction:
    """No verdict, and why: the headline the hover, the terminal and the JSON show up front."""
    p = Prediction.unanswered(reason, headline)
    p.notes.append(text)
    return p


def _observed(
    outcome: DryRunOutcome, target: str, executed: Sequence[str], seen: str, note: str
) -> Prediction:
    """The crash a dry run saw, on its line, with the library's own message and the facts at the line
    (cause, evidence, origins: ``causes.py``)."""
    observed = Prediction(
        crash=True,
        certainty="observed",
        exception=outcome.exception,
        **line_position(target, outcome.line),
        message=exception_line(outcome.exception, outcome.message),
        raw_message=outcome.message or "",
        diagnosis=seen + (f": {outcome.message}" if outcome.message else "") + ".",
        source=Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000),
        notes=[note, *(outcome.notes or [])],
    )
    lines = target.split("\n")
    line_text = lines[outcome.line - 1] if outcome.line and 0 < outcome.line <= len(lines) else None
    return with_failure_facts(observed, outcome.facts, executed, line_text=line_text)


def outcome_to_prediction(outcome: DryRunOutcome, target: str, executed: Sequence[str] = ()) -> Prediction:
    took = f"{outcome.round_trip_s or 0:.2f} s" + (
        " (a copy prepared while you typed)" if outcome.prepared else ""
    )
    shape_level = _shape_level(outcome)
    if outcome.outcome == "raised" and shape_level:
        at = f" at line {outcome.line}" if outcome.line else ""
        seen = f"raised {outcome.exception}{at} in a shape-level dry run {shape_level}"
        return _observed(outcome, target, executed, f"The cell {seen}", f"{seen} in {took}")
    if outcome.outcome == "completed" and shape_level:  # shapes only: never "ran clean"
        p = Prediction.nothing_found("no shape error seen in a shape-level dry run")
        p.source = Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000)
        p.notes.append(f"no shape error seen in a shape-level dry run {shape_level} in {took}")
        p.notes.extend(outcome.notes or [])
        return p
    if outcome.outcome == "no_verdict":  # a shape-level run that needed values (agent/dryrun/standin.py)
        at = f" (line {outcome.line})" if outcome.line else ""
        stopped = _unanswered(
            "needs-values", f"no verdict: {outcome.message}{at}", f"dry run no verdict: {outcome.message}"
        )
        stopped.notes.extend(outcome.notes or [])
        return stopped
    if outcome.outcome == "raised":
        where = f" on line {outcome.line}" if outcome.line else ""
        seen = f"Observed in a sandboxed copy of the kernel: the cell raised {outcome.exception}{where}"
        return _observed(
            outcome, target, executed, seen, f"observed in a sandboxed copy of the kernel in {took}"
        )
    if outcome.outcome == "completed":
        # Observed to run clean: final, the LLM has nothing to add. Other outcomes fall through.
        p = Prediction.ran_clean("ran clean in a sandboxed copy of the kernel")
        p.source = Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000)
        p.notes.append(f"ran clean in a sandboxed copy in {took}")
        p.notes.extend(outcome.notes or [])
        return p
    text = f"dry run {outcome.outcome}: {outcome.message or ''}".rstrip(": ")
    if outcome.outcome == "timeout":  # never shown as "no crash": the headline says it did not finish
        budget = f"{outcome.budget_s:g} s" if outcome.budget_s else "its budget"
        if outcome.shortened is not None:  # what runs on samples saw instead (shortened.py)
            judged = judge(outcome.shortened, budget, target)
            judged.source.latency_ms = (outcome.round_trip_s or 0) * 1000 if judged.crash else None
            return judged
        return _unanswered("timeout", f"no verdict: the dry run did not finish in {budget}", text)
    if outcome.outcome == "exits":
        return _unanswered("ends-kernel", f"the dry run saw the cell end the kernel: {outcome.message}", text)
    if outcome.outcome == "blocked":  # with the calls the jail answered on the way (its notes)
        blocked = _unanswered("blocked", f"no verdict: the dry run was stopped ({outcome.message})", text)
        blocked.notes.extend(outcome.notes or [])
        return blocked
    return _note(text)
