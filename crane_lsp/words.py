"""Every word a door shows for a verdict, in one place: the hover, the terminal, the run guards.

The server sends the guard's question and the verdict's label with ``crane.cellVerdict``, so the
VS Code and JupyterLab extensions, the Emacs and Neovim guards never compose them; the
TypeScript extensions get these labels and the answer's type as generated files
(``python -m crane_lsp.words_export``; ``tests/test_words.py`` fails when one is stale). Change a word
here, regenerate, and every door says the new one.
"""

from __future__ import annotations

from typing import Final

#: How each certainty of a crash reads after "this cell" (a verdict box, a terminal panel)
LABEL: Final[dict[str, str]] = {
    "certain": "will crash",
    "observed": "crashed in a sandboxed dry run",
    "predicted": "is predicted to crash",
    "none": "no crash found",
}

#: The hover's headline: the certain label says what makes it certain
HOVER_LABEL: Final[dict[str, str]] = {
    **LABEL,
    "certain": "will crash (certain: the kernel state proves it)",
}

#: A candidate fix's dry run, after its title: "Use 'region' (runs clean in a dry run)"
FIX_STATUS: Final[dict[str | None, str]] = {
    "runs-clean": "runs clean in a dry run",
    "gets-further": "gets further in a dry run",
    None: "not verified",
}

#: The run guard: its dialog's title and the buttons every guard offers
GUARD_TITLE: Final = "crane: run a cell that will crash?"
RUN_ANYWAY: Final = "Run anyway"
SHOW: Final = "Show"
CANCEL: Final = "Cancel"

#: A verified fix where a door offers it beside the verdict: JupyterLab's Fix button and its dialog,
#: the run guards' third button. Applying a fix edits the cell; only "Run with the fix" also runs it
FIX: Final = "Fix"
FIX_TITLE: Final = "crane: apply this fix to the cell?"
FIX_NOTE: Final = "Applying the fix edits the cell, as an edit you can undo; it does not run it."
APPLY: Final = "Apply"
RUN_WITH_FIX: Final = "Run with the fix"

#: "Try in sandbox" (crane.previewCell): how each kind of change a cell would make starts, before the
#: name ("creates `model`", "rebinds `X_train` (800 → 640 rows)"; crane_lsp/preview.py phrases the rest)
PREVIEW_VERB: Final[dict[str, str]] = {
    "bound": "creates",
    "rebound": "rebinds",
    "deleted": "deletes",
    "mutated": "changes",
}


def label(certainty: str) -> str:
    """The short label of a verdict: "will crash", "crashed in a sandboxed dry run"..."""
    return LABEL.get(certainty, "may crash")


def guard_question(certainty: str, exception: str | None, line: int | None, message: str) -> str:
    """ "crane: this cell raises KeyError at line 2 (df has no column 'Region'). Run anyway?"

    ``line`` is 1-based as the user's editor counts it (a file's line in a ``# %%`` script)."""
    observed = certainty == "observed"
    where = f" at line {line}" if line is not None else ""
    dry_run = " in a sandboxed dry run" if observed else ""
    why = message.strip().removesuffix(".")
    why = f" ({why})" if why else ""
    how = "raised" if observed else "raises"
    return f"crane: this cell {how} {exception or 'an error'}{where}{dry_run}{why}. {RUN_ANYWAY}?"


def status_words(outcome: str | None) -> str:
    """The words every surface (Quick Fix title, hover, ``check --fix``) uses for a fix's outcome."""
    return FIX_STATUS.get(outcome, outcome or "not verified")
