"""One source of words (issue 35): the labels and the run guard's question live in
``crane_lsp/words.py``; the server sends them with ``crane.cellVerdict``; the TypeScript extensions
get them and the answer's type as generated files, which must be what the generator makes now.
"""

from __future__ import annotations

from pathlib import Path

from crane_lsp import words
from crane_lsp.words_export import TARGETS, typescript

REPO = Path(__file__).resolve().parents[1]
DOORS = [REPO / "crane_lsp", REPO / "vscode-client/src", REPO / "jupyterlab/src", REPO / "editors"]
SUFFIXES = {".py", ".ts", ".el", ".lua"}


def test_the_generated_typescript_is_current() -> None:
    text = typescript()
    for target in TARGETS:
        assert target.read_text(encoding="utf-8") == text, f"run: python -m crane_lsp.words_export ({target})"
    assert "export interface CellVerdictAnswer" in text and "question?: string | null;" in text


def test_the_guard_question_in_each_certainty() -> None:
    assert words.guard_question("certain", "KeyError", 2, "df has no column 'Region'.") == (
        "crane: this cell raises KeyError at line 2 (df has no column 'Region'). Run anyway?"
    )
    assert words.guard_question("observed", "ZeroDivisionError", 1, "division by zero") == (
        "crane: this cell raised ZeroDivisionError at line 1 in a sandboxed dry run"
        " (division by zero). Run anyway?"
    )
    assert words.guard_question("certain", None, None, "") == "crane: this cell raises an error. Run anyway?"


def test_no_door_keeps_its_own_copy_of_a_label() -> None:
    """A label written anywhere but words.py (and the files generated from it) is a second source."""
    distinctive = [words.LABEL["observed"], words.LABEL["predicted"], words.HOVER_LABEL["certain"]]
    copies = []
    for door in DOORS:
        for path in door.rglob("*"):
            if path.suffix not in SUFFIXES or "generated" in path.parts or "labextension" in path.parts:
                continue
            if path == REPO / "crane_lsp/words.py":
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            copies += [f"{path.relative_to(REPO)}: {label!r}" for label in distinctive if label in text]
    assert not copies, copies
