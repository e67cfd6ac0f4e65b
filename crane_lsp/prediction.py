"""The one answer type the server, the CLI and the benchmark share."""

from __future__ import annotations

import uuid
from typing import Literal, TypedDict

from pydantic import BaseModel, Field, model_validator

from crane_lsp.words import status_words

#: The version of the JSON that ``check --json`` and ``bench --json`` print from these models
#: (``crane_lsp.output_json``): 1: every line and cell number 1-based, origins named by code-cell
#: position and execution count. Here, below both printers, so neither imports the other for it.
SCHEMA_VERSION = 1

#: certain: a built-in check proved it from the kernel state; observed: a sandboxed dry run saw it
#: happen; predicted: an LLM expects it; none: nothing found (never a promise that the cell is safe).
Certainty = Literal["certain", "observed", "predicted", "none"]

#: What kind of answer a Prediction is; every door (hover, terminal, JSON, run guard) decides from
#: this field, never from the message's words. crash: ``certainty`` says how it is known; clean: a
#: dry run ran the whole cell from the kernel's state; nothing-found: the layers that ran found
#: nothing (never a promise); no-verdict: a layer that would have decided could not (``no_verdict``).
VerdictKind = Literal["crash", "clean", "nothing-found", "no-verdict"]

#: Why a layer that would have decided gave no verdict (docs/json.md lists them for readers).
NoVerdictReason = Literal[
    "timeout",  # the dry run did not finish in its budget, and no shortened run decided
    "not-run",  # the full dry run was predicted to overrun and was not started
    "blocked",  # the jail stopped an operation the cell needs (a write, a socket, a process)
    "ends-kernel",  # the cell ends the kernel (exit, os._exit): the dry run saw it, the real run dies
    "needs-values",  # a shape-level dry run reached an operation that needs real values
    "shortened-doubt",  # a shortened run's crash may come from the shortening, or was not confirmed
    "unavailable",  # the dry run could not start (the kernel cannot fork, is busy or gone)
    "llm-failed",  # the LLM gave no answer that could be trusted (unreachable, garbled)
    "too-long",  # the cell and its context do not fit the LLM's context window
]


class Evidence(BaseModel):
    """One runtime fact a verdict rests on, e.g. ``model.n_features_in_`` = ``58``."""

    fact: str
    value: str


class Origin(BaseModel):
    """Where a variable involved was last assigned: one of the executed cells the prediction saw.

    Positions are 0-based here, as everywhere inside crane; ``crane_lsp.output_json`` turns them
    into the 1-based cell and line numbers that ``check --json`` prints."""

    variable: str
    cell: int | None = None  # index into the executed cells, in execution order (0-based); None: unknown
    execution_count: int | None = None
    line: int | None = None  # 0-based line in that cell


#: Where a candidate fix came from: a check's determined repair, a standard one-line repair read from
#: the crash and the facts at its line, or the LLM's answer.
FixLayer = Literal["check", "dryrun-facts", "llm"]
#: What dry-running the edited cell from the same kernel state showed (``crane_lsp.fixes.verify``):
#: runs-clean: it completed; gets-further: the original line passed and a later line raised;
#: same-crash: the same exception on the same line; no-verdict: anything else (the notes say why).
FixOutcome = Literal["runs-clean", "gets-further", "same-crash", "no-verdict"]


class Verification(BaseModel):
    """The dry run of a candidate fix: its outcome and, for gets-further, where and what it raised."""

    outcome: FixOutcome
    line: int | None = None  # 0-based line of the edited cell where it raised (gets-further, same-crash)
    exception: str | None = None
    notes: list[str] = Field(default_factory=list)  # what was checked (bound names, the failing call)


class Fix(BaseModel):
    """A suggested replacement for lines of the target cell (0-based, end exclusive).

    ``title`` names the change as an editor's Quick Fix does ("Use 'region'"); ``layer`` where the
    candidate came from; ``verification`` None while it has not been dry-run (crane_lsp.fixes)."""

    description: str
    start_line: int | None = None
    end_line: int | None = None
    new_text: str | None = None
    title: str = ""
    layer: FixLayer | None = None
    verification: Verification | None = None

    def verified(self) -> bool:
        """Dry-run from the kernel's state and ran clean: the only kind offered as verified."""
        return self.verification is not None and self.verification.outcome == "runs-clean"

    def status(self) -> str:
        """How its verification reads after a title: "runs clean in a dry run"."""
        return status_words(self.verification.outcome if self.verification else None)


