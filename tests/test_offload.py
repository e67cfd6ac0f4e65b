"""The worker that keeps CPU-bound checks off the event loop (``crane_lsp.server.offload``).

A superseded job is stopped where it runs; whatever it was doing must not turn the stop into a result.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze
from crane_lsp.server.offload import Offload


async def test_a_stopped_parse_is_no_result_and_the_next_job_runs() -> None:
    """``analyze`` catches ``Exception`` to survive bad code; the stop must pass through it, or a
    stopped parse would count as a finished one that trusts nothing (no SyntaxError shown)."""
    offload = Offload("test-offload")
    finished: list[CellFacts] = []

    def parse(text: str) -> None:
        finished.append(analyze(text, None))

    long_text = "\n".join(f"w{i} = len(df) + {i}" for i in range(80_000)) + "\nx = ("
    job = asyncio.ensure_future(offload(parse, long_text))
    deadline = time.monotonic() + 30
    while offload._current is None:  # the parse has started in the worker thread
        assert time.monotonic() < deadline, "the job never started"
        await asyncio.sleep(0.001)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert offload.interrupted == 1
    await offload(parse, "y = (")  # runs after the stopped one, in the same thread
    assert [f.syntax_error is not None for f in finished][-1]
    assert all(f.syntax_error is not None for f in finished), [f.analyzed for f in finished]
    offload.close()
