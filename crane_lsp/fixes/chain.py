"""Two repairs in a row: a candidate that gets further meets the cell's next crash, and the families
are asked again about that one.

A cell often holds one mistake twice in two forms (a label dropped from a frame, then removed from a
list of names), so the first repair moves the crash to a later line and no single edit runs clean.
The edited cell is dry-run as it is (the families read the new crash's own words and line), each
second candidate is verified on top of the first, and a pair that runs clean is offered as ONE fix
of the original cell (its lines from the first change to the last), verified like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crane_lsp.fixes.candidates import candidates
from crane_lsp.fixes.edit import apply
from crane_lsp.fixes.verify import observe, verify_all
from crane_lsp.prediction import Fix, Verification

if TYPE_CHECKING:
    from crane_lsp.dryrun import DryRunner
    from crane_lsp.prediction import Prediction

#: second candidates verified on top of a first one (each a dry run)
LIMIT_SECOND = 2


def as_one_fix(target: str, edited: str) -> tuple[int, int, str] | None:
    """The lines of ``target`` that ``edited`` changes, as one replacement (start, end, new text)."""
    old, new = target.split("\n"), edited.split("\n")
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if prefix == len(old) == len(new):
        return None
    return prefix, len(old) - suffix, "\n".join(new[prefix : len(new) - suffix])


async def chained(
    runner: DryRunner,
    target: str,
    reference: Prediction,
    first: Fix,
    explicit: bool,
) -> Fix | None:
    """``first`` (it gets further) followed by a second repair of the crash it reaches, as one fix
    that runs clean in the jail; None when no second candidate does."""
    edited = apply(target, first)
    landed = first.verification
    if edited is None or landed is None or landed.line is None:
        return None
    seed = reference.model_copy(
        update={
            "exception": landed.exception,
            "line": landed.line,
            "message": "",
            "diagnosis": "",
            "raw_message": "",
            "evidence": [],
            "fix": None,
            "fixes": [],
        }
    )
    after = await observe(runner, edited, seed, explicit)  # the edited cell's own crash, in its words
    if not after.raw_message or after.line != landed.line:
        return None
    found = [f for f in candidates(after, edited) if f.layer != "llm"]
    offered, _, _ = await verify_all(runner, edited, after, found, limit=LIMIT_SECOND, explicit=explicit)
    second = next((f for f in offered if f.verified()), None)
    both = apply(edited, second) if second is not None else None
    span = as_one_fix(target, both) if both is not None else None
    if second is None or span is None or second.verification is None:
        return None
    start, end, new_text = span
    title = f"{first.title}, then {second.title[:1].lower()}{second.title[1:]}"
    notes = [
        f"line {landed.line + 1} raised {landed.exception} after the first change; the second mends it",
        *second.verification.notes,
    ]
    return Fix(
        description=title,
        start_line=start,
        end_line=end,
        new_text=new_text,
        title=title,
        layer=first.layer,
        verification=Verification(outcome="runs-clean", notes=notes),
    )
