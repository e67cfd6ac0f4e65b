"""Fix families that follow where a value came from in the cell, not only the failing line.

- keys from another frame: a loop takes its keys from one frame's columns and looks them up in a
  frame the cell built from another one (``for f in data_df.columns: t0[f]`` with
  ``t0 = df.loc[...]``): build it from the frame the keys come from;
- one label per tick: a literal list of labels, given where the object was built, has another length
  than the ticks it labels: let the library label them (``display_labels=None``);
- removed only where present: the cell already drops a label only where it is still there
  (``errors="ignore"``), and a list's ``.remove`` of the same label then fails: remove it the same way.

Each is a candidate like the others: ``crane_lsp.fixes.verify`` dry-runs it and keeps what runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from crane_lsp.fixes.lines import CellLine, line_fix, verdict_text
from crane_lsp.prediction import Fix, FixLayer, Prediction


def root_name(node: ast.AST) -> str | None:
    """The name an expression is read from: ``df`` for ``df.loc[df['a'] == 0].copy()``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _single_line_assignments(cell: ast.Module) -> dict[str, ast.Assign]:
    """Name -> its last one-line ``name = value`` in the cell (at any depth)."""
    found: dict[str, ast.Assign] = {}
    for node in ast.walk(cell):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.lineno == node.end_lineno
        ):
            found[node.targets[0].id] = node
    return found


def _loop_over(cell: ast.Module, variable: str, line: int) -> ast.For | None:
    """The ``for variable in ...`` loop of the cell whose body holds 1-based ``line``."""
    for node in ast.walk(cell):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and node.target.id == variable
            and node.body[0].lineno <= line <= (node.end_lineno or 0)
        ):
            return node
    return None


def keys_from_another_frame(p: Prediction, line: CellLine, layer: FixLayer) -> Iterator[Fix]:
    """A missing key that a loop took from one frame (``for f in data_df.columns``) and looked up
    in a frame this cell built from another (``t0 = df.loc[...]``): every such frame of the cell
    built from the one the keys come from, in one edit."""
    if p.exception != "KeyError" or line.cell is None:
        return
    assigned = _single_line_assignments(line.cell)
    for node in line.nodes:
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            continue
        if not isinstance(node.slice, ast.Name):
            continue
        loop = _loop_over(line.cell, node.slice.id, line.number + 1)
        if loop is None:
            continue
        keys = loop.iter
        if isinstance(keys, ast.Name) and keys.id in assigned:
            keys = assigned[keys.id].value
        source = root_name(keys)
        looked_up = assigned.get(node.value.id)
        built_from = root_name(looked_up.value) if looked_up is not None else None
        if source is None or built_from is None or source == built_from:
            continue
        fix = _rebuild_from(line, loop, node.slice.id, built_from, source, assigned, layer)
        if fix is not None:
            yield fix
            return


def _rebuild_from(
    line: CellLine,
    loop: ast.For,
    key: str,
    old: str,
    new: str,
    assigned: dict[str, ast.Assign],
    layer: FixLayer,
) -> Fix | None:
    """One edit: each frame the loop looks ``key`` up in that the cell built from ``old``, built
    from ``new`` instead (every read of ``old`` on its line)."""
    frames = {
        n.value.id
        for n in ast.walk(loop)
        if isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and isinstance(n.slice, ast.Name)
        and n.slice.id == key
    }
    edits: dict[int, str] = {}
    for frame in sorted(frames):
        assignment = assigned.get(frame)
        if assignment is None or root_name(assignment.value) != old:
            continue
        number = assignment.lineno - 1
        reads = [n for n in ast.walk(assignment.value) if isinstance(n, ast.Name) and n.id == old]
        at = CellLine(number, line.lines[number], tuple(reads), line.cell, line.lines)
        edits[number] = at.replace_each(list(reads), new)
    if not edits:
        return None
    start, end = min(edits), max(edits) + 1
    built = ", ".join(sorted(f for f in frames if f in assigned and root_name(assigned[f].value) == old))
    title = f"Take {built} from {new} (the frame the keys come from)"
    new_text = "\n".join(edits.get(i, line.lines[i]) for i in range(start, end))
    return Fix(description=title, start_line=start, end_line=end, new_text=new_text, title=title, layer=layer)


_TICKS = (
    re.compile(r"(?P<labels>\d+) labels? (?:are|is) given for (?P<ticks>\d+) tick"),
    re.compile(r"FixedLocator locations \((?P<ticks>\d+)\).*?number of labels \((?P<labels>\d+)\)", re.S),
)


def labels_per_tick(p: Prediction, line: CellLine, layer: FixLayer) -> Iterator[Fix]:
    """A literal list of labels, passed by a ``*label*`` keyword where the object was built (this
    cell, up to the failing line), whose length is the count the error gives for the labels and not
    the ticks': the library's own labels instead (``=None``), one per tick."""
    text = verdict_text(p)
    match = next((m for m in (r.search(text) for r in _TICKS) if m), None)
    if match is None or line.cell is None:
        return
    count = int(match["labels"])
    for node in ast.walk(line.cell):
        if not (isinstance(node, ast.keyword) and node.arg and "label" in node.arg.lower()):
            continue
        value = node.value
        if not (isinstance(value, ast.List | ast.Tuple) and len(value.elts) == count):
            continue
        if value.lineno != value.end_lineno or value.lineno > line.number + 1:
            continue
        number = value.lineno - 1
        at = CellLine(number, line.lines[number], (value,), line.cell, line.lines)
        title = f"Let the library label the ticks ({node.arg}=None)"
        yield line_fix(at, at.replace(value, "None"), title, layer, "one label per tick: the library's own")


def removed_where_present(p: Prediction, line: CellLine, layer: FixLayer) -> Iterator[Fix]:
    """``items.remove('x')`` of a label the cell already drops only where it is still there
    (``.drop(..., errors="ignore")`` of the same label): remove it only where present too."""
    if p.exception != "ValueError" or "not in list" not in verdict_text(p):
        return
    tolerant = _labels_dropped_where_present(line)
    for node in line.nodes:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "remove" and len(call.args) == 1):
            continue
        item = call.args[0]
        if not (isinstance(item, ast.Constant) and item.value in tolerant):
            continue
        indent = line.text[: len(line.text) - len(line.text.lstrip())]
        owner, shown = line.source(call.func.value), line.source(item)
        new = f"{indent}if {shown} in {owner}: {line.source(call)}"
        yield line_fix(line, new, f"Remove {shown} only where present, as the drop", layer)


def _labels_dropped_where_present(line: CellLine) -> set[object]:
    """Labels the cell drops with ``errors="ignore"`` (constants, alone or in a list)."""
    found: set[object] = set()
    if line.cell is None:
        return found
    for node in ast.walk(line.cell):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "drop"):
            continue
        ignore = any(
            k.arg == "errors" and isinstance(k.value, ast.Constant) and k.value.value == "ignore"
            for k in node.keywords
        )
        if not ignore:
            continue
        named = [k.value for k in node.keywords if k.arg in ("columns", "labels", "index")]
        for value in [*node.args, *named]:
            items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            found |= {i.value for i in items if isinstance(i, ast.Constant)}
    return found
