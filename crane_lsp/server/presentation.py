"""What the user sees: a ``Prediction`` as a Diagnostic, as hover Markdown, and as code actions.

Pure functions of a prediction and the cells it is about, so the exact wording and ranges are tested
without a server. Certain and observed crashes are Errors (the kernel state proves them); LLM
predictions are Warnings (a model's expectation, not a fact).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from crane_lsp.server.documents import CellView, span_of, to_range
from crane_lsp.words import HOVER_LABEL

if TYPE_CHECKING:  # both are slow to import (pydantic): not before ``initialize`` is answered
    from crane_lsp.prediction import Fix, Prediction

SOURCE = "crane"
RECHECK = "crane.recheckCell"
ATTACH = "crane.attachKernel"
SHOW_PROMPT = "crane.showPrompt"
IGNORE = "crane.ignoreFinding"
STALE_PREFIX = "(stale) "  # a squiggle kept while its cell is re-checked for a newer text or state


def severity(prediction: Prediction) -> types.DiagnosticSeverity:
    if prediction.certainty in ("certain", "observed"):
        return types.DiagnosticSeverity.Error
    return types.DiagnosticSeverity.Warning


def one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def in_script(cell: CellView) -> bool:
    """The cell is one of many in a single document (a ``# %%`` script), not a notebook cell."""
    return cell.key.startswith(f"{cell.uri}#")


_LINE_WORD = re.compile(r"\b([Ll]ines? )(\d+)\b")


def in_editor(text: str, cell: CellView | None) -> str:
    """``text`` with its "line N" (1-based, counted in the cell) as the editor numbers lines.

    In a ``# %%`` script the editor shows the file's lines, so line 2 of a cell that starts on
    line 13 is "line 14"; a notebook cell shows its own lines, so nothing changes there."""
    if cell is None or not in_script(cell):
        return text
    return _LINE_WORD.sub(lambda m: f"{m[1]}{int(m[2]) + cell.first_line}", text)


def where(cell: CellView, line: int | None = None) -> str:
    """A place in the editor's words: "line 14" in a script, "cell 3, line 2" in a notebook."""
    if in_script(cell):  # one document for all cells: the file's lines
        return f"line {cell.first_line + (line or 0) + 1}"
    return f"cell {cell.index + 1}" + (f", line {line + 1}" if line is not None else "")


def message(prediction: Prediction, cell: CellView | None = None) -> str:
    text = prediction.message or prediction.diagnosis or "this cell is expected to crash"
    if prediction.exception and not text.startswith(prediction.exception):
        text = f"{prediction.exception}: {text}"
    return one_line(in_editor(text, cell))


def prediction_range(
    prediction: Prediction, cell: CellView, encoding: str = types.PositionEncodingKind.Utf16
) -> types.Range:
    span = span_of(cell, prediction.line, prediction.col, prediction.end_line, prediction.end_col)
    return to_range(cell, span, encoding)


def diagnostic(
    prediction: Prediction,
    cell: CellView,
    executed: Sequence[CellView | None],
    encoding: str = types.PositionEncodingKind.Utf16,
    *,
    stale: bool = False,
) -> types.Diagnostic | None:
    """The squiggle for a crashing prediction (None when it predicts no crash).

    ``stale``: the prediction was made for an earlier text of the cell or an earlier kernel state,
    and its re-check is on its way: the message starts with ``STALE_PREFIX`` (same severity, so the
    squiggle does not change colour while the user types) and ``data.stale`` is true.

    ``executed`` are the view cells (or None when unknown) of the executed sources the prediction was
    made from, in the same order, so an ``Origin.cell`` index resolves to a document location.
    """
    if not prediction.crash:
        return None
    related = []
    for origin in prediction.origin:
        if origin.cell is None or not 0 <= origin.cell < len(executed):
            continue
        src = executed[origin.cell]
        if src is None:
            continue
        span = span_of(src, origin.line, None, None, None)
        where = f"[{origin.execution_count}]" if origin.execution_count else f"cell {src.index + 1}"
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=src.uri, range=to_range(src, span, encoding)),
                message=f"{origin.variable} was last assigned here ({where})",
            )
        )
    return types.Diagnostic(
        range=prediction_range(prediction, cell, encoding),
        message=(STALE_PREFIX if stale else "") + message(prediction, cell),
        severity=severity(prediction),
        source=SOURCE,
        code=prediction.exception or "crash",
        related_information=related or None,
        data={"predictionId": prediction.id, "cell": cell.key, **({"stale": True} if stale else {})},
    )


def _cell_md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _executed_cell(executed: Sequence[CellView | None] | None, index: int | None) -> CellView | None:
    if not executed or index is None or not 0 <= index < len(executed):
        return None
    return executed[index]


