"""Verification in the jail: each candidate applied to the cell and dry-run from the same kernel state.

The same ``DryRunner`` as the verdict's (the shortened run for slow cells, the same budget and
safe-mode screen); up to ``PARALLEL`` candidates side by side in cold forks, a lone one through the
prepared child when there is one. The outcome of the edited cell, against the
original crash (its line and exception):

- ``completed``                                   -> runs-clean (offered as verified);
- raised on a later line than the original crash  -> gets-further (offered, marked: which line, why);
- raised on the same line, same exception         -> same-crash (dropped);
- anything else (another exception there or before, a timeout, the jail stopped it, refused as
  doing less)                                     -> no-verdict with the reason (dropped).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crane_lsp.analysis.parse import analyze
from crane_lsp.fixes.edit import apply, line_shift
from crane_lsp.fixes.guard import always_bound, does_less, rejects_binding
from crane_lsp.prediction import Fix, Prediction, Verification

if TYPE_CHECKING:
    from crane_lsp.dryrun import DryRunner, DryRunOutcome

log = logging.getLogger(__name__)

#: candidates dry-run per verdict while the user types (the server); ``check --fix`` tries more
LIMIT_TYPING = 3
LIMIT_EXPLICIT = 6
#: candidates dry-run at once, each in its own fork (the kernel lowers it to the idle CPUs and the
#: memory the copies may take: ``kernel/agent/dryrun/dryrun_many.py``)
PARALLEL = 3


def classify(outcome: DryRunOutcome, crash_line: int | None, crash_exception: str | None) -> Verification:
    """The edited cell's dry-run outcome against the original crash (0-based ``crash_line``, already
    moved by the fix's added lines)."""
    if outcome.outcome == "completed":
        return Verification(outcome="runs-clean", notes=["ran clean in a sandboxed copy of the kernel"])
    if outcome.outcome == "raised":
        line = outcome.line - 1 if outcome.line else None
        first = (outcome.message or "").strip().splitlines()[:1]
        why = f"{outcome.exception}: {first[0]}" if first else str(outcome.exception)
        if line is not None and crash_line is not None and line > crash_line:
            note = f"line {crash_line + 1} now passes; line {line + 1} raises {why}"
            return Verification(outcome="gets-further", line=line, exception=outcome.exception, notes=[note])
        if line is not None and line == crash_line and outcome.exception == crash_exception:
            note = f"the same {outcome.exception} on line {line + 1}"
            return Verification(outcome="same-crash", line=line, exception=outcome.exception, notes=[note])
        where = f" on line {line + 1}" if line is not None else ""
        return Verification(
            outcome="no-verdict",
            line=line,
            exception=outcome.exception,
            notes=[f"raises {why}{where} instead"],
        )
    if outcome.outcome == "timeout" and outcome.shortened is not None:
        return Verification(outcome="no-verdict", notes=["the dry run did not finish (only shortened runs)"])
    text = f"dry run {outcome.outcome}" + (f": {outcome.message}" if outcome.message else "")
    return Verification(outcome="no-verdict", notes=[text])


@dataclass(frozen=True)
class _Staged:
    """A candidate that passed the static refusals, ready for its dry run."""

    fix: Fix
    edited: str
    crash_line: int | None  # the original crash's line in the edited cell
    checked: str  # what the guard checked (the notes say it)
    expected: tuple[str, ...]  # names a completed run must leave bound


def _stage(
    runner: DryRunner, target: str, prediction: Prediction, fix: Fix, expected: tuple[str, ...]
) -> _Staged | Fix:
    """``fix`` refused statically (as a Fix with its verification), or staged for its dry run;
    ``expected``: the names a completed run must leave bound, as the original would
    (``guard.always_bound`` of the target, the same for every candidate)."""
    from crane_lsp.dryrun import screen

    edited = apply(target, fix)
    if edited is None:
        return _with(fix, Verification(outcome="no-verdict", notes=["the edit does not fit the cell"]))
    crash_line = prediction.line
    if crash_line is not None and fix.end_line is not None and crash_line >= fix.end_line:
        crash_line += line_shift(fix)
    binding = rejects_binding(prediction.exception, prediction.raw_message)
    guard = does_less(target, edited, prediction.line, crash_line, binding=binding)
    if guard.refused:
        return _with(fix, Verification(outcome="no-verdict", notes=[f"does less: {guard.refused}"]))
    if runner.settings.dry_run == "safe":
        screened = screen(analyze(edited, max_lines=None))  # the screen sees every line
        if not screened.safe:
            return _with(fix, Verification(outcome="no-verdict", notes=[f"not dry-run ({screened.reason})"]))
    return _Staged(fix, edited, crash_line, guard.checked, expected)


