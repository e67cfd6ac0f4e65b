"""What the layers of the pipeline share: one question (``Ask``), one ``Layer`` protocol, and what
they may ask of a kernel (``KernelReader``).

The dry run (``dryrun.DryRunner``) and the LLM (``llm.LLMPredictor``, and the front doors' wrappers
around it) answer the same ``Ask`` the same way, so the pipeline, the server, ``check`` and ``bench``
hand any of them around without knowing which one it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from crane_lsp.analysis.facts import CellFacts
    from crane_lsp.checks.registry import Finding
    from crane_lsp.prediction import Prediction
    from crane_lsp.snapshot import ProbeQuery, Snapshot

LayerName = Literal["checks", "dryrun", "llm"]
LAYERS: tuple[LayerName, ...] = ("checks", "dryrun", "llm")


@dataclass(frozen=True)
class KnownCrash:
    """A crash already known when the LLM is asked: a check's finding or a dry run's observation.

    The LLM explains it instead of guessing. One neutral value, so that neither the checks' nor
    the pipeline's own types travel into the prompt (``llm/prompt.py`` renders it)."""

    line: int  # 0-based line of the target cell
    exception: str
    message: str
    evidence: tuple[tuple[str, str], ...] = ()  # (fact, value) the verdict rests on
    observed: bool = False  # a dry run saw it happen (not a check's proof)
    seen: str = ""  # an observed crash: what the run showed, with the exception's own message

    @classmethod
    def of_finding(cls, finding: Finding) -> KnownCrash:
        return cls(finding.span.line, finding.exception, finding.message, finding.evidence)

    @classmethod
    def of_prediction(cls, prediction: Prediction) -> KnownCrash:
        observed = prediction.source.layer == "dryrun"
        return cls(
            line=prediction.line or 0,
            exception=prediction.exception or "Exception",
            message=prediction.message,
            evidence=tuple((e.fact, e.value) for e in prediction.evidence),
            observed=observed,
            seen=prediction.diagnosis if observed else "",
        )


@dataclass(frozen=True)
class Ask:
    """One cell to predict and everything already known about it."""

    target: str
    executed: Sequence[str] = ()  # the sources the kernel ran, in execution order
    facts: CellFacts | None = None  # the target's facts when already read (the dry run screens them)
    snapshot: Snapshot | None = None  # the kernel's state as probed for this cell
    runtime_text: str | None = None  # a recorded description of the state instead of a snapshot
    known: Sequence[KnownCrash] = ()  # crashes already known: the LLM explains instead of guessing
    explicit: bool = False  # an explicit Re-check: the longer dry-run budget, no LLM cache
    screened: Screened | None = None  # the dry run's safe-mode screen, done where a long cell's facts are


class Screened(Protocol):
    """The dry run's safe-mode screen of a cell (``dryrun.ScreenResult``): may it be dry-run, and why not."""

    @property
    def safe(self) -> bool: ...

    @property
    def reason(self) -> str: ...


class Layer(Protocol):
    """A slow layer: an observation or a guess about the cell; None when it has nothing to say."""

    @property
    def name(self) -> LayerName: ...

    async def predict(self, ask: Ask) -> Prediction | None: ...


class ProbeCaller(Protocol):
    """A kernel whose probe entry points can be called (undo, preview: nothing else is asked)."""

    async def call(
        self, function: str, payload: dict[str, Any], timeout: float = 10.0, *, allow_busy: bool | None = None
    ) -> dict[str, Any]: ...


class KernelReader(ProbeCaller, Protocol):
    """What the pipeline and its dry run ask of a kernel (``kernel.link.KernelLink`` is one; the
    server hands in one that counts its probes)."""

    async def snapshot(self, query: ProbeQuery, timeout: float | None = None) -> Snapshot: ...

    async def is_alive(self) -> bool: ...
