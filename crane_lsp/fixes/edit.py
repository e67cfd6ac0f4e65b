"""Text edits of a cell: apply a ``Fix``, measure how much of the cell it changes, show it as a diff.

A fix replaces whole lines (0-based, end exclusive, as ``crane_lsp.prediction.Fix`` says); everything
here works on the cell's text only, so the same edit is what the dry run verifies, what ``check --fix``
prints and what an editor applies.
"""

from __future__ import annotations

import difflib

from crane_lsp.prediction import Fix


def apply(target: str, fix: Fix) -> str | None:
    """The cell's text with ``fix`` applied, or None when the fix names no lines of this cell."""
    if fix.new_text is None or fix.start_line is None:
        return None
    lines = target.split("\n")
    start = fix.start_line
    end = fix.end_line if fix.end_line is not None else start + 1
    if not 0 <= start < end <= len(lines):
        return None
    lines[start:end] = fix.new_text.rstrip("\n").split("\n")
    return "\n".join(lines)


def line_shift(fix: Fix) -> int:
    """How many lines the fix adds (negative: removes); lines after it move by this much."""
    if fix.new_text is None or fix.start_line is None:
        return 0
    end = fix.end_line if fix.end_line is not None else fix.start_line + 1
    return len(fix.new_text.rstrip("\n").split("\n")) - (end - fix.start_line)


def changed_chars(target: str, fix: Fix) -> int:
    """How much of the cell the fix changes: the characters between the common prefix and suffix of
    the old and new text (the ranking's measure: the smallest repair first)."""
    edited = apply(target, fix)
    if edited is None:
        return 1 << 30
    prefix = 0
    limit = min(len(target), len(edited))
    while prefix < limit and target[prefix] == edited[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and target[-1 - suffix] == edited[-1 - suffix]:
        suffix += 1
    return max(len(target) - prefix - suffix, len(edited) - prefix - suffix)


def unified_diff(target: str, fix: Fix, name: str = "cell") -> str:
    """The fix as a unified diff of the cell (what ``check --fix`` prints)."""
    edited = apply(target, fix)
    if edited is None:
        return ""
    return "".join(
        difflib.unified_diff(
            (target + "\n").splitlines(keepends=True),
            (edited + "\n").splitlines(keepends=True),
            fromfile=f"{name} (now)",
            tofile=f"{name} (with the fix)",
        )
    )