def _judged(staged: _Staged, outcome: DryRunOutcome, exception: str | None) -> Fix:
    verification = classify(outcome, staged.crash_line, exception)
    if verification.outcome == "runs-clean" and outcome.unbound:
        unbound = ", ".join(outcome.unbound)
        verification = Verification(
            outcome="no-verdict", notes=[f"does less: the run left {unbound} unbound"]
        )
    bound = "; bound after the run" if staged.expected else ""
    verification.notes.append(f"checked: {staged.checked}{bound}")
    return _with(staged.fix, verification)


def _unavailable(staged: _Staged, exc: Exception) -> Fix:
    log.info("fix verification unavailable: %s", exc)
    return _with(staged.fix, Verification(outcome="no-verdict", notes=[f"dry run unavailable: {exc}"]))


async def verify_one(runner: DryRunner, target: str, prediction: Prediction, fix: Fix, explicit: bool) -> Fix:
    """``fix`` with its ``verification``: refused statically, or dry-run and classified."""
    staged = _stage(runner, target, prediction, fix, tuple(always_bound(target)))
    if isinstance(staged, Fix):
        return staged
    return (await _verify_batch(runner, prediction, [staged], explicit))[0]


async def _verify_batch(
    runner: DryRunner, prediction: Prediction, batch: list[_Staged], explicit: bool
) -> list[Fix]:
    """The staged candidates dry-run side by side (one kernel call, parallel forks); one alone
    goes the single path (it may use the prepared child)."""
    if len(batch) == 1:
        only = batch[0]
        try:
            outcome = await runner.run_outcome(only.edited, explicit, expect_bound=only.expected)
        except Exception as exc:  # a busy or dead kernel: no verdict on this candidate, say why
            return [_unavailable(only, exc)]
        return [_judged(only, outcome, prediction.exception)]
    try:
        outcomes = await runner.run_many([(s.edited, s.expected) for s in batch], explicit, width=PARALLEL)
    except Exception as exc:  # a busy or dead kernel: no verdict on these candidates, say why
        return [_unavailable(s, exc) for s in batch]
    return [_judged(s, o, prediction.exception) for s, o in zip(batch, outcomes, strict=True)]


def _with(fix: Fix, verification: Verification) -> Fix:
    return fix.model_copy(update={"verification": verification})


async def verify_all(
    runner: DryRunner,
    target: str,
    prediction: Prediction,
    fixes: Sequence[Fix],
    *,
    limit: int,
    explicit: bool,
) -> tuple[list[Fix], list[Fix], float]:
    """(offered, dropped, seconds): the first ``limit`` candidates verified, up to ``PARALLEL`` at
    a time in parallel forks, offered runs-clean first, then gets-further, each in ranking order.
    A batch with a runs-clean fix ends the search: the ranking put the smallest change first."""
    started = time.perf_counter()
    done: list[Fix] = []
    waiting = list(fixes[:limit])
    expected = tuple(always_bound(target))
    while waiting:
        batch: list[_Staged] = []
        while waiting and len(batch) < PARALLEL:
            staged = _stage(runner, target, prediction, waiting.pop(0), expected)
            if isinstance(staged, Fix):
                done.append(staged)  # refused before any dry run
            else:
                batch.append(staged)
        if batch:
            done.extend(await _verify_batch(runner, prediction, batch, explicit))
        if any(f.verified() for f in done):
            break
    order = {"runs-clean": 0, "gets-further": 1}
    offered = [f for f in done if f.verification and f.verification.outcome in order]
    offered.sort(key=lambda f: order[f.verification.outcome if f.verification else ""])
    dropped = [f for f in done if f not in offered]
    return offered, dropped, time.perf_counter() - started


async def observe(runner: DryRunner, target: str, prediction: Prediction, explicit: bool) -> Prediction:
    """A check's verdict speaks in the check's words; the families read Python's. One dry run of the
    cell as it is gives them (and the line and exception the candidates are judged against)."""
    from crane_lsp.dryrun import screen

    if runner.settings.dry_run == "safe" and not screen(analyze(target, max_lines=None)).safe:
        return prediction  # safe mode spares the fork to a cell the jail would only stop
    try:
        outcome = await runner.run_outcome(target, explicit)
    except Exception:  # no dry run: the check's own words only
        return prediction
    if outcome.outcome != "raised" or outcome.line is None:
        return prediction
    raw = outcome.message or ""
    return prediction.model_copy(
        update={"exception": outcome.exception, "line": outcome.line - 1, "raw_message": raw}
    )
