"""The pipeline every front door uses: parse the cell, probe the kernel, run the checks, then the
dry run and the LLM. One ``Run`` comes out; nothing here knows which door it came through.

    pipeline = Pipeline.from_settings(settings, link=KernelLink | None, llm=Layer | None)
    run = await pipeline.predict(target_source, executed=[sources in execution order],
                                 layers={"checks", "dryrun", "llm"} | None, bypass_cache=False)
    run.prediction, run.facts, run.snapshot  # the verdict, the cell's facts, the state it was read from
    await pipeline.predict(target_source, executed=..., layers={"dryrun", "llm"}, snapshot=run.snapshot)
    pipeline.last_exchange(target_source) -> (prompt, answer) | None   # for crane.showPrompt

The checks phase (``prepare`` then ``checks_phase``) is two plain functions, so the server's worker
process (``server/checkpass.py``) runs exactly what ``predict`` runs.
"""

from __future__ import annotations

import ast
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.origins import analyze_cached, origins
from crane_lsp.analysis.parse import MAX_LINES, analyze_whole
from crane_lsp.analysis.reach import first_risky_line
from crane_lsp.checks.registry import Finding
from crane_lsp.layers import LAYERS, Ask, KernelReader, KnownCrash, Layer, LayerName, Screened
from crane_lsp.prediction import Evidence, Fix, Prediction, Source
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ProbeQuery, Snapshot

