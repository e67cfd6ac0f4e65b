"""How verified fixes read in an editor (pure functions of a prediction; the LSP round trip is in
test_fixes_server.py): one Quick Fix per offered fix, titled with its status, preferred only when it
ran clean; the hover names the verified fix and what was checked; the JSON counts lines from 1."""

from __future__ import annotations

from lsprotocol import types

from crane_lsp.output_json import cell_json
from crane_lsp.prediction import Fix, Prediction, Verification
from crane_lsp.server import presentation
from crane_lsp.server.documents import CellView

CELL = CellView(key="c1", uri="cell1", text="a = 1\nb = df['Region']\nc = b.sum()", index=0, first_line=0)


def _prediction() -> Prediction:
    clean = Fix(
        description="did you mean 'region'?",
        start_line=1,
        end_line=2,
        new_text="b = df['region']",
        title="Use 'region'",
        layer="check",
        verification=Verification(outcome="runs-clean", notes=["ran clean", "checked: binds a, b, c"]),
    )
    further = Fix(
        description="d",
        start_line=1,
        end_line=2,
        new_text="b = df['units']",
        title="Use 'units'",
        layer="dryrun-facts",
        verification=Verification(
            outcome="gets-further", line=2, exception="TypeError", notes=["line 2 now passes; line 3 raises"]
        ),
    )
    return Prediction(
        crash=True, certainty="certain", exception="KeyError", line=1, fix=clean, fixes=[clean, further]
    )


def test_quick_fixes_carry_their_status_and_only_a_verified_one_is_preferred() -> None:
    actions = presentation.code_actions(_prediction(), CELL, None, types.PositionEncodingKind.Utf16)
    titles = [a.title for a in actions]
    assert titles[:2] == ["Use 'region' (runs clean in a dry run)", "Use 'units' (gets further in a dry run)"]
    assert actions[0].is_preferred is True and not actions[1].is_preferred
    assert not any(t.startswith("crane: Apply suggested fix") for t in titles)
    edit = actions[0].edit
    assert edit is not None and edit.changes is not None
    (text_edit,) = edit.changes["cell1"]
    assert text_edit.new_text == "b = df['region']\n" and text_edit.range.start.line == 1


def test_hover_names_the_verified_fix_and_what_was_checked() -> None:
    md = presentation.hover_markdown(_prediction(), None, CELL)
    assert "**Verified fix:** Use 'region' (runs clean in a dry run)" in md
    assert "*checked: binds a, b, c*" in md


def test_json_fixes_count_lines_from_one() -> None:
    out = cell_json(0, _prediction(), execution_counts=[None], executed_cells=[])
    first, second = out.fixes
    assert (first.start_line, first.end_line, first.layer) == (2, 2, "check")
    assert first.verification is not None and first.verification.outcome == "runs-clean"
    assert second.verification is not None and second.verification.line == 3  # 1-based
