"""Terminal rendering of predictions for ``crane-lsp check``: verdict, the line with a caret, why;
and ``CheckedCell``, the one result per cell that the table and ``--json`` (``output_json``) both print."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from crane_lsp.words import label

if TYPE_CHECKING:
    from crane_lsp.notebook import Notebook
    from crane_lsp.prediction import Prediction


@dataclass
class CheckedCell:
    position: int  # 1-based among code cells
    source: str
    prediction: Prediction
    actual: str | None = None  # exception class really raised (walk mode), "" when it ran clean
    actual_line: int | None = None


_STYLE = {"certain": "bold red", "observed": "bold red", "predicted": "bold yellow", "none": "green"}


def verdict_text(p: Prediction) -> Text:
    if not p.crash:
        return Text(p.message or "no certain crash found", style=_STYLE["none"])
    return Text(f"{label(p.certainty)}: {p.exception or 'an exception'}", style=_STYLE[p.certainty])


def cause_line(p: Prediction) -> str:
    """An observed crash's headline when it says more than the exception's own message (which the
    diagnosis quotes): a cause from the facts at the failing line (``crane_lsp.dryrun.failure_facts``),
    or how it was observed (a shortened run). Decided from the fields, never from the wording."""
    if p.source.layer != "dryrun" or not p.crash:
        return ""
    return p.message if p.cause or p.message != p.raw_headline() else ""


def caret_lines(source: str, p: Prediction) -> Text:
    """The offending line with its number and a caret under the flagged range."""
    lines = source.splitlines() or [""]
    if p.line is None or not 0 <= p.line < len(lines):
        return Text("")
    code = lines[p.line]
    start = p.col or 0
    end = p.end_col if p.end_col is not None and p.end_line in (None, p.line) else len(code)
    end = max(end, start + 1)
    gutter = f"{p.line + 1:>4} | "
    out = Text(gutter, style="dim")
    out.append(code)
    out.append(
        "\n" + " " * len(gutter) + " " * start + "^" * (end - start), style=_STYLE.get(p.certainty, "red")
    )
    return out


def prediction_panel(position: int, source: str, p: Prediction, actual: str | None = None) -> Panel:
    parts: list[Text | Table] = [verdict_text(p)]
    if p.crash:
        parts.append(caret_lines(source, p))
        if cause_line(p):  # an observed crash's cause, from the facts at its line; the raw message below
            parts.append(Text(cause_line(p), style="bold"))
        if p.diagnosis:
            parts.append(Text(p.diagnosis))
    if p.evidence:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("runtime fact")
        table.add_column("value")
        for e in p.evidence:
            table.add_row(e.fact, e.value)
        parts.append(table)
    if p.origin:
        where = ", ".join(
            f"{o.variable} from executed cell {o.cell + 1}"
            + (f" line {o.line + 1}" if o.line is not None else "")
            for o in p.origin
            if o.cell is not None
        )
        if where:
            parts.append(Text(f"origin: {where}", style="dim"))
    if p.fix is not None:
        parts.append(Text(f"fix: {p.fix.description}", style="cyan"))
    for note in p.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    footer = f"source: {p.source.label()}"
    if actual is not None:
        footer += f" | actually: {actual or 'ran clean'}"
    parts.append(Text(footer, style="dim"))
    return Panel(Group(*parts), title=f"cell {position}", title_align="left")


def print_checked(
    console: Console, notebook: Notebook, checked: Sequence[CheckedCell], *, walk: bool
) -> None:
    for c in checked:
        if walk and not c.prediction.crash and not c.actual and not c.prediction.llm_unanswered():
            continue  # walking: show only the cells where something happened, was predicted or failed
        console.print(prediction_panel(c.position, c.source, c.prediction, c.actual if walk else None))
    if walk:
        predicted = sum(c.prediction.crash for c in checked)
        crashed = sum(bool(c.actual) for c in checked)
        both = sum(c.prediction.crash and bool(c.actual) for c in checked)
        console.print(
            f"{len(checked)} cells: {predicted} predicted to crash, {crashed} crashed, {both} both",
            style="bold",
        )
