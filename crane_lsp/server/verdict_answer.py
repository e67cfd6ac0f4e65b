"""The ``crane.cellVerdict`` answer as one typed model: the server fills it, and the TypeScript
extensions read the interface generated from it (``python -m crane_lsp.words``), never a copy
typed by hand. Field names go out in camelCase, as the editors' code spells them.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from crane_lsp.prediction import Certainty, NoVerdictReason, VerdictKind


class _Answer(BaseModel):
    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel), extra="forbid")


class EvidenceRow(_Answer):
    """One runtime fact the verdict rests on."""

    fact: str
    value: str


class OriginRow(_Answer):
    """Where a variable involved was last assigned: the executed cell (by URI and index) and line."""

    variable: str
    execution_count: int | None = None
    line: int | None = Field(default=None, description="0-based line in that cell")
    uri: str | None = None
    index: int | None = None


class FixRow(_Answer):
    """A fix dry-run from the kernel's state: replace lines ``startLine`` to ``endLine`` (0-based,
    end exclusive, in the cell) with ``newText``. Applying it edits the cell; it never runs it."""

    title: str = Field(description="the change in a few words: \"Use 'region'\"")
    status: str = Field(description="what its dry run showed, in words: 'runs clean in a dry run'")
    verified: bool = Field(description="it ran clean (a gets-further fix is offered, marked as such)")
    start_line: int
    end_line: int
    new_text: str


class CellVerdictAnswer(_Answer):
    """A cell's verdict as data; ``found`` False for a cell the server does not know."""

    found: bool
    checked: bool = Field(default=False, description="a verdict exists for the cell")
    stale: bool = Field(default=False, description="the verdict is for another text than the cell's now")
    ignored: bool = Field(default=False, description="the user ignored this finding for this text")
    crash: bool = False
    certainty: Certainty | None = None
    verdict: VerdictKind | None = Field(default=None, description="crash, clean, nothing-found, no-verdict")
    no_verdict: NoVerdictReason | None = Field(default=None, description="why there is no verdict")
    label: str | None = Field(default=None, description="the verdict in words: 'will crash', or the headline")
    question: str | None = Field(
        default=None, description="the run guard's question, in the editor's line numbers"
    )
    exception: str | None = None
    line: int | None = Field(default=None, description="0-based line in the cell, as LSP counts")
    message: str | None = None
    diagnosis: str | None = None
    evidence: list[EvidenceRow] = Field(default_factory=list)
    origin: list[OriginRow] = Field(default_factory=list)
    fix: str | None = Field(default=None, description="the suggested fix, in words")
    fixes: list[FixRow] = Field(
        default_factory=list, description="fixes dry-run from the kernel's state, verified first"
    )
    source: str | None = Field(default=None, description="the layer that decided")
    prediction_id: str | None = Field(default=None, description="crane.ignoreFinding takes it")
    block_run: bool = Field(default=False, description="the run guard asks before running the cell")
    error: str | None = Field(default=None, description="the request could not be answered (bad arguments)")

    def wire(self) -> dict[str, Any]:
        """The JSON the editor receives (camelCase)."""
        return self.model_dump(mode="json", by_alias=True)
