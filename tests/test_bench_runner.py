"""The runner's practicalities: the rate limit spaces requests; concurrency bounds instances in flight."""

from __future__ import annotations

import asyncio
import time

from crane_lsp.bench.cases import BenchCase
from crane_lsp.bench.runner import Answer, RateLimiter, Setting, make_progress, run_bench


async def test_rate_limiter_spaces_request_starts() -> None:
    limiter = RateLimiter(20.0)
    started = time.monotonic()
    await asyncio.gather(*(limiter.wait() for _ in range(6)))
    assert time.monotonic() - started >= 0.24  # 6 starts at 20/s: the last waits 5 intervals
    free = RateLimiter(None)
    started = time.monotonic()
    await asyncio.gather(*(free.wait() for _ in range(50)))
    # no spacing at all: 50 starts at any rate would take seconds (2.45 s at 20/s); the bound leaves a
    # loaded CI machine room for a scheduling pause
    assert time.monotonic() - started < 0.2


class SlowPredictor:
    """A predictor whose work is a real sleep, so overlap can be measured; odd instances fail."""

    label = "slow"

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0

    async def predict(self, case: BenchCase, setting: Setting) -> Answer:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.02)
        self.active -= 1
        if int(case.instance) % 2:
            raise ConnectionError(f"service down for {case.instance}")
        return Answer(predicted=True, votes=[True])

    async def aclose(self) -> None:
        return None


async def test_run_bench_bounds_concurrency_and_records_failures() -> None:
    cases = [BenchCase(instance=str(i), crash=bool(i % 3)) for i in range(10)]
    predictor = SlowPredictor()
    progress = make_progress(disable=True)
    results = await run_bench(cases, predictor, ["-RT", "+RT"], concurrency=3, progress=progress)
    assert predictor.peak == 3
    assert [(r.instance, r.setting) for r in results[:3]] == [("0", "-RT"), ("0", "+RT"), ("1", "-RT")]
    failed = [r for r in results if r.error]
    assert len(failed) == 10 and all(r.predicted is None and "service down" in r.error for r in failed)
    assert progress.tasks[0].completed == 20
