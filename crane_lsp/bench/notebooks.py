"""A folder of notebooks as a benchmark: per notebook, a fresh kernel in its folder replays the cells
before the target, the live pipeline predicts the target, then the target really runs to give the truth."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from crane_lsp.bench.cases import BenchCase, BenchError, target_index
from crane_lsp.bench.live import CachedVotes, answer_from
from crane_lsp.bench.runner import Answer, Setting
from crane_lsp.layers import LayerName
from crane_lsp.notebook import read_ipynb
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink


#: Offline layer combinations a notebook folder can be measured with (``--provider``).
OFFLINE_LAYERS: dict[str, frozenset[LayerName]] = {
    "checks": frozenset({"checks"}),
    "dryrun": frozenset({"dryrun"}),
    "checks+dryrun": frozenset({"checks", "dryrun"}),
}


class NotebookPredictor:
    """Offline layers (``checks``, ``dryrun``, ``checks+dryrun``), or checks first then the (cached) LLM."""

    def __init__(
        self, *, llm: CachedVotes | None = None, timeout_s: float = 300.0, layers: str = "checks"
    ) -> None:
        self.llm = llm
        self.layers = OFFLINE_LAYERS[layers]
        base = llm.settings if llm is not None else Settings()
        # measuring the dry run means running every target in a copy (``on``), not only screened ones
        self.settings = base.model_copy(update={"dry_run": "on" if "dryrun" in self.layers else "off"})
        self.timeout_s = timeout_s
        self.votes = llm.votes if llm is not None else None
        self.label = layers if llm is None else f"checks+{llm.settings.provider}/{llm.inner.provider.model}"

    async def predict(self, case: BenchCase, setting: Setting) -> Answer:
        from crane_lsp.kernel.replay import sanitize, start_and_replay

        if case.notebook is None:
            raise BenchError(f"{case.instance}: not a notebook case")
        if setting == "-RT" and self.llm is None:
            return Answer(predicted=None, error="the checks need runtime information: use --setting +RT")
        nb = read_ipynb(case.notebook)
        target = target_index(nb)
        source = nb.code_cells[target].source
        link, replayed = await start_and_replay(nb, target, cell_timeout=self.timeout_s)
        try:
            if replayed.stopped_early:
                return Answer(
                    predicted=None, error=f"replay stopped: {replayed.failures[-1].describe_failure()}"
                )
            executed = [nb.code_cells[run.index].source for run in replayed.runs if run.result.ok]
            started = time.perf_counter()
            prediction = await self._predict(link, source, executed, setting)
            latency = (time.perf_counter() - started) * 1000
            truth = await link.execute(sanitize(source), timeout=self.timeout_s)
        finally:
            await link.close()
        answer = answer_from(prediction)
        if prediction.source.layer != "llm":
            answer.latency_ms, answer.cached = latency, False
        if truth.status == "timeout":
            answer.error = "the target did not finish in time: no ground truth"
        answer.setup_errors = [run.describe_failure() for run in replayed.failures]
        answer.truth = truth.status == "error"
        answer.actual_exception = truth.ename
        return answer

    async def _predict(
        self, link: KernelLink, source: str, executed: list[str], setting: Setting
    ) -> Prediction:
        from crane_lsp.pipeline import Pipeline

        if self.llm is None:  # the settings say whether the dry run is measured (``on``) or not
            offline = Pipeline.from_settings(self.settings, link)
            run = await offline.predict(source, executed=executed, layers=self.layers)
        elif setting == "-RT":  # the paper's -RT: the LLM sees the code alone, no kernel, no checks
            alone = Pipeline.from_settings(self.settings, None, llm=self.llm)
            run = await alone.predict(source, executed=executed, layers={"llm"})
        else:
            checked = Pipeline.from_settings(self.settings, link, llm=self.llm)
            run = await checked.predict(source, executed=executed, layers={"checks", "llm"})
        return run.prediction

    async def aclose(self) -> None:
        if self.llm is not None:
            await self.llm.inner.aclose()
