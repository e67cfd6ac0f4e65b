"""The built-in checks of one cell as the server runs them: every CPU-bound step in the worker
process (``workerproc``), only the kernel probe on the event loop.

``Pipeline.predict`` runs the same two steps (``pipeline.prepare``, ``pipeline.checks_phase``) in
one process; here the cell's facts never leave the worker (its ``analyze_cached`` keeps them between
the two steps), so nothing the size of the cell is parsed, walked or unpickled on the server's loop:
the loop sends the text, gets the probe query back, asks the kernel, sends the snapshot, and gets
one ``Prediction`` (as a dict) back.

A long cell (past ``analysis.parse.MAX_LINES``) is read in two goes: its first part (a verdict within
a second, published at once), then the rest (``finish_checks_phase``: every line, seconds for tens of
thousands of lines), still in the worker. Its dry run screens the cell there too (``run_slow_phase``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crane_lsp.layers import Screened
    from crane_lsp.pipeline import Offloader, Pipeline, Run
    from crane_lsp.prediction import Prediction
    from crane_lsp.settings import Settings
    from crane_lsp.snapshot import Snapshot

#: cells longer than this are checked in the worker process; shorter ones in a worker thread of the
#: server (their parse holds the GIL for milliseconds, and a process round trip costs more than that)
PROCESS_MIN_LINES = 500

#: cells longer than this are not sent to the LLM from the editor (a prompt of thousands of lines);
#: the checks and the dry run read them whole, whatever their size
LLM_MAX_LINES = 2000


# ---------------------------------------------------------------------- in the worker process


def prepare(text: str, settings: Settings) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int | None]:
    """``pipeline.prepare`` of the cell, as dicts: (a SyntaxError prediction, None) or (None, the query);
    and the 0-based line where the checks stopped reading a long cell (None: they read all of it)."""
    from crane_lsp.pipeline import analyze_cached
    from crane_lsp.pipeline import prepare as first_step
    from crane_lsp.prediction import Prediction

    facts = analyze_cached(text)
    first = first_step(facts, settings)
    if isinstance(first, Prediction):
        return first.model_dump(), None, facts.unchecked_from
    return None, first.model_dump(), facts.unchecked_from


def check(text: str, snapshot: Snapshot, executed: Sequence[str]) -> dict[str, Any] | None:
    """``pipeline.checks_phase`` of the cell: its verdict as a dict, or None when nothing is found."""
    from crane_lsp.pipeline import analyze_cached, checks_phase

    _, prediction = checks_phase(analyze_cached(text), snapshot, executed, text)
    return prediction.model_dump() if prediction is not None else None


def prepare_whole(text: str, settings: Settings) -> dict[str, Any]:
    """The probe query of every line of a long cell (``analyze_whole``, kept for ``check_whole``)."""
    from crane_lsp.analysis.parse import analyze_whole
    from crane_lsp.pipeline import probe_query

    return probe_query(analyze_whole(text), settings).model_dump()


def check_whole(text: str, snapshot: Snapshot, executed: Sequence[str]) -> dict[str, Any] | None:
    """``check`` of every line of a long cell."""
    from crane_lsp.analysis.parse import analyze_whole
    from crane_lsp.pipeline import checks_phase

    _, prediction = checks_phase(analyze_whole(text), snapshot, executed, text)
    return prediction.model_dump() if prediction is not None else None


def screen_cell(text: str) -> Screened:
    """The dry run's safe-mode screen of the cell (it reads a long cell whole)."""
    from crane_lsp.dryrun import screen
    from crane_lsp.pipeline import analyze_cached

    return screen(analyze_cached(text))


# ---------------------------------------------------------------------- on the event loop


async def run_checks_phase(offload: Offloader, pipeline: Pipeline, text: str, executed: Sequence[str]) -> Run:
    """What ``pipeline.predict(text, layers={"checks"})`` answers, with the CPU work in ``offload``;
    the cell's facts stay in the worker (``Run.facts`` is None). On a long cell this is the verdict on
    its first part (``Run.unchecked_from`` says where it stops; ``finish_checks_phase`` reads on)."""
    from crane_lsp.pipeline import Run, unchecked_note_for
    from crane_lsp.prediction import Prediction
    from crane_lsp.snapshot import ProbeQuery

    started = time.perf_counter()
    syntax, query, cut = await offload(prepare, text, pipeline.settings)
    if syntax is not None:
        return Run(Prediction.model_validate(syntax))
    snapshot, why = await pipeline.snapshot_for_query(ProbeQuery.model_validate(query))
    found = await offload(check, text, snapshot, list(executed)) if snapshot is not None else None
    prediction = Prediction.model_validate(found) if found is not None else Prediction.nothing_found()
    prediction.source.latency_ms = (time.perf_counter() - started) * 1000
    if cut is not None:
        reads_on = found is None and snapshot is not None  # nothing found so far: the rest decides
        prediction.notes.append(unchecked_note_for(text, cut, "the rest is being read" if reads_on else None))
    if why:
        prediction.notes.append(why)
    return Run(prediction, None, snapshot, unchecked_from=cut)


async def finish_checks_phase(
    offload: Offloader, pipeline: Pipeline, text: str, executed: Sequence[str], first: Run
) -> Run | None:
    """The checks' verdict on every line of a long cell, after ``run_checks_phase`` gave (and the server
    published) the one on its first part. None when that one stands: a crash found in the first part
    comes first, and without a kernel state the checks have nothing to read against. The kernel is
    probed again, for the names the rest of the cell reads."""
    from crane_lsp.pipeline import Run
    from crane_lsp.prediction import Prediction
    from crane_lsp.snapshot import ProbeQuery

    if first.unchecked_from is None or first.snapshot is None or first.prediction.crash:
        return None
    started = time.perf_counter()
    query = await offload(prepare_whole, text, pipeline.settings)
    snapshot, why = await pipeline.snapshot_for_query(ProbeQuery.model_validate(query))
    found = await offload(check_whole, text, snapshot, list(executed)) if snapshot is not None else None
    prediction = Prediction.model_validate(found) if found is not None else Prediction.nothing_found()
    prediction.source.latency_ms = (time.perf_counter() - started) * 1000
    if why:
        prediction.notes.append(why)
    return Run(prediction, None, snapshot or first.snapshot)


async def run_slow_phase(
    offload: Offloader, pipeline: Pipeline, text: str, executed: Sequence[str], first: Run, explicit: bool
) -> Prediction | None:
    """The dry run (and the LLM, within ``LLM_MAX_LINES``) of a cell whose facts stay in the worker:
    the safe-mode screen runs there as well, so the loop never parses the cell. None: no slow layer."""
    from crane_lsp.dryrun import ScreenResult

    lines = text.count("\n") + 1
    llm = pipeline.llm is not None and lines <= LLM_MAX_LINES
    mode = pipeline.settings.dry_run
    if (pipeline.dryrun is None or mode == "off") and not llm:
        return None
    # "on" mode dry-runs every cell unscreened: nothing to read for it
    screened = await offload(screen_cell, text) if mode == "safe" else ScreenResult(True)
    return await pipeline.slow_layers(text, executed, first.snapshot, screened, explicit=explicit, llm=llm)
