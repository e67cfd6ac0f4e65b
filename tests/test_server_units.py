"""The server's pure parts: coordinate mapping, presentation, settings parsing, cell choice, debounce."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from crane_lsp.prediction import Evidence, Fix, Origin, Prediction, Source
from crane_lsp.server import presentation
from crane_lsp.server.config import parse_settings, section
from crane_lsp.server.documents import (
    CellView,
    from_lsp_notebook,
    from_percent,
    from_position,
    span_of,
    to_range,
    wants_percent,
)
from crane_lsp.server.scheduler import Debouncer, cells_to_check

SCRIPT = "import os\n\n# %%\nx = 1\n\n# %% [markdown]\n# notes\n# %%\ny = x + 1\nz = undefined_q\n"


def _crash(**kw: object) -> Prediction:
    base: dict[str, object] = dict(
        crash=True, certainty="certain", exception="NameError", message="name 'q' is not defined"
    )
    base.update(kw)
    return Prediction.model_validate(base)


def test_percent_cells_map_to_document_lines() -> None:
    view = from_percent("file:///w/s.py", SCRIPT)
    code = view.code_cells
    assert [c.text for c in code] == ["import os", "x = 1", "y = x + 1\nz = undefined_q"]
    last = code[-1]
    rng = to_range(last, span_of(last, 1, 4, 1, 15))
    assert (rng.start.line, rng.start.character, rng.end.character) == (9, 4, 15)
    assert SCRIPT.split("\n")[9][4:15] == "undefined_q"
    found = view.cell_at("file:///w/s.py", 9)
    assert found is not None and found[0] is last and found[1] == 1
    assert view.cell_at("file:///w/s.py", 2) is None  # a marker line belongs to no cell
    assert wants_percent("file:///w/s.py", "python", SCRIPT)
    assert not wants_percent("file:///w/plain.py", "python", "x = 1\n")


def test_utf16_columns_follow_the_editor() -> None:
    cell = CellView(key="k", uri="u", text="s = '😀😀'; boom()", index=0)
    col = cell.text.index("boom")
    rng = to_range(cell, span_of(cell, 0, col, 0, col + 4))
    assert rng.start.character == col + 2  # two astral characters take two UTF-16 units each
    assert (
        to_range(cell, span_of(cell, 0, col, 0, col + 4), types.PositionEncodingKind.Utf32).start.character
        == col
    )
    assert from_position(cell, rng.start) == (0, col)


def test_span_is_completed_and_clamped() -> None:
    cell = CellView(key="k", uri="u", text="\n    a = b\nc", index=0)
    assert span_of(cell, None, None, None, None) == span_of(cell, 1, 4, 1, 9)
    assert span_of(cell, 99, None, None, None).line == 2  # a wrong line never leaves the cell


def test_lsp_notebook_view_keeps_execution_summary() -> None:
    nb = types.NotebookDocument(
        uri="file:///w/n.ipynb",
        notebook_type="jupyter-notebook",
        version=1,
        cells=[
            types.NotebookCell(
                kind=types.NotebookCellKind.Code,
                document="c0",
                execution_summary=types.ExecutionSummary(3, True),
            ),
            types.NotebookCell(kind=types.NotebookCellKind.Markup, document="c1"),
            types.NotebookCell(kind=types.NotebookCellKind.Code, document="c2"),
        ],
    )
    view = from_lsp_notebook(nb, {"c0": "a = 1", "c1": "# hi", "c2": "a +"})
    assert [c.kind for c in view.cells] == ["code", "markdown", "code"]
    assert view.executed_in_order()[0].key == "c0" and view.cells[0].execution_order == 3


def test_diagnostic_fields() -> None:
    executed = [CellView(key="c0", uri="cell0", text="import pandas as pd\ndf = pd.DataFrame()", index=0)]
    cell = CellView(key="c1", uri="cell1", text="x = 1\ny = df['nope']", index=1)
    pred = _crash(
        exception="KeyError",
        line=1,
        col=4,
        end_line=1,
        end_col=14,
        message="column 'nope' does not exist in df",
        origin=[Origin(variable="df", cell=0, line=1, execution_count=4)],
        evidence=[Evidence(fact="df.columns", value="['a' | 'b']")],
        source=Source(layer="checks", check_id="pandas.column"),
    )
    diag = presentation.diagnostic(pred, cell, executed)
    assert diag is not None
    assert (diag.range.start.line, diag.range.start.character, diag.range.end.character) == (1, 4, 14)
    assert diag.source == "crane" and diag.code == "KeyError"
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.data == {"predictionId": pred.id, "cell": "c1"}
    assert diag.related_information and diag.related_information[0].location.uri == "cell0"
    assert diag.related_information[0].location.range.start.line == 1
    warn = presentation.diagnostic(pred.model_copy(update={"certainty": "predicted"}), cell, executed)
    assert warn is not None and warn.severity == types.DiagnosticSeverity.Warning
    assert presentation.diagnostic(Prediction.nothing_found(), cell, executed) is None
    md = presentation.hover_markdown(pred, executed)
    assert "`KeyError`" in md and "| `df.columns` | ['a' \\| 'b'] |" in md
    assert "`df` ← execution [4] cell 1, line 2" in md and "check:pandas.column" in md


def test_code_actions_fix_and_ignore() -> None:
    cell = CellView(key="c1", uri="cell1", text="a = 1\nb = df.append(x)\nc = 2", index=0, first_line=0)
    pred = _crash(
        line=1,
        fix=Fix(description="use pd.concat", start_line=1, end_line=2, new_text="b = pd.concat([df, x])"),
    )
    actions = presentation.code_actions(pred, cell, None, types.PositionEncodingKind.Utf16)
    titles = [a.title for a in actions]
    assert titles[0].startswith("crane: Apply suggested fix") and "crane: Re-check cell" in titles
    assert titles[-1] == "crane: Ignore this finding"
    edit = actions[0].edit
    assert edit is not None and edit.changes is not None
    (text_edit,) = edit.changes["cell1"]
    assert text_edit.new_text == "b = pd.concat([df, x])\n"
    assert (text_edit.range.start.line, text_edit.range.end.line, text_edit.range.end.character) == (1, 2, 0)
    to_end = pred.model_copy(
        update={"fix": Fix(description="d", start_line=2, end_line=3, new_text="c = 3\n")}
    )
    edit = presentation.code_actions(to_end, cell, None, types.PositionEncodingKind.Utf16)[0].edit
    assert edit is not None and edit.changes is not None
    (text_edit,) = edit.changes["cell1"]
    assert text_edit.new_text == "c = 3" and (text_edit.range.end.line, text_edit.range.end.character) == (
        2,
        5,
    )
    no_crash = presentation.code_actions(
        Prediction.nothing_found(), cell, None, types.PositionEncodingKind.Utf16
    )
    assert [a.title for a in no_crash] == ["crane: Re-check cell"]


def test_settings_parsing() -> None:
    settings, problem = parse_settings({"crane": {"debounce": 120, "maxColumns": 7, "provider": "gemini"}})
    assert problem is None and settings.debounce_ms == 120 and settings.max_columns == 7
    settings, problem = parse_settings({"debounce": -4, "votes": "many"})
    assert problem is not None and "debounce" in problem and "votes" in problem
    assert settings.debounce_ms == 500 and settings.votes == 1  # the defaults
    assert section(None) == {}


def test_cells_to_check_nearest_first() -> None:
    cells = [CellView(key=f"k{i}", uri=f"u{i}", text=f"x{i}", index=i) for i in range(6)]
    cells[4].text = "   "
    chosen = cells_to_check(cells, {"k0", "k1", "k3", "k4", "k5"}, anchor=2, limit=3)
    assert [c.key for c in chosen] == ["k3", "k1", "k0"]  # ties go to the later cell; blank cells skipped


async def test_debouncer_runs_once_for_the_last_request() -> None:
    runs: list[str] = []

    async def job(key: str) -> None:
        runs.append(key)

    d = Debouncer(job)
    for _ in range(20):
        d.schedule("a", 0.05)
        await asyncio.sleep(0.005)
    await d.drain()
    assert runs == ["a"]
    cancelled = d.schedule("b", 10)
    d.schedule("b", 0)
    await d.drain()
    assert cancelled.cancelled() and runs == ["a", "b"]