class Source(BaseModel):
    """Which layer produced the verdict and what it cost."""

    layer: Literal["checks", "dryrun", "llm", "none"]
    check_id: str | None = None
    provider: str | None = None
    model: str | None = None
    votes: list[bool] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cached: bool = False

    def label(self) -> str:
        if self.layer == "checks":
            return f"check:{self.check_id}"
        if self.layer == "llm":
            return f"{self.provider}/{self.model}"
        return self.layer


class Prediction(BaseModel):
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    crash: bool
    certainty: Certainty
    exception: str | None = None  # class name, e.g. "KeyError"
    line: int | None = None  # 0-based line in the target cell
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    message: str = ""  # one sentence
    diagnosis: str = ""  # longer explanation
    evidence: list[Evidence] = Field(default_factory=list)
    origin: list[Origin] = Field(default_factory=list)
    fix: Fix | None = None
    #: the fixes offered after verification (crane_lsp.fixes): runs-clean first, then gets-further
    fixes: list[Fix] = Field(default_factory=list)
    source: Source = Field(default_factory=lambda: Source(layer="none"))
    notes: list[str] = Field(default_factory=list)  # e.g. "ran clean in a sandboxed copy in 0.4 s"
    #: set from ``crash`` when not given: "crash" exactly when ``crash`` is true
    verdict: VerdictKind = "nothing-found"
    no_verdict: NoVerdictReason | None = None  # exactly when ``verdict`` is "no-verdict"
    #: an observed crash: the exception's own message, as the library wrote it (the diagnosis quotes it)
    raw_message: str = ""
    #: an observed crash: the one-line cause the facts at the failing line make plain, else ""
    cause: str = ""
    #: the variables that cause names (``crane_lsp.dryrun.causes``): their origins come first
    operands: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _verdict_agrees(self) -> Prediction:
        """``crash`` and ``verdict`` never disagree, and a no-verdict always says why."""
        if self.crash:
            self.verdict = "crash"
        elif self.verdict == "crash":
            raise ValueError("a prediction without a crash cannot have the verdict 'crash'")
        if (self.verdict == "no-verdict") != (self.no_verdict is not None):
            raise ValueError("no_verdict is set exactly when the verdict is 'no-verdict'")
        return self

    @classmethod
    def nothing_found(cls, reason: str = "no certain crash found") -> Prediction:
        """The layers that ran found nothing: said plainly, never as "safe"."""
        return cls(crash=False, certainty="none", message=reason)

    @classmethod
    def ran_clean(cls, message: str) -> Prediction:
        """A dry run ran the whole cell from the kernel's state without an exception."""
        return cls(crash=False, certainty="none", verdict="clean", message=message)

    @classmethod
    def unanswered(cls, reason: NoVerdictReason, message: str) -> Prediction:
        """A layer that would have decided could not: ``message`` is the headline the user reads."""
        return cls(crash=False, certainty="none", verdict="no-verdict", no_verdict=reason, message=message)

    def says_why_not(self) -> bool:
        """No crash, and a headline the user must see (no verdict, and why), e.g. in a hover."""
        return self.verdict == "no-verdict"

    def raw_headline(self) -> str:
        """The exception and the first line of its own message ("KeyError: 'price'"): an observed
        crash's ``message`` when nothing more (a cause, how it was observed) was said about it."""
        return exception_line(self.exception, self.raw_message)

    def llm_unanswered(self) -> bool:
        """The LLM layer was asked and gave no usable answer (``check`` exits 2 for it)."""
        return self.no_verdict in ("llm-failed", "too-long")


def exception_line(exception: str | None, message: str | None) -> str:
    """``Exception: first line of its message``, or the exception alone when it said nothing."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return f"{exception}: {first}" if first else str(exception)


class LinePosition(TypedDict):
    line: int | None
    col: int | None
    end_line: int | None
    end_col: int | None


def line_position(source: str, line: int | None) -> LinePosition:
    """A Prediction's position for a crash observed on 1-based ``line`` of ``source``: the whole line,
    from its first non-blank character (what a traceback names: a line, not a column)."""
    index = line - 1 if line else None
    lines = source.splitlines()
    text = lines[index] if index is not None and 0 <= index < len(lines) else ""
    if index is None:
        return {"line": None, "col": None, "end_line": None, "end_col": None}
    return {"line": index, "col": len(text) - len(text.lstrip()), "end_line": index, "end_col": len(text)}