def hover_markdown(
    prediction: Prediction, executed: Sequence[CellView | None] | None = None, cell: CellView | None = None
) -> str:
    """Verdict, diagnosis, evidence table, origin and where the verdict came from.

    With ``cell`` (the predicted cell) every line is named as the editor shows it (``where``)."""
    if not prediction.crash:  # a dry run with no verdict (timeout, stopped by the jail): say which
        return "\n\n".join([f"**crane: {prediction.message}**", *(f"*{n}*" for n in prediction.notes)])
    exc = f"`{prediction.exception}`" if prediction.exception else "a crash"
    verdict = HOVER_LABEL.get(prediction.certainty, "may crash")
    line = ""
    if prediction.line is not None:
        # a script names the file's line; a notebook cell its own lines (the cell is the one hovered)
        shown = cell.first_line + prediction.line if cell is not None and in_script(cell) else prediction.line
        line = f" on line {shown + 1}"
    parts = [f"**crane: this cell {verdict}** — {exc}{line}", ""]
    if prediction.message:
        parts += [in_editor(prediction.message, cell), ""]
    if prediction.diagnosis and prediction.diagnosis != prediction.message:
        parts += [in_editor(prediction.diagnosis, cell), ""]
    if prediction.evidence:
        parts += ["| runtime fact | value |", "| --- | --- |"]
        parts += [f"| `{_cell_md(e.fact)}` | {_cell_md(e.value)} |" for e in prediction.evidence]
        parts.append("")
    if prediction.origin:
        bits = []
        for o in prediction.origin:
            ran = _executed_cell(executed, o.cell)
            place = f"execution [{o.execution_count}]" if o.execution_count else ""
            if ran is not None:
                place = (place + " " if place else "") + where(ran, o.line)
            elif o.line is not None:
                place = (place or "an executed cell") + f", line {o.line + 1}"
            bits.append(f"`{o.variable}` ← {place or 'unknown cell'}")
        parts += ["**Origin:** " + "; ".join(bits), ""]
    verified = [f for f in prediction.fixes if f.verification is not None]
    if verified:  # crane_lsp.fixes: dry-run from the kernel's state before it is shown
        top = verified[0]
        v = top.verification
        assert v is not None
        status = top.status()
        head = "Verified fix" if v.outcome == "runs-clean" else "Fix (not verified to run clean)"
        parts += [f"**{head}:** {top.title or top.description} ({status})", ""]
        parts += [f"*{in_editor(n, cell)}*" for n in v.notes] + [""]
    elif prediction.fix is not None:
        parts += [f"**Suggested fix:** {prediction.fix.description}", ""]
    src = prediction.source
    detail = [src.label()]
    if src.votes:
        detail.append(f"votes {sum(src.votes)}/{len(src.votes)}")
    if src.latency_ms is not None:
        detail.append(f"{src.latency_ms:.0f} ms")
    if src.cached:
        detail.append("cached")
    parts.append("*Source:* " + ", ".join(detail))
    for note in prediction.notes:
        parts.append(f"\n*{in_editor(note, cell)}*")
    return "\n".join(parts).strip()


def fix_edit(
    prediction: Prediction, cell: CellView, encoding: str, fix: Fix | None = None
) -> types.WorkspaceEdit | None:
    """The suggested fix (or ``fix``) as an edit of whole lines of the cell (end exclusive)."""
    from crane_lsp.analysis.positions import Span

    fix = fix if fix is not None else prediction.fix
    if fix is None or fix.new_text is None:
        return None
    start = fix.start_line if fix.start_line is not None else (prediction.line or 0)
    end = fix.end_line if fix.end_line is not None else start + 1
    last = cell.line_count
    start, end = max(0, min(start, last - 1)), max(start + 1, min(end, last))
    if end < last:  # whole lines: from the start of ``start`` to the start of ``end``
        span = Span(start, 0, end, 0)
        new_text = fix.new_text if fix.new_text.endswith("\n") else fix.new_text + "\n"
    else:  # through the end of the cell, which has no newline after its last line
        span = Span(start, 0, last - 1, len(cell.line_text(last - 1)))
        new_text = fix.new_text.rstrip("\n")
    rng = to_range(cell, span, encoding)
    return types.WorkspaceEdit(changes={cell.uri: [types.TextEdit(range=rng, new_text=new_text)]})


def code_actions(
    prediction: Prediction | None, cell: CellView, diagnostic_: types.Diagnostic | None, encoding: str
) -> list[types.CodeAction]:
    """Re-check cell always; Apply suggested fix and Ignore this finding for a crash."""
    actions = [
        types.CodeAction(
            title="crane: Re-check cell",
            kind=types.CodeActionKind.Source,
            command=types.Command(title="Re-check cell", command=RECHECK, arguments=[cell.uri, cell.key]),
        )
    ]
    if prediction is None or not prediction.crash:
        return actions
    diags = [diagnostic_] if diagnostic_ is not None else None
    offered = [f for f in prediction.fixes if f.verification is not None][:3]
    for fix in reversed(offered):  # verified in the jail: "Use 'region' (runs clean in a dry run)"
        edit = fix_edit(prediction, cell, encoding, fix)
        assert fix.verification is not None
        status = fix.status()
        if edit is not None:
            title = one_line(fix.title or fix.description, 80)
            actions.insert(
                0,
                types.CodeAction(
                    title=f"{title} ({status})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=diags,
                    edit=edit,
                    is_preferred=fix.verified() or None,
                ),
            )
    edit = None if offered else fix_edit(prediction, cell, encoding)
    if edit is not None and prediction.fix is not None:
        actions.insert(
            0,
            types.CodeAction(
                title=f"crane: Apply suggested fix ({one_line(prediction.fix.description, 80)})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=diags,
                edit=edit,
                is_preferred=True,
            ),
        )
    actions.append(
        types.CodeAction(
            title="crane: Ignore this finding",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=diags,
            command=types.Command(
                title="Ignore this finding", command=IGNORE, arguments=[cell.uri, cell.key, prediction.id]
            ),
        )
    )
    return actions
