"""The JSON that ``crane-lsp check --json`` and ``crane-lsp bench --json`` print: one versioned schema.

Inside crane, positions are 0-based (as LSP counts them). What a person or a CI job reads is not:
every line and cell number here is **1-based, as notebooks and editors show them**, and a range
names its first and its last line (both included). A cell is named by its position among the
notebook's code cells (``cell``) and by the execution count the notebook records for it
(``execution_count``, ``[5]`` in Jupyter; null for a cell that never ran). ``schema_version``
changes only when a field changes meaning or disappears; new fields may appear at any version, so
readers must ignore what they do not know (the JSON Schema allows extra properties).

``python -m crane_lsp.output_json DIR`` writes the JSON Schema files (``docs/schema/`` holds them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from crane_lsp.prediction import (
    SCHEMA_VERSION,
    Certainty,
    Evidence,
    Fix,
    FixLayer,
    FixOutcome,
    NoVerdictReason,
    Prediction,
    VerdictKind,
)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class OriginJson(_Open):
    """Where a variable the verdict involves was last assigned."""

    variable: str
    cell: int | None = Field(None, description="1-based position of that cell among the code cells")
    execution_count: int | None = Field(None, description="the execution count the notebook records for it")
    line: int | None = Field(None, description="1-based line in that cell")


class VerificationJson(_Open):
    """What dry-running the cell with the fix applied showed (docs/fixes.md)."""

    outcome: FixOutcome = Field(description="runs-clean, gets-further, same-crash or no-verdict")
    line: int | None = Field(None, description="1-based line of the edited cell where it raised")
    exception: str | None = None
    notes: list[str] = Field(default_factory=list, description="what was checked, why no verdict")


class FixJson(_Open):
    """A suggested replacement of lines ``start_line`` to ``end_line`` (1-based, both included)."""

    description: str
    start_line: int | None = None
    end_line: int | None = None
    new_text: str | None = None
    title: str = Field("", description="the change in a few words, e.g. \"Use 'region'\"")
    layer: FixLayer | None = Field(
        None, description="where the candidate came from: check, dryrun-facts, llm"
    )
    verification: VerificationJson | None = Field(None, description="null: not dry-run (check without --fix)")


class CellJson(_Open):
    """One checked code cell: the prediction, and in walk mode what really happened when it ran."""

    schema_version: int = SCHEMA_VERSION
    cell: int = Field(description="1-based position among the notebook's code cells")
    execution_count: int | None = Field(None, description="the execution count the notebook records")
    id: str = Field(description="the prediction's id (crane.ignoreFinding takes it)")
    crash: bool
    certainty: Certainty
    verdict: VerdictKind = Field(
        description="crash; clean (a dry run ran the whole cell); nothing-found (no promise); no-verdict"
    )
    no_verdict: NoVerdictReason | None = Field(
        None, description="why there is no verdict (verdict no-verdict only); docs/json.md lists them"
    )
    exception: str | None = None
    raw_message: str = Field("", description="an observed crash: the exception's own message")
    cause: str = Field("", description="an observed crash: its cause from the facts at the line, or empty")
    operands: list[str] = Field(default_factory=list, description="the variables that cause names")
    line: int | None = Field(None, description="1-based line of the target cell where it raises")
    end_line: int | None = Field(None, description="1-based last line of the flagged range")
    message: str = ""
    diagnosis: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    origin: list[OriginJson] = Field(default_factory=list)
    fix: FixJson | None = None
    fixes: list[FixJson] = Field(
        default_factory=list, description="verified fixes (check --fix): runs-clean first, then gets-further"
    )
    source: str = Field(description="the layer that decided: check:<id>, dryrun, <provider>/<model>, none")
    notes: list[str] = Field(default_factory=list)
    ran: bool = Field(False, description="walk mode: the cell was run after it was predicted")
    actual: str | None = Field(None, description="walk mode: the exception it really raised; null: ran clean")
    actual_line: int | None = Field(None, description="walk mode: 1-based line where it really raised")


#: Prediction fields this module maps itself; any other (a newer field) passes through as it is
_MAPPED = {"line", "col", "end_line", "end_col", "origin", "fix", "fixes", "source"}


def _plus_one(n: int | None) -> int | None:
    return None if n is None else n + 1


def cell_json(
    position: int,
    prediction: Prediction,
    *,
    execution_counts: Sequence[int | None],
    executed_cells: Sequence[int],
    actual: str | None = None,
    actual_line: int | None = None,
) -> CellJson:
    """``position``: the cell's 0-based index among the code cells; ``execution_counts``: each code
    cell's recorded count; ``executed_cells``: the code-cell index of each executed cell, in the
    order the prediction saw them (a prediction's ``Origin.cell`` indexes this list); ``actual``:
    None when the cell did not run, "" when it ran clean, else the exception's name."""
    p = prediction
    origins = []
    for o in p.origin:
        index = executed_cells[o.cell] if o.cell is not None and 0 <= o.cell < len(executed_cells) else None
        count = o.execution_count
        if count is None and index is not None and index < len(execution_counts):
            count = execution_counts[index]
        origins.append(
            OriginJson(
                variable=o.variable, cell=_plus_one(index), execution_count=count, line=_plus_one(o.line)
            )
        )
    fix = fix_json(p.fix) if p.fix is not None else None
    extra = {k: v for k, v in p.model_dump(mode="json").items() if k not in _MAPPED}
    return CellJson(
        **extra,
        cell=position + 1,
        execution_count=execution_counts[position] if position < len(execution_counts) else None,
        line=_plus_one(p.line),
        end_line=_plus_one(p.end_line if p.end_line is not None else p.line),
        origin=origins,
        fix=fix,
        fixes=[fix_json(f) for f in p.fixes],
        source=p.source.label(),
        ran=actual is not None,
        actual=actual or None,
        actual_line=_plus_one(actual_line) if actual else None,
    )


def fix_json(fix: Fix) -> FixJson:
    """A fix in 1-based lines, its range inclusive (inside crane: 0-based, end exclusive)."""
    start, end = fix.start_line, fix.end_line
    v = fix.verification
    return FixJson(
        description=fix.description,
        start_line=_plus_one(start),
        end_line=None if end is None else max(end, (start or 0) + 1),  # 0-based exclusive = 1-based
        new_text=fix.new_text,
        title=fix.title,
        layer=fix.layer,
        verification=None
        if v is None
        else VerificationJson(
            outcome=v.outcome, line=_plus_one(v.line), exception=v.exception, notes=v.notes
        ),
    )


def dump_cells(cells: Sequence[CellJson]) -> str:
    """What ``check --json`` prints: a JSON array, one object per checked cell."""
    return json.dumps([c.model_dump(mode="json") for c in cells], indent=2)


def _titled(schema: dict[str, Any], title: str, description: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def json_schemas() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema, generated from the models that produce the output."""
    from crane_lsp.bench.report import BenchReport

    check = TypeAdapter(list[CellJson]).json_schema()
    bench = BenchReport.model_json_schema()
    return {
        "check.schema.json": _titled(
            check,
            f"crane-lsp check --json (schema_version {SCHEMA_VERSION})",
            "An array with one object per checked code cell; lines and cells are 1-based.",
        ),
        "bench.schema.json": _titled(
            bench,
            f"crane-lsp bench --json (schema_version {SCHEMA_VERSION})",
            "One benchmark run: scores per setting, the paper's rows, every instance's answer; "
            "lines are 1-based.",
        ),
    }


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m crane_lsp.output_json DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name, schema in json_schemas().items():
        (folder / name).write_text(schema_text(schema), encoding="utf-8")
        print(folder / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
