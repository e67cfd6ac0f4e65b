"""The dry-run layer's runner, bound to one kernel link: the budget, the safe-mode screen, a child
prepared ahead while the user types, and the outcome turned into a Prediction (``outcome.py``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze
from crane_lsp.dryrun.outcome import DryRunOutcome, DryRunPrepared, _note, _unanswered, outcome_to_prediction
from crane_lsp.dryrun.screen import screen
from crane_lsp.dryrun.shortened import SlowCells
from crane_lsp.kernel.agent.wire import PREPARE_WINDOW_S
from crane_lsp.layers import Ask, KernelReader, LayerName, Screened
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

log = logging.getLogger(__name__)


class DryRunner:
    """The pipeline's ``dryrun`` layer, bound to one kernel link. ``safe`` and ``on`` get the same
    jail; ``safe`` also skips cells the static screen says would only be stopped by it."""

    name: LayerName = "dryrun"

    def __init__(self, link: KernelReader, settings: Settings) -> None:
        self.link = link
        self.settings = settings
        self._prepared: tuple[object, float] | None = None  # (generation, when) of the last prepare
        self.slow_cells = SlowCells()  # cells whose full run overran its budget (shortened.py)

    def wants_prepare(self, generation: object) -> bool:
        """Whether to prepare now: at most once per kernel ``generation`` per window, and again
        once a dry run has used (or discarded) the prepared child."""
        if self.settings.dry_run == "off":
            return False
        last = self._prepared
        return last is None or last[0] != generation or time.monotonic() - last[1] >= PREPARE_WINDOW_S

    def forget_prepared(self) -> None:
        """The kernel's prepared child was used by another request (a preview): the next edit
        prepares again instead of leaving the next dry run to fork cold."""
        self._prepared = None

    async def prepare(self, generation: object = None) -> DryRunPrepared | None:
        """Have the kernel fork and jail the next dry run's child now; never raises (debug log)."""
        self._prepared = (generation, time.monotonic())
        payload = {"memory_mb": self.settings.dry_run_memory_mb, "window_s": PREPARE_WINDOW_S, **_standin()}
        try:
            answer = DryRunPrepared.model_validate(
                await self.link.call("dry_run_prepare", payload, timeout=5)
            )
        except Exception as exc:  # a busy or gone kernel: the dry run forks cold
            log.debug("dry-run prepare failed: %s", exc)
            return None
        log.debug("dry-run prepare: %s", answer)
        return answer

    async def predict(self, ask: Ask) -> Prediction | None:
        """The ``Layer`` call: ``dry_run`` of the asked cell (an explicit Re-check waits longer)."""
        if ask.screened is not None:  # screened where the facts are (the server's worker, for a long cell)
            return await self.dry_run(
                ask.target, None, explicit=ask.explicit, screened=ask.screened, executed=ask.executed
            )
        facts = ask.facts if ask.facts is not None else analyze(ask.target)
        return await self.dry_run(ask.target, facts, explicit=ask.explicit, executed=ask.executed)

    def budget(self, explicit: bool = False) -> float:
        """A short budget while typing, a longer one for an explicit Re-check."""
        if explicit:
            return max(self.settings.dry_run_recheck_budget_s, self.settings.dry_run_budget_s)
        return self.settings.dry_run_budget_s

    async def run_outcome(
        self, source: str, explicit: bool = False, expect_bound: Sequence[str] = ()
    ) -> DryRunOutcome:
        """The sandbox's answer for ``source``; ``expect_bound``: names the run must leave bound (its
        ``unbound`` lists those it did not, when it completes: a fix's verification asks)."""
        budget = self.budget(explicit)
        payload = self._payload(source, budget, explicit, expect_bound)
        self.forget_prepared()  # a prepared child is used (or discarded) now: the next edit prepares again
        raw = await self.link.call("dry_run", payload, timeout=budget + 10)
        outcome = DryRunOutcome.model_validate(raw)
        self.slow_cells.learn(source, budget, outcome.outcome, outcome.shortened)
        log.debug(
            "dry run: %s in %s s, prepared child: %s", outcome.outcome, outcome.round_trip_s, outcome.prepared
        )
        return outcome

    async def run_many(
        self, runs: Sequence[tuple[str, Sequence[str]]], explicit: bool = False, width: int = 3
    ) -> list[DryRunOutcome]:
        """Each ``(source, expect_bound)`` dry-run in its own cold fork, up to ``width`` at once (the
        kernel lowers it to its idle CPUs and free memory: ``agent/dryrun/dryrun_many.py``); the
        outcomes in the order asked. The prepared child is left for the next single dry run."""
        budget = self.budget(explicit)
        payloads = [self._payload(source, budget, explicit, bound) for source, bound in runs]
        # one place may be all the kernel gives: then the runs take their budgets in turn
        timeout = budget * max(1, len(runs)) + 10
        raw = await self.link.call("dry_run_many", {"runs": payloads, "width": width}, timeout=timeout)
        outcomes = [DryRunOutcome.model_validate(r) for r in raw.get("runs") or []]
        if len(outcomes) != len(runs):
            raise ValueError(f"the kernel answered {len(outcomes)} dry runs for {len(runs)}")
        for (source, _), outcome in zip(runs, outcomes, strict=True):
            self.slow_cells.learn(source, budget, outcome.outcome, outcome.shortened)
        log.debug("dry runs side by side: %s at once", raw.get("width"))
        return outcomes

    def _payload(
        self, source: str, budget: float, explicit: bool, expect_bound: Sequence[str]
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "source": source,
            "budget_s": budget,
            "memory_mb": self.settings.dry_run_memory_mb,
        }
        if expect_bound:
            payload["expect_bound"] = list(expect_bound)
        if self.settings.dry_run_shorten:  # a slow cell runs again on a sample (Re-check: full run goes on)
            payload["shorten"] = {"after_s": min(0.5, budget / 4), "stop_full": not explicit}
            ran = getattr(self.link, "cell_seconds", None)  # the kernel's own timings (H6-for-H1.md)
            ran = ran if isinstance(ran, Mapping) else None
            payload["shorten"].update(self.slow_cells.forecast(source, budget, ran))
        payload["privacy"] = self.settings.privacy  # the failing line's facts honour it
        payload.update(_standin())  # a shape-level run forced from here (agent/dryrun/standin.py)
        return payload

    async def dry_run(
        self,
        target: str,
        facts: CellFacts | None,
        explicit: bool = False,
        screened: Screened | None = None,
        executed: Sequence[str] = (),
    ) -> Prediction | None:
        """``screened``: the safe-mode screen's verdict when the caller has it (``facts`` may be None)."""
        if self.settings.dry_run == "off":
            return None
        if self.settings.dry_run == "safe":
            if screened is None:
                screened = screen(facts if facts is not None else analyze(target))
            verdict = screened
            if not verdict.safe:
                return _note(f"not dry-run ({verdict.reason})")
        try:
            outcome = await self.run_outcome(target, explicit)
        except Exception as exc:  # busy or dead kernels and probe errors: fall through, say why
            log.info("dry run unavailable: %s", exc)
            if not await self._kernel_alive():
                text = "no verdict: the kernel died during the dry run"
                return _unanswered("unavailable", text, f"dry run unavailable: {exc}")
            return _note(f"dry run unavailable: {exc}")
        return outcome_to_prediction(outcome, target, executed)

    async def _kernel_alive(self) -> bool:
        try:
            return bool(await self.link.is_alive())
        except Exception:
            return False


def _standin() -> dict[str, str]:
    """``CRANE_DRYRUN_STANDIN=force`` in this process's environment, for the kernel's child (the
    prepared child gets it at its prepare, a cold one with the run)."""
    value = os.environ.get("CRANE_DRYRUN_STANDIN", "")
    return {"standin": value} if value else {}
