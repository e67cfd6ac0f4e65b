"""Verified fixes: candidate repairs for a predicted crash, each dry-run in the jail before it is offered.

    prediction = await offer_fixes(runner, target, prediction, explicit=False)
    prediction.fixes      # offered: runs-clean (verified) first, then gets-further (marked)
    prediction.fix        # the top offered fix (what editors apply), or the verdict's own when unverifiable

``candidates.py`` proposes (the check's determined repair, the standard one-line repairs of the crash
class, the LLM's edit; ``flow.py`` the repairs where a value was built; ``near.py`` reads the callee's
parameters for a keyword it lacks and the frame's columns for a missing label), ``guard.py`` refuses
what does less, ``verify.py`` dry-runs and classifies, ``chain.py`` follows a repair that gets further
with a second one, ``dependent.py`` runs the next cell that reads the target's names after the fix,
``edit.py`` applies and diffs. Nothing here changes the user's cell or kernel: applying a fix is the
editor's, and the dry runs happen in the jailed fork.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from crane_lsp.fixes.candidates import candidates
from crane_lsp.fixes.chain import chained
from crane_lsp.fixes.dependent import with_next_cell
from crane_lsp.fixes.near import near_keyword, near_label
from crane_lsp.fixes.verify import LIMIT_EXPLICIT, LIMIT_TYPING, observe, verify_all

if TYPE_CHECKING:
    from crane_lsp.dryrun import DryRunner
    from crane_lsp.prediction import Fix, Prediction

__all__ = ["LIMIT_EXPLICIT", "LIMIT_TYPING", "candidates", "offer_fixes"]


async def offer_fixes(
    runner: DryRunner | None,
    target: str,
    prediction: Prediction,
    *,
    explicit: bool = False,
    limit: int | None = None,
    later: Sequence[str] = (),
) -> Prediction:
    """A copy of ``prediction`` with its verified fixes (``fixes``, ``fix``) and a note on the dropped.
    ``later``: the notebook's code cells below the target, in order (the first that reads what the
    target binds is dry-run after each verified fix: ``dependent.py``).

    Without a dry run (none configured, ``dry_run`` off) nothing is verified: the prediction comes back
    as it was, its own fix (if any) unverified."""
    if not prediction.crash or runner is None or runner.settings.dry_run == "off":
        return prediction
    started = time.perf_counter()
    reference = prediction
    if prediction.source.layer == "checks" and prediction.fix is None:
        reference = await observe(runner, target, prediction, explicit)
    # a keyword the callee lacks, whatever the error says (matplotlib's is an AttributeError): its
    # signature has the near one
    reference = await near_keyword(runner.link, target, reference)
    reference = await near_label(runner.link, target, reference)  # a column the frame has, near it
    found = await asyncio.to_thread(candidates, reference, target)  # parses the cell: off the event loop
    if not found:
        return prediction
    cap = limit if limit is not None else (LIMIT_EXPLICIT if explicit else LIMIT_TYPING)
    offered, dropped, _ = await verify_all(runner, target, reference, found, limit=cap, explicit=explicit)
    pair = None
    further = next((f for f in offered if f.verification and f.verification.outcome == "gets-further"), None)
    if further is not None and not any(f.verified() for f in offered):
        pair = await chained(runner, target, reference, further, explicit)
        if pair is not None:
            offered.insert(0, pair)
    if later:  # the next cell that reads what the target binds, after each fix offered as verified
        offered = await with_next_cell(runner, target, offered, later, explicit)
        offered.sort(key=lambda f: not f.verified())
    seconds = time.perf_counter() - started
    result = prediction.model_copy(deep=True)
    result.fixes = offered
    own = prediction.fix
    if offered:
        result.fix = offered[0]
    elif own is not None and any(f.new_text == own.new_text and _refuted(f) for f in dropped):
        result.fix = None  # the verdict's own fix crashes the same way (the LLM's: or fails): not offered
    tried = len(offered) + len(dropped) - (pair is not None)
    note = f"fixes: {tried} candidate(s) dry-run in {seconds * 1000:.0f} ms, {len(offered)} offered"
    if pair is not None:
        note += " (one a pair of changes: the first got further)"
    if dropped:
        why = Counter(_reason(f) for f in dropped)
        note += f", {len(dropped)} dropped (" + ", ".join(f"{n} {w}" for w, n in why.items()) + ")"
        llm = Counter(_reason(f) for f in dropped if f.layer == "llm")
        if llm:  # the user asked an LLM: say that its fix was tried and refused, and why
            count = sum(llm.values())
            reasons = ", ".join(w if n == 1 else f"{n} {w}" for w, n in llm.items())
            note += f"; {count} LLM fix{'es' if count > 1 else ''} dropped ({reasons})"
    result.notes.append(note)
    return result


def _refuted(fix: Fix) -> bool:
    """The dry run spoke against ``fix``: the same crash; for the LLM's fix, also another error or
    doing less (a check's fix stays, unverified, unless it crashes the same way). A fix the dry run
    could not judge (a timeout, no dry run) is not refuted."""
    v = fix.verification
    if v is None:
        return False
    if fix.layer != "llm":
        return v.outcome != "no-verdict"
    return v.outcome == "same-crash" or _reason(fix) in ("does less", "raises another error")


def _reason(fix: object) -> str:
    from crane_lsp.prediction import Fix

    assert isinstance(fix, Fix) and fix.verification is not None
    v = fix.verification
    if v.outcome == "same-crash":
        return "same crash"
    if v.notes and v.notes[0].startswith("does less"):
        return "does less"
    if v.notes and v.notes[0].startswith("raises "):
        return "raises another error"
    return "no verdict"
