"""Try a cell in the sandbox: the client side of a preview (issue 37, docs/undo.md), for the server's
``crane.previewCell`` and for scripts.

The kernel runs the cell in a jailed copy of itself, as the dry run does (``dry_run`` with
``preview``: ``kernel/agent/dryrun/preview.py``), and answers what it printed and displayed, the
value of its last expression and what it changed in the copy's namespace. The kernel itself runs
nothing. Every answer is a typed model: the verdict comes from the dry run's typed outcome, and each
change is phrased here from facts (type, shape, length, columns before and after), never from text.

From a script, with a kernel's connection file::

    from crane_lsp.preview import preview_sync
    answer = preview_sync("kernel-123.json", "df['ratio'] = df.a / df.b\\ndf.head()")
    print(answer.verdict, [row.change for row in answer.diff], answer.stdout, answer.result)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.dryrun.outcome import DryRunOutcome, PreviewChange, PreviewValue
from crane_lsp.kernel.agent.dryrun_wire import DryRunOutcomeName
from crane_lsp.settings import Settings

if TYPE_CHECKING:
    from crane_lsp.layers import ProbeCaller
from crane_lsp.words import PREVIEW_VERB

STDOUT_CHARS = 20_000  # what the sandbox keeps of the output (the first characters)
RESULT_CHARS = 5_000  # of the last expression's text
_NAMED_COLUMNS = 5  # columns named in a change; more are counted


class PreviewRow(BaseModel):
    """One name the cell would change, in words: "adds column `ratio` to `df`"."""

    model_config = ConfigDict(extra="forbid")
    name: str
    change: str


class Preview(BaseModel):
    """What the cell would print, show and leave, seen in a jailed copy; or ``refused`` (one line)."""

    model_config = ConfigDict(extra="forbid")
    refused: str | None = None
    verdict: str = ""
    outcome: DryRunOutcomeName | None = None
    exception: str | None = None
    line: int | None = Field(default=None, description="1-based within the cell, where it raised")
    stdout: str = ""
    stdout_cut: bool = False
    result: str | None = Field(default=None, description="the last expression's value as IPython shows it")
    result_cut: bool = False
    diff: list[PreviewRow] = Field(default_factory=list)
    more: int = Field(default=0, description="changed names beyond those listed")
    note: str | None = Field(default=None, description="why what is shown is partial or missing")


def payload(source: str, settings: Settings) -> dict[str, Any]:
    """What ``dry_run`` is sent for a preview: the explicit Re-check's budget, no shortened runs (a
    sample's output is not the cell's)."""
    return {
        "source": source,
        "budget_s": max(settings.dry_run_recheck_budget_s, settings.dry_run_budget_s),
        "memory_mb": settings.dry_run_memory_mb,
        "privacy": settings.privacy,
        "preview": {"stdout_chars": STDOUT_CHARS, "result_chars": RESULT_CHARS},
    }


async def preview(link: ProbeCaller, source: str, settings: Settings | None = None) -> Preview:
    """Run ``source`` in a jailed copy of the kernel behind ``link``; changes nothing in the kernel."""
    asked = payload(source, settings if settings is not None else Settings())
    raw = await link.call("dry_run", asked, timeout=float(asked["budget_s"]) + 10)
    return from_outcome(DryRunOutcome.model_validate(raw))


def from_outcome(outcome: DryRunOutcome) -> Preview:
    """The typed answer for a dry run's typed outcome."""
    if outcome.outcome == "unavailable":
        return Preview(refused=f"no sandboxed copy can run here: {outcome.message or 'unavailable'}")
    seen = outcome.preview
    answer = Preview(
        verdict=verdict(outcome),
        outcome=outcome.outcome,
        exception=outcome.exception if outcome.outcome == "raised" else None,
        line=outcome.line if outcome.outcome == "raised" else None,
    )
    if seen is None:  # nothing came back: the cell never started, or the copy was stopped or died
        answer.note = _UNSEEN.get(outcome.outcome, _UNSEEN["timeout"])
        return answer
    answer.stdout, answer.stdout_cut = seen.stdout, seen.stdout_cut
    answer.result, answer.result_cut = seen.result, seen.result_cut
    answer.diff = [PreviewRow(name=c.name, change=phrase(c)) for c in seen.changes]
    answer.more = seen.more
    notes = []
    if seen.error:
        notes.append(seen.error)
    if outcome.standin:
        notes.append("a shape-level run: tensors stood in by their shapes, their values unknown")
    answer.note = "; ".join(notes) or None
    return answer


#: why a run has no output and no diff, by its outcome
_UNSEEN = {
    "raised": "the cell did not start (it does not compile): nothing ran",
    "exits": "the cell ended the sandboxed copy: no output and no diff came back",
    "timeout": "the sandboxed copy was stopped before it answered: no output and no diff",
    "blocked": "the sandbox stopped the copy at a forbidden call: no output and no diff came back",
}


