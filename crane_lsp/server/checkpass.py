"""The built-in checks of one cell as the server runs them: every CPU-bound step in the worker
process (``workerproc``), only the kernel probe on the event loop.

``Pipeline.predict`` runs the same two steps (``pipeline.prepare``, ``pipeline.checks_phase``) in
one process; here the cell's facts never leave the worker (its ``analyze_cached`` keeps them between
the two steps), so nothing the size of the cell is parsed, walked or unpickled on the server's loop:
the loop sends the text, gets the probe query back, asks the kernel, sends the snapshot, and gets
one ``Prediction`` (as a dict) back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crane_lsp.pipeline import Offloader, Pipeline, Run
    from crane_lsp.settings import Settings
    from crane_lsp.snapshot import Snapshot

#: cells longer than this are checked in the worker process; shorter ones in a worker thread of the
#: server (their parse holds the GIL for milliseconds, and a process round trip costs more than that)
PROCESS_MIN_LINES = 500

#: cells longer than this are not dry-run from the editor (the dry run reads the cell's facts in
#: the server process); their built-in checks still run, and ``crane-lsp check`` dry-runs any size
DRY_RUN_MAX_LINES = 2000


# ---------------------------------------------------------------------- in the worker process


def prepare(text: str, settings: Settings) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[str]]:
    """``pipeline.prepare`` of the cell, as dicts: (a SyntaxError prediction, None) or (None, the query);
    and the notes every verdict on the cell carries (where the checks stopped reading a long cell)."""
    from crane_lsp.pipeline import analyze_cached, unchecked_note
    from crane_lsp.pipeline import prepare as first_step
    from crane_lsp.prediction import Prediction

    facts = analyze_cached(text)
    notes = [unchecked_note(facts)] if facts.unchecked_from is not None else []
    first = first_step(facts, settings)
    if isinstance(first, Prediction):
        return first.model_dump(), None, notes
    return None, first.model_dump(), notes


def check(text: str, snapshot: Snapshot, executed: Sequence[str]) -> dict[str, Any] | None:
    """``pipeline.checks_phase`` of the cell: its verdict as a dict, or None when nothing is found."""
    from crane_lsp.pipeline import analyze_cached, checks_phase

    _, prediction = checks_phase(analyze_cached(text), snapshot, executed, text)
    return prediction.model_dump() if prediction is not None else None


# ---------------------------------------------------------------------- on the event loop


async def run_checks_phase(offload: Offloader, pipeline: Pipeline, text: str, executed: Sequence[str]) -> Run:
    """What ``pipeline.predict(text, layers={"checks"})`` answers, with the CPU work in ``offload``;
    the cell's facts stay in the worker (``Run.facts`` is None)."""
    from crane_lsp.pipeline import Run
    from crane_lsp.prediction import Prediction
    from crane_lsp.snapshot import ProbeQuery

    started = time.perf_counter()
    syntax, query, notes = await offload(prepare, text, pipeline.settings)
    if syntax is not None:
        return Run(Prediction.model_validate(syntax))
    snapshot, why = await pipeline.snapshot_for_query(ProbeQuery.model_validate(query))
    found = await offload(check, text, snapshot, list(executed)) if snapshot is not None else None
    prediction = Prediction.model_validate(found) if found is not None else Prediction.nothing_found()
    prediction.source.latency_ms = (time.perf_counter() - started) * 1000
    prediction.notes.extend(notes)
    if why:
        prediction.notes.append(why)
    return Run(prediction, None, snapshot)