__all__ = [
    "LAYERS",
    "Ask",
    "KernelReader",
    "Layer",
    "LayerName",
    "Offloader",
    "Pipeline",
    "Run",
    "analyze_cached",
    "checks_phase",
    "finding_to_prediction",
    "if_reached",
    "origins",
    "prepare",
    "probe_query",
    "replacement_fix",
    "syntax_error_prediction",
    "unchecked_note",
    "unchecked_note_for",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Offloader(Protocol):
    """Runs CPU-bound work somewhere (a worker thread in the server) and returns its result."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


async def _inline(fn: Callable[..., T], /, *args: Any) -> T:
    return fn(*args)


@dataclass
class Run:
    """One prediction and what it was made from: the second phase starts from here, not from
    anything remembered on the pipeline (two checks of one notebook interleave at every ``await``)."""

    prediction: Prediction
    facts: CellFacts | None = None  # None when the facts stayed in the server's worker process
    snapshot: Snapshot | None = None  # the kernel state the run read; None: no kernel, busy, not asked
    unchecked_from: int | None = None  # a long cell's first part only: where the checks stopped (0-based)


def probe_query(facts: CellFacts, settings: Settings) -> ProbeQuery:
    fields = facts.probe_query_fields()
    return ProbeQuery(
        names=fields.get("names", []),
        chains=fields.get("chains", []),
        subscripts=fields.get("subscripts", []),
        paths=fields.get("paths", []),
        modules=fields.get("modules", []),
        index_labels=fields.get("index_labels", {}),
        max_columns=settings.max_columns,
        sample_rows=settings.sample_rows,
        object_budget_s=settings.object_budget_s,
        request_budget_s=settings.request_budget_s,
        privacy=settings.privacy,
    )


def replacement_fix(finding: Finding, target: str) -> Fix | None:
    """A finding's replacement as a whole-line edit of the target cell (what editors apply)."""
    if finding.replacement is None:
        return None
    span, text, description = finding.replacement
    lines = target.split("\n")
    if span.line != span.end_line or not 0 <= span.line < len(lines):
        return None
    line = lines[span.line]
    if span.end_col > len(line):
        return None
    text = _same_quotes(line[span.col : span.end_col], text)
    new_line = line[: span.col] + text + line[span.end_col :]
    return Fix(description=description, start_line=span.line, end_line=span.line + 1, new_text=new_line)


def _same_quotes(original: str, text: str) -> str:
    """Write a replacement string literal with the quotes the user wrote (``"a"`` stays ``"b"``)."""
    if not original.startswith('"') or not text.startswith("'"):
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return json.dumps(value) if isinstance(value, str) and value.isprintable() else text


def finding_to_prediction(finding: Finding, executed: Sequence[str], target: str = "") -> Prediction:
    return Prediction(
        crash=True,
        certainty="certain",
        exception=finding.exception,
        line=finding.span.line,
        col=finding.span.col,
        end_line=finding.span.end_line,
        end_col=finding.span.end_col,
        message=finding.message,
        diagnosis=finding.diagnosis or finding.message,
        evidence=[Evidence(fact=f, value=v) for f, v in finding.evidence],
        origin=origins(finding.variables, executed),
        fix=replacement_fix(finding, target),
        source=Source(layer="checks", check_id=finding.check_id),
    )


def unchecked_note(facts: CellFacts) -> str:
    """Where the built-in checks stopped reading a long cell (``analysis.parse.MAX_LINES``)."""
    return unchecked_note_for(facts.source, facts.unchecked_from or 0)


def unchecked_note_for(source: str, unchecked_from: int, then: str | None = None) -> str:
    """``unchecked_note`` from the cell's text and the 0-based line where reading stopped; ``then``
    says what happens to the rest (default: nothing checks it)."""
    total = source.count("\n") + (0 if source.endswith("\n") else 1)
    rest = then or "nothing from there on is checked"
    return f"the built-in checks stop at line {unchecked_from + 1} of this {total}-line cell: {rest}"


def if_reached(prediction: Prediction) -> Prediction:
    """A check's finding whose line may not be reached (an earlier line may raise): a Warning."""
    line = (prediction.line or 0) + 1
    prediction.certainty = "predicted"
    prediction.message = f"{prediction.message} (raises at line {line} if reached)"
    return prediction


def syntax_error_prediction(facts: CellFacts) -> Prediction:
    span = facts.syntax_error_span
    return Prediction(
        crash=True,
        certainty="certain",
        exception="SyntaxError",
        line=span.line if span else 0,
        col=span.col if span else 0,
        end_line=span.end_line if span else None,
        end_col=span.end_col if span else None,
        message=f"the cell does not parse: {facts.syntax_error}",
        diagnosis=f"Python cannot compile this cell: {facts.syntax_error}",
        source=Source(layer="checks", check_id="syntax"),
    )


def prepare(facts: CellFacts, settings: Settings) -> Prediction | ProbeQuery:
    """The first step of every check: a SyntaxError verdict, or the query for the kernel probe."""
    if facts.syntax_error:
        return syntax_error_prediction(facts)
    return probe_query(facts, settings)


def _read(target: str, settings: Settings) -> tuple[CellFacts, Prediction | ProbeQuery]:
    """The cell's facts and ``prepare``'s answer, in one hop to the worker. A cell past ``MAX_LINES`` is
    read whole: ``predict`` is the terminal doors' (``check``, ``bench``), which wait for the whole verdict;
    the server reads such a cell in two goes (``server/checkpass``) and predicts short ones here."""
    long = target.count("\n") + 1 > MAX_LINES
    facts = analyze_whole(target) if long else analyze_cached(target)
    return facts, prepare(facts, settings)


def checks_phase(
    facts: CellFacts, snapshot: Snapshot, executed: Sequence[str], target: str
) -> tuple[list[Finding], Prediction | None]:
    """The checks' findings and their verdict: certain, or a Warning "raises at line k if reached"
    (with a note why) when an earlier line may raise first; None when nothing was found."""
    from crane_lsp.checks.runner import run_checks

    findings = run_checks(facts, snapshot)
    if not findings:
        return findings, None
    first = findings[0].span
    prediction = finding_to_prediction(findings[0], executed, target)
    risky = first_risky_line(facts, snapshot, first.line, first.col)
    if risky is not None:  # the dry run may still decide; without one this Warning stands
        prediction = if_reached(prediction)
        prediction.notes.append(f"line {risky + 1} may raise before line {first.line + 1} is reached")
    elif findings[0].unproven_reach:
        prediction = if_reached(prediction)
        prediction.notes.append(findings[0].unproven_reach)
    elif findings[0].unproven_hook:  # a runtime hook the probe did not run may answer: a Warning
        prediction.certainty = "predicted"
        prediction.notes.append(findings[0].unproven_hook)
    return findings, prediction


@dataclass
class Pipeline:
    """Checks first (certain), then the sandboxed dry run (observed), then the LLM (predicted)."""

    settings: Settings
    link: KernelReader | None = None
    llm: Layer | None = None
    dryrun: Layer | None = None
    offload: Offloader = _inline  # the server passes a worker thread

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        link: KernelReader | None = None,
        *,
        llm: Layer | None = None,
        offload: Offloader = _inline,
    ) -> Pipeline:
        """The pipeline of every front door: the dry run on ``link`` unless the settings turn it off;
        the LLM layer is the door's own (lenient in the editor, strict in the terminal, cached on disk
        in the bench); ``offload`` where the door has a worker for the CPU-bound steps."""
        runner: Layer | None = None
        if link is not None and settings.dry_run != "off":
            from crane_lsp.dryrun import DryRunner

            runner = DryRunner(link, settings)
        return cls(settings, link, llm, runner, offload)

    async def snapshot_for(self, facts: CellFacts) -> tuple[Snapshot | None, str | None]:
        """The kernel's view for this cell, or why there is none (busy, dead, no kernel)."""
        return await self.snapshot_for_query(probe_query(facts, self.settings))

    async def snapshot_for_query(self, query: ProbeQuery) -> tuple[Snapshot | None, str | None]:
        """``snapshot_for`` with the query already built (the server builds it in its worker)."""
        if self.link is None:
            return None, "no kernel attached"
        from crane_lsp.kernel.link import KernelBusy, KernelDead, ProbeError

        try:
            return await self.link.snapshot(query), None
        except KernelBusy:
            return None, "kernel busy: checked without runtime information"
        except KernelDead as exc:
            return None, f"no kernel: {exc}"
        except ProbeError as exc:
            log.warning("probe failed: %s", exc)
            return None, f"probe failed: {exc}"

    async def predict(
        self,
        target: str,
        executed: Sequence[str] = (),
        layers: Iterable[LayerName] | None = None,
        bypass_cache: bool = False,
        snapshot: Snapshot | None = None,
    ) -> Run:
        """The verdict of the wanted layers; ``snapshot`` is a state already read (the second phase
        passes the first's ``run.snapshot`` instead of probing again)."""
        started = time.perf_counter()
        wanted = set(layers) if layers is not None else set(LAYERS)
        # the same text is predicted twice: checks, then dry run + LLM (CPU work off the server's loop)
        facts, first = await self.offload(_read, target, self.settings)
        if isinstance(first, Prediction):
            return Run(first, facts, snapshot)
        notes: list[str] = []
        if facts.unchecked_from is not None:
            notes.append(unchecked_note(facts))
        needs_runtime = "checks" in wanted or ("llm" in wanted and self.settings.runtime_info)
        if snapshot is None and needs_runtime:  # no kernel round trip for a -RT question
            snapshot, why = await self.snapshot_for_query(first)
            if why:
                notes.append(why)
        findings: list[Finding] = []
        fallback: Prediction | None = None  # the checks' "raises at line k if reached"
        if "checks" in wanted and snapshot is not None:
            findings, found = await self.offload(checks_phase, facts, snapshot, executed, target)
            if found is not None and found.certainty == "certain":
                found.source.latency_ms = _ms(started)
                if self.settings.explain_certain and self.llm is not None and "llm" in wanted:
                    found = await self._explain(
                        found, executed, target, snapshot, [KnownCrash.of_finding(f) for f in findings]
                    )
                found.notes.extend(notes)
                return Run(found, facts, snapshot)
            if found is not None:
                notes.extend(found.notes)
                found.notes.clear()
                fallback = found
        known = [KnownCrash.of_finding(f) for f in findings]
        ask = Ask(target, executed, facts, snapshot, known=known, explicit=bypass_cache)
        done = await self._slow_layers(ask, wanted, notes, started, fallback)
        return Run(done, facts, snapshot)

    async def slow_layers(
        self,
        target: str,
        executed: Sequence[str],
        snapshot: Snapshot | None,
        screened: Screened,
        *,
        explicit: bool = False,
        llm: bool = True,
    ) -> Prediction:
        """``predict``'s dry run (and LLM unless ``llm`` is False) for a cell whose facts stay elsewhere
        (the server's worker reads a long cell): ``screened`` is the dry run's safe-mode screen, done
        there, so nothing here parses the cell."""
        wanted: set[LayerName] = {"dryrun", "llm"} if llm else {"dryrun"}
        ask = Ask(target, executed, None, snapshot, explicit=explicit, screened=screened)
        return await self._slow_layers(ask, wanted, [], time.perf_counter(), None)

    async def _slow_layers(
        self, ask: Ask, wanted: set[LayerName], notes: list[str], started: float, fallback: Prediction | None
    ) -> Prediction:
        """The dry run (observed), else the checks' Warning, else the LLM (predicted)."""
        carried: Prediction | None = None  # a dry run with no verdict (or a headline) says so up front
        if "dryrun" in wanted and self.dryrun is not None and self.settings.dry_run != "off":
            observed = await self.dryrun.predict(ask)  # an explicit Re-check waits longer
            if observed is not None and observed.source.layer == "dryrun":  # raised, or ran clean
                if observed.crash and self.llm is not None and "llm" in wanted and ask.snapshot is not None:
                    observed = await self._explain(
                        observed, ask.executed, ask.target, ask.snapshot, ask.known
                    )
                observed.notes.extend(notes)
                return observed
            if observed is not None:
                notes.extend(observed.notes)
                plain = Prediction.nothing_found()
                if observed.verdict != plain.verdict or observed.message != plain.message:
                    carried = observed
        if fallback is not None:  # neither certain nor observed: a Warning "raises at line k if reached"
            fallback.source.latency_ms = _ms(started)
            fallback.notes.extend(notes)
            return fallback
        if "llm" in wanted and self.llm is not None:
            snapshot = ask.snapshot if self.settings.runtime_info else None
            guessed = await self.llm.predict(
                Ask(ask.target, ask.executed, ask.facts, snapshot, explicit=ask.explicit)
            )
            prediction = guessed if guessed is not None else Prediction.nothing_found()
            prediction.notes.extend(notes)
            if prediction.crash and not prediction.origin and ask.facts is not None:
                prediction.origin = origins(_variables_on_line(ask.facts, prediction.line), ask.executed)
            return prediction
        result = Prediction.nothing_found()
        if carried is not None:  # its verdict kind and headline; its notes are in ``notes`` already
            result = carried.model_copy(update={"notes": [], "source": Source(layer="none")}, deep=True)
        result.source.latency_ms = _ms(started)
        result.notes.extend(notes)
        return result

    async def _explain(
        self,
        prediction: Prediction,
        executed: Sequence[str],
        target: str,
        snapshot: Snapshot,
        known: Sequence[KnownCrash],
    ) -> Prediction:
        """Ask the LLM to explain a certain or observed crash; the verdict and line stay the layer's."""
        assert self.llm is not None
        if not known:  # an observed crash: hand the LLM what was seen, so it explains, not guesses
            known = [KnownCrash.of_prediction(prediction)]
        try:
            explained = await self.llm.predict(Ask(target, executed, snapshot=snapshot, known=known))
        except Exception as exc:  # an explanation is a bonus: never lose the certain finding
            prediction.notes.append(f"explanation unavailable: {exc}")
            return prediction
        if explained is not None and explained.diagnosis:
            prediction.diagnosis = explained.diagnosis
        if explained is not None and explained.fix is not None:
            prediction.fix = explained.fix
        return prediction

    def last_exchange(self, target: str) -> tuple[str, str] | None:
        """The prompt and answers behind the latest LLM verdict for ``target`` (``crane.showPrompt``)."""
        getter = getattr(self.llm, "last_exchange", None)
        exchange = getter(target) if callable(getter) else None
        if exchange is None:
            return None
        prompt, answer = exchange
        return str(prompt), str(answer)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _variables_on_line(facts: CellFacts, line: int | None) -> list[str]:
    if line is None:
        return []
    return [use.name for use in facts.reads if use.span.line == line]
