"""The verdict of a shortened dry run: what two runs on small samples of a slow cell's data can say.

The kernel side (``kernel/agent/shorten/shorten*.py``) runs a cell whose full dry run did not finish on a
sample of its data with fewer iterations, and, when that raises, on a second, different sample. A
crash is reported (an Error, certainty ``observed``, the message saying it was a shortened run and
what was shortened) only when both samples raise the same exception on the same line with the same
message (sizes of the samples aside), and the failure is of a kind that does not hinge on how many
rows or iterations ran: a name never bound in the cell, an attribute or type error that is not about
``None``, a misspelt column label that the full data does not hold either, an index beyond a
feature axis, a shape error that is not about the number of samples. Everything else (positions,
labels or dates beyond the sample, too few rows for a parameter, size-dependent reshapes, a loop cut
short that leaves a name unset) is no verdict, with the reason. A clean shortened run is "no crash
seen in a shortened run", never "ran clean".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.kernel.agent.dryrun_wire import DryRunOutcomeName
from crane_lsp.kernel.agent.shorten.shorten_rules import _shr_alike, _shr_decide
from crane_lsp.prediction import Evidence, NoVerdictReason, Prediction, Source, line_position


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")  # keys of ``dryrun_wire``'s TypedDicts: a misspelt one fails


class ShortenedWhat(_Wire):
    what: str
    param: str | None = None  # the iteration parameter lowered (``n_init``)
    kept: int
    of: int
    unit: str = "rows"  # "batches"/"elements" for a tf.data pipeline or a Keras dataset (their first ones)


class ShortenedFacts(_Wire):
    """What one shortened run changed, and facts about its failure."""

    rows: list[ShortenedWhat] = Field(default_factory=list)
    params: list[ShortenedWhat] = Field(default_factory=list)
    loops: dict[str, tuple[int, int]] = Field(default_factory=dict)
    sizes: list[int] = Field(default_factory=list)
    failure: dict[str, Any] = Field(default_factory=dict)
    eager: bool = False  # TensorFlow functions ran eagerly (a fork has none of TF's thread pools)
    calls: dict[str, list[str]] = Field(default_factory=dict)  # globals the kernel's functions read
    modules: list[str] = Field(default_factory=list)  # names bound to modules (calls into them change none)
    extrapolated: dict[str, Any] = Field(default_factory=dict)  # the failing operation at full size
    where: dict[str, Any] = Field(default_factory=dict)  # what was found slow, and so shortened
    whole: list[str] = Field(default_factory=list)  # large data left whole: the slow part does not read it
    sample_s: float | None = None  # seconds the child took to draw the samples


class ShortenPlan(_Wire):
    """What a shortened run was asked for: rows in its sample, its seed, iterations per loop."""

    rows: int | None = None
    seed: int | None = None
    cap: int | None = None


class ShortenedRun(_Wire):
    outcome: DryRunOutcomeName
    exception: str | None = None
    message: str | None = None
    line: int | None = None
    elapsed_s: float | None = None
    plan: ShortenPlan = Field(default_factory=ShortenPlan)
    shortened: ShortenedFacts | None = None


class ShortenedRuns(_Wire):
    """``DryRunOutcome.shortened``: the runs on samples beside a full run that did not finish."""

    runs: list[ShortenedRun] = Field(default_factory=list)
    after_s: float | None = None
    error: str | None = None
    skipped: str | None = None  # why no shortened run was started
    skipped_full: str | None = None  # why the full run was stopped at once (``SlowCells``)
    tf_started: bool = False  # the kernel started TensorFlow's runtime (its thread pools stay there)


def describe(run: ShortenedRun) -> str:
    """What a run shortened: "263 of 200,000 rows (df, X); 2 of 25 iterations of the loop on line 3"."""
    facts = run.shortened or ShortenedFacts()
    parts = []
    by_size: dict[tuple[int, int, str], list[str]] = {}
    for item in facts.rows:
        by_size.setdefault((item.kept, item.of, item.unit), []).append(item.what)
    for (kept, of, unit), names in by_size.items():
        first = "" if unit == "rows" else "the first "
        parts.append(f"{first}{kept:,} of {of:,} {unit} ({', '.join(names)})")
    for line, (kept, of) in sorted(facts.loops.items(), key=lambda kv: int(kv[0])):
        if of > 0:
            parts.append(f"{kept:,} of {of:,} iterations of the loop on line {line}")
        else:  # a while loop stopped after its first iterations: how many it would run is unknown
            parts.append(f"the first {kept:,} iterations of the while loop on line {line}")
    for item in facts.params:
        parts.append(f"{item.what}: {item.kept:,} instead of {item.of:,}")
    return "; ".join(parts) if parts else "nothing shortened"


def doubt(first: ShortenedRun, second: ShortenedRun, source: str) -> str | None:
    """Why a crash both samples showed may come from the shortening; None when it cannot (the
    rules the kernel applies too: ``kernel/agent/shorten/shorten_rules.py``)."""
    return decide(first, second, source)[0]


def decide(first: ShortenedRun, second: ShortenedRun, source: str) -> tuple[str | None, str]:
    """``(doubt, why)``: the doubt (None when the crash is the full run's) and what decided it."""
    doubt_, why = _shr_decide(first.model_dump(), second.model_dump(), source)
    return doubt_, why


def judge(runs: ShortenedRuns, full_budget: str, source: str) -> Prediction:
    """The Prediction from the shortened runs beside a full dry run that did not finish."""
    timed_out = f"no verdict: the dry run did not finish in {full_budget}"
    plain: NoVerdictReason = "timeout"  # the headline when the shortened runs decide nothing
    notes = [f"full dry run: did not finish in {full_budget}"]
    if runs.skipped_full:  # predicted to overrun: the shortened runs had the CPU to themselves
        plain = "not-run"
        timed_out = f"no verdict: the full dry run was not run ({runs.skipped_full})"
        notes = [f"full dry run: not run: {runs.skipped_full}"]
    for number, run in enumerate(runs.runs, 1):
        seen = run.outcome + (f" {run.exception} at line {run.line}" if run.outcome == "raised" else "")
        seen += f" in {run.elapsed_s:.2f} s" if run.elapsed_s is not None and run.outcome != "timeout" else ""
        notes.append(f"shortened run {number} ({describe(run)}): {seen}")
    if runs.tf_started:
        notes.append(
            "TensorFlow's runtime runs in this kernel: in a copy, a compiled function fed by tf.data may "
            "wait for thread pools that stayed in the kernel (the shortened runs run eagerly)"
        )
    whole = sorted({w for run in runs.runs for w in (run.shortened.whole if run.shortened else ())})
    if whole:
        notes.append(f"left whole (the slow part does not read them): {', '.join(whole)}")
    if not runs.runs:
        why = runs.skipped or (f"the shortened run failed: {runs.error}" if runs.error else "")
        why = f"no shortened run: {why or 'no time was left for one'}"
        return _no_verdict(plain, timed_out, [*notes, why])
    first = runs.runs[0]
    if first.outcome == "completed":
        p = Prediction.nothing_found(f"no crash seen in a shortened run ({describe(first)})")
        p.notes.extend([*notes, "a shortened run is no promise that the full run is clean"])
        return p
    if first.outcome != "raised":  # the headline of a plain timeout; the notes say what was tried
        return _no_verdict(plain, timed_out, [*notes, f"a shortened run did not help: {first.outcome}"])
    what = f"a shortened run raised {first.exception} at line {first.line}"
    doubt: NoVerdictReason = "shortened-doubt"
    if len(runs.runs) < 2:
        return _no_verdict(doubt, f"no verdict: {what}, with no time to confirm it on a second sample", notes)
    second = runs.runs[1]
    if second.outcome != "raised":
        hinges = f"no verdict: {what}, but not on a second sample: it hinges on the sample"
        return _no_verdict(doubt, hinges, notes)
    if not _shr_alike(first.model_dump(), second.model_dump()):
        return _no_verdict(doubt, f"no verdict: {what}, a second sample raised differently", notes)
    reason, decided = decide(first, second, source)
    if reason is not None:
        notes.append(f"decided by {decided}")
        return _no_verdict(doubt, f"no verdict: {what}, which may come from the shortening ({reason})", notes)
    full = "was not run" if runs.skipped_full else "did not finish in time"
    notes += [f"observed in a shortened dry run: the full run {full}", f"the full run's crash: {decided}"]
    return _observed(first, second, source, notes, decided)


def _no_verdict(reason: NoVerdictReason, headline: str, notes: list[str]) -> Prediction:
    p = Prediction.unanswered(reason, headline)
    p.notes.extend(notes)
    return p


def _observed(
    first: ShortenedRun, second: ShortenedRun, source: str, notes: list[str], decided: str
) -> Prediction:
    shortened = describe(first)
    first_line = (first.message or "").strip().splitlines()[0] if (first.message or "").strip() else ""
    where = f" at line {first.line}" if first.line else ""
    return Prediction(
        crash=True,
        certainty="observed",
        exception=first.exception,
        **line_position(source, first.line),
        message=f"{first.exception}: {first_line} (raised{where} in a shortened run: {shortened})",
        raw_message=first.message or "",
        diagnosis=(
            f"Observed in a shortened dry run (a sandboxed copy of the kernel, on a sample of the data): "
            f"the cell raised {first.exception}{where}: {first_line}. A second, different sample "
            f"({describe(second)}) raised the same, and it is the full run's crash: {decided}."
        ),
        evidence=[Evidence(fact="shortened dry run", value=shortened)],
        source=Source(layer="dryrun", latency_ms=None),
        notes=notes,
    )


@dataclass
class SlowCells:
    """Which cells' full dry runs overran their budget, remembered by the client (one per kernel
    link), so that the next dry run of such a cell goes straight to the shortened runs.

    Conservative on purpose: the full run is skipped only for the SAME cell text whose full run did
    not finish within a budget at least as long as this one (a Re-check's longer budget always runs
    it), and the kernel skips it only when the cell has something to shorten; a cell that merely
    begins like a slow one (the lines before its last one, as while the end of a slow cell is typed)
    starts its shortened runs at once, beside its full run. A full run that answers is forgotten.
    """

    limit: int = 256
    overran: OrderedDict[str, float] = field(default_factory=OrderedDict)  # text -> budget overrun

    def forecast(self, source: str, budget: float, ran: Mapping[str, float] | None = None) -> dict[str, Any]:
        """What to add to the payload's ``shorten`` options for ``source``. ``ran``: seconds the
        kernel itself took to run cells, by their text, where the link measured them."""
        seen = self.overran.get(source)
        if seen is not None and seen >= budget:
            self.overran.move_to_end(source)
            return {"skip_full": f"its full dry run did not finish in {seen:g} s before", "after_s": 0.0}
        took = (ran or {}).get(source)
        if took is not None and took > budget:
            return {"skip_full": f"it ran {took:.0f} s in the kernel before", "after_s": 0.0}
        slow = [text for text, overrun in self.overran.items() if overrun >= budget]
        slow += [text for text, seconds in (ran or {}).items() if seconds > budget]
        for text in slow:
            stem = text.rstrip().rpartition("\n")[0]
            if stem.strip() and source.startswith(stem + "\n"):
                return {"after_s": 0.0}
        return {}

    def learn(self, source: str, budget: float, outcome: str, shortened: ShortenedRuns | None) -> None:
        """Remember an overrun (also a full run skipped for one); forget a cell whose full run answered."""
        if outcome == "timeout":
            self.overran[source] = max(budget, self.overran.get(source, 0.0))
            self.overran.move_to_end(source)
            while len(self.overran) > self.limit:
                self.overran.popitem(last=False)
        elif outcome in ("completed", "raised"):
            self.overran.pop(source, None)
