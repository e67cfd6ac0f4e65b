"""The built-in checks of one cell as the server runs them: every CPU-bound step in the worker
process (``workerproc``), only the kernel probe on the event loop.

``Pipeline.predict`` does the same in one process; here the cell's facts never leave the worker
(its ``analyze_cached`` keeps them between the two steps), so nothing the size of the cell is parsed,
walked or unpickled on the server's loop: the loop sends the text, gets the probe query back, asks
the kernel, sends the snapshot, and gets one ``Prediction`` (as a dict) back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crane_lsp.prediction import Prediction
    from crane_lsp.runtime import Snapshot
    from crane_lsp.settings import Settings

#: cells longer than this are checked in the worker process; shorter ones in a worker thread of the
#: server (their parse holds the GIL for milliseconds, and a process round trip costs more than that)
PROCESS_MIN_LINES = 500

#: cells longer than this are not dry-run from the editor (the dry run reads the cell's facts in
#: the server process); their built-in checks still run, and ``crane-lsp check`` dry-runs any size
DRY_RUN_MAX_LINES = 2000


# ---------------------------------------------------------------------- in the worker process


def prepare(text: str, settings: Settings) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(a SyntaxError prediction, None) or (None, the probe query), from the cell's facts."""
    from crane_lsp.predict import analyze_cached, probe_query, syntax_error_prediction

    facts = analyze_cached(text)
    if facts.syntax_error:
        return syntax_error_prediction(facts).model_dump(), None
    return None, probe_query(facts, settings).model_dump()


def check(text: str, snapshot: Snapshot, executed: Sequence[str]) -> dict[str, Any] | None:
    """The first finding of the checks as a prediction (a dict), or None when nothing is found."""
    from crane_lsp.analysis.reach import first_risky_line
    from crane_lsp.checks.runner import run_checks
    from crane_lsp.predict import analyze_cached, finding_to_prediction, if_reached

    facts = analyze_cached(text)
    findings = run_checks(facts, snapshot)
    if not findings:
        return None
    prediction = finding_to_prediction(findings[0], executed, text)
    span = findings[0].span
    if first_risky_line(facts, snapshot, span.line, span.col) is not None:  # as Pipeline.predict rules
        prediction = if_reached(prediction)
    return prediction.model_dump()


# ---------------------------------------------------------------------- on the event loop


async def run_checks_phase(offload: Any, pipeline: Any, text: str, executed: Sequence[str]) -> Prediction:
    """What ``pipeline.predict(text, layers={"checks"})`` answers, with the CPU work in ``offload``."""
    from crane_lsp.prediction import Prediction
    from crane_lsp.runtime import ProbeQuery

    started = time.perf_counter()
    syntax, query = await offload(prepare, text, pipeline.settings)
    if syntax is not None:
        return Prediction.model_validate(syntax)
    snapshot, why = await pipeline.snapshot_for_query(ProbeQuery.model_validate(query))
    found = await offload(check, text, snapshot, list(executed)) if snapshot is not None else None
    prediction = Prediction.model_validate(found) if found is not None else Prediction.nothing_found()
    prediction.source.latency_ms = (time.perf_counter() - started) * 1000
    if why:
        prediction.notes.append(why)
    return prediction