def verdict(outcome: DryRunOutcome) -> str:
    """How the run ended, from the typed outcome: "ran clean", "raised KeyError at line 3: 'x'",
    "no verdict: ..." (why)."""
    message = (outcome.message or "").strip()
    kind = outcome.outcome
    if kind == "completed":
        return "no shape error seen (a shape-level run)" if outcome.standin else "ran clean"
    if kind == "raised":
        at = f" at line {outcome.line}" if outcome.line else ""
        return f"raised {outcome.exception or 'an error'}{at}" + (f": {message}" if message else "")
    if kind == "timeout":
        budget = f"{outcome.budget_s:g} s" if outcome.budget_s else "its budget"
        return f"no verdict: did not finish in {budget}"
    why = {
        "blocked": f"the sandbox stopped it ({message})",
        "exits": f"the cell ends the kernel ({message})",
        "no_verdict": message,
    }.get(kind, f"{kind}: {message}")
    return f"no verdict: {why}"


def _short(type_name: str | None) -> str:
    return (type_name or "?").rsplit(".", 1)[-1]


def _count(value: PreviewValue | None) -> tuple[int, str] | None:
    """How many rows (a frame, an array) or items (a container), with the unit."""
    if value is None:
        return None
    if value.shape:
        frame = _short(value.type) in ("DataFrame", "Series") or len(value.shape) > 1
        return value.shape[0], "rows" if frame else "elements"
    if value.len is not None:
        unit = {"str": "characters", "bytes": "bytes", "bytearray": "bytes"}.get(_short(value.type), "items")
        return value.len, unit
    return None


def _names(columns: list[str]) -> str:
    if len(columns) > _NAMED_COLUMNS:
        return f"{len(columns)} columns"
    return ("column " if len(columns) == 1 else "columns ") + ", ".join(f"`{c}`" for c in columns)


def _columns(before: PreviewValue | None, after: PreviewValue | None) -> tuple[list[str], list[str]]:
    """The columns added and dropped (a DataFrame's first 200 on each side)."""
    if before is None or after is None or before.columns is None or after.columns is None:
        return [], []
    was, now = set(before.columns), set(after.columns)
    return [c for c in after.columns if c not in was], [c for c in before.columns if c not in now]


def _sizes(before: PreviewValue | None, after: PreviewValue | None) -> str | None:
    """ "800 → 640 rows", "3 → 5 items", or the shapes when only a later dimension moved."""
    was, now = _count(before), _count(after)
    if was is None or now is None or was[1] != now[1]:
        return None
    if was[0] != now[0]:
        return f"{was[0]} → {now[0]} {now[1]}"
    if (
        before is not None
        and after is not None
        and before.shape
        and after.shape
        and before.shape != after.shape
    ):
        return " → ".join("x".join(str(n) for n in s) for s in (before.shape, after.shape))
    return None


def phrase(change: PreviewChange) -> str:
    """One change in words: "creates `model`", "deletes `tmp`", "adds column `ratio` to `df`",
    "rebinds `X_train` (800 → 640 rows)", "changes `items` in place (3 → 5 items)"."""
    name = f"`{change.name}`"
    verb = PREVIEW_VERB[change.change]
    if change.change in ("bound", "deleted"):
        return f"{verb} {name}"
    before, after = change.before, change.after
    added, dropped = _columns(before, after)
    sizes = _sizes(before, after) if not (added or dropped) else None
    if added or dropped:
        rows = _count(before), _count(after)
        if rows[0] and rows[1] and rows[0][0] != rows[1][0]:
            sizes = f"{rows[0][0]} → {rows[1][0]} rows"
    tail = f" ({sizes})" if sizes else ""
    if change.change == "rebound":
        if before is not None and after is not None and _short(before.type) != _short(after.type):
            return f"{verb} {name} ({_short(before.type)} → {_short(after.type)})"
        parts = [
            *([f"adds {_names(added)}"] if added else []),
            *([f"drops {_names(dropped)}"] if dropped else []),
        ]
        parts += [sizes] if sizes else []
        return f"{verb} {name}" + (f" ({'; '.join(parts)})" if parts else "")
    if added and dropped:
        return f"adds {_names(added)} to {name} and drops {_names(dropped)}{tail}"
    if added:
        return f"adds {_names(added)} to {name}{tail}"
    if dropped:
        return f"drops {_names(dropped)} from {name}{tail}"
    return f"{verb} {name} in place{tail}"


async def _with_link(connection_file: str | Path, source: str, settings: Settings | None) -> Preview:
    from crane_lsp.kernel.link import KernelLink

    link = await KernelLink.connect(connection_file)
    try:
        return await preview(link, source, settings)
    finally:
        await link.close()


def preview_sync(connection_file: str | Path, source: str, settings: Settings | None = None) -> Preview:
    """Preview ``source`` in the kernel of ``connection_file`` (its state is not touched)."""
    return asyncio.run(_with_link(connection_file, source, settings))
