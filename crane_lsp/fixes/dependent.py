"""After a fix runs clean: does the next cell that reads what the target binds still run after it?

A fix can run clean and still leave a name in another form than the notebook's later cells expect (a
column dropped instead of renamed, an array instead of a frame). The first later cell (notebook
order) that reads a name the target binds is dry-run right after the fixed target, in the same
jailed copy (one run of both, joined), so it meets the state the fix leaves. Its outcome goes into
the fix's notes; a crash there marks the fix ``gets-further`` (on that cell), never verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crane_lsp.analysis.origins import analyze_cached
from crane_lsp.analysis.parse import analyze
from crane_lsp.fixes.edit import apply
from crane_lsp.prediction import Fix, Verification

if TYPE_CHECKING:
    from crane_lsp.dryrun import DryRunner, DryRunOutcome


@dataclass(frozen=True)
class NextReader:
    """The first later cell that reads what the target binds."""

    offset: int  # 1: the cell right below the target
    source: str
    names: tuple[str, ...]  # the target's names it reads


def next_reader(target: str, later: Sequence[str]) -> NextReader | None:
    """The first of ``later`` (the cells below the target, in order) that reads a name the target
    binds; a cell magic (``%%time``) cannot be joined to another cell and ends the search."""
    bound = {a.name for a in analyze_cached(target).defines}
    if not bound:
        return None
    for offset, cell in enumerate(later, start=1):
        if cell.lstrip().startswith("%%"):
            return None
        read = sorted({use.name for use in analyze_cached(cell).reads} & bound)  # once per cell text
        if read:
            return NextReader(offset, cell, tuple(read))
    return None


def _where(reader: NextReader) -> str:
    names = ", ".join(reader.names)
    below = "the cell below" if reader.offset == 1 else f"the cell {reader.offset} below"
    return f"{below} (it reads {names})"


async def with_next_cell(
    runner: DryRunner, target: str, fixes: Sequence[Fix], later: Sequence[str], explicit: bool
) -> list[Fix]:
    """``fixes`` (those verified run clean) each with the outcome of the next dependent cell run after
    it in its notes; ``gets-further`` where that cell then raises. The joined runs go side by side
    (``DryRunner.run_many``) when there are several."""
    reader = next_reader(target, later)
    if reader is None:
        return list(fixes)
    out = list(fixes)
    runs: list[tuple[int, str, int]] = []  # (index in fixes, joined text, the fixed cell's lines)
    for i, fix in enumerate(fixes):
        edited = apply(target, fix)
        if edited is None or fix.verification is None or not fix.verified():
            continue
        joined = edited + "\n" + reader.source
        if runner.settings.dry_run == "safe":  # safe mode's static screen sees all that would run
            from crane_lsp.dryrun import screen

            screened = screen(analyze(joined, max_lines=None))
            if not screened.safe:
                out[i] = _noted(fix, f"{_where(reader)} not run after it ({screened.reason})")
                continue
        runs.append((i, joined, len(edited.split("\n"))))
    if not runs:
        return out
    try:
        if len(runs) == 1:
            outcomes = [await runner.run_outcome(runs[0][1], explicit)]
        else:
            outcomes = await runner.run_many([(joined, ()) for _, joined, _ in runs], explicit)
    except Exception as exc:  # a busy or dead kernel: the fixes stay as verified, the notes say why
        for i, _, _ in runs:
            out[i] = _noted(out[i], f"{_where(reader)} not run after it: {exc}".splitlines()[0])
        return out
    for (i, _, own_lines), outcome in zip(runs, outcomes, strict=True):
        out[i] = _after(out[i], reader, outcome, own_lines)
    return out


def _after(fix: Fix, reader: NextReader, outcome: DryRunOutcome, own_lines: int) -> Fix:
    """``fix`` with what the dependent cell did after it (``outcome`` of the joined run)."""
    assert fix.verification is not None
    if outcome.outcome == "completed":
        return _noted(fix, f"{_where(reader)} also runs clean after it, in the same copy")
    if outcome.outcome == "raised" and outcome.line is not None and outcome.line > own_lines:
        first = (outcome.message or "").strip().splitlines()[:1]
        why = f"{outcome.exception}: {first[0]}" if first else str(outcome.exception)
        line = outcome.line - own_lines
        note = f"the fixed cell runs clean; then {_where(reader)} raises {why} on its line {line}"
        kept = [n for n in fix.verification.notes if not n.startswith("ran clean")]
        verification = Verification(outcome="gets-further", exception=outcome.exception, notes=[note, *kept])
        return fix.model_copy(update={"verification": verification})
    return _noted(fix, f"{_where(reader)} not judged after it (dry run {outcome.outcome})")


def _noted(fix: Fix, note: str) -> Fix:
    assert fix.verification is not None
    verification = fix.verification.model_copy(update={"notes": [*fix.verification.notes, note]})
    return fix.model_copy(update={"verification": verification})
