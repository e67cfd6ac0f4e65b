"""Run a predictor over cases and settings: bounded concurrency, a request rate limit, a progress bar,
and a failure on one instance recorded for that instance while the run goes on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from crane_lsp.bench.cases import BenchCase
from crane_lsp.bench.metrics import Outcome

Setting = Literal["-RT", "+RT"]
SETTINGS: tuple[Setting, ...] = ("-RT", "+RT")


def majority(votes: Sequence[bool]) -> bool:
    """Crash when more than half of the votes say so (3 of 5, as in the paper)."""
    return sum(1 for v in votes if v) * 2 > len(votes)


class Answer(BaseModel):
    """What a predictor says about one case in one setting (``predicted`` None: it failed)."""

    predicted: bool | None
    votes: list[bool] = Field(default_factory=list)
    exception: str | None = None
    line: int | None = None  # 1-based line of the target cell, as the JSON report prints it
    message: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cached: bool = False
    truth: bool | None = None  # set by predictors that run the target to learn the truth (notebooks)
    actual_exception: str | None = None
    error: str | None = None
    setup_errors: list[str] = Field(default_factory=list)  # notebooks: replayed cells that raised


class CasePredictor(Protocol):
    """Anything the bench can measure: recorded answers, an LLM provider, the live pipeline."""

    label: str

    async def predict(self, case: BenchCase, setting: Setting) -> Answer: ...

    async def aclose(self) -> None: ...


class CaseResult(Answer):
    """One (instance, setting) row of a run, as it goes into the JSON report: the answer and its case."""

    instance: str
    setting: Setting
    category: str = ""
    root_cause: str = ""

    def outcome(self) -> Outcome:
        return Outcome(self.instance, self.truth, self.predicted)


class RateLimiter:
    """At most ``rate`` request starts per second (None: unlimited), shared by all concurrent tasks."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


def _result(case: BenchCase, setting: Setting, answer: Answer) -> CaseResult:
    row = answer.model_dump()
    row["truth"] = case.crash if case.crash is not None else answer.truth
    if answer.error is not None:
        row["predicted"] = None
    return CaseResult(
        instance=case.instance, setting=setting, category=case.category, root_cause=case.root_cause, **row
    )


def make_progress(console: Console | None = None, *, disable: bool = False) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        disable=disable,
        transient=False,
    )


async def run_bench(
    cases: Sequence[BenchCase],
    predictor: CasePredictor,
    settings: Sequence[Setting],
    *,
    concurrency: int = 4,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Every (case, setting) once; results in case order, then setting order."""
    sem = asyncio.Semaphore(max(1, concurrency))
    jobs = [(case, setting) for case in cases for setting in settings]
    task_id = progress.add_task(predictor.label, total=len(jobs)) if progress is not None else None

    async def one(case: BenchCase, setting: Setting) -> CaseResult:
        async with sem:
            try:
                answer = await predictor.predict(case, setting)
            except Exception as exc:  # one instance's failure must not end the run
                answer = Answer(predicted=None, error=f"{type(exc).__name__}: {exc}")
        if progress is not None and task_id is not None:
            progress.advance(task_id)
        return _result(case, setting, answer)

    return list(await asyncio.gather(*(one(c, s) for c, s in jobs)))
