"""matplotlib calls given sequences of lengths that cannot go together (``plot.lengths``).

What matplotlib 3.x really raises (``ValueError`` each):

- ``bar(x, height)`` / ``barh(y, width)``: numpy broadcasting of the two, so lengths n and m with n != m and
  neither 1 (``shape mismatch: objects cannot be broadcast to a single shape``);
- ``plot(x, y)`` / ``plot(x, y, 'r-')``: first dimensions differ (``x and y must have same first dimension``);
- ``scatter(x, y, ...)``: sizes differ (``x and y must be the same size``, checked before ``s`` and ``c``);
- ``pie(x, labels=...)``: another number of labels than wedges (``'labels' must be of length 'x'``);
- ``plt.xticks(ticks, labels)`` / ``ax.set_xticks(ticks, labels=...)`` (and ``y``): a non-empty list of
  labels of another length than the ticks (``The number of FixedLocator locations (3) ... does not match``).

Not errors, so never reported: ``legend`` with more labels than artists (the extra labels are dropped),
``set_xticklabels`` after ``bar`` (matplotlib's auto locator), colour lists of another length in ``bar``,
``xticks(ticks, [])`` (no labels). A ``set_xticklabels`` after a ``set_xticks`` in another call is not judged
(what else changed the locator in between is not followed).
The call must be ``plt.<f>`` on ``matplotlib.pyplot`` or ``<Axes>.<f>`` on a kernel ``Axes``, without
``data=`` (names would be looked up in it); the lengths come from literal lists of scalars, 1-D arrays,
Series and lists whose length the walk knows.
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val, has_star, literal
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

CHECK = "plot.lengths"
_FUNCS = ("bar", "barh", "plot", "scatter", "pie", "xticks", "yticks", "set_xticks", "set_yticks")
_TICKS = ("xticks", "yticks", "set_xticks", "set_yticks")


def _matplotlib_call(w: CellWalk, call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    mod = w.module_of(func.value)
    if mod is not None:
        return mod == "matplotlib.pyplot"
    owner = w.ev(func.value)
    return (
        owner is not None and owner.summary is not None and owner.summary.type.startswith("matplotlib.axes.")
    )


def _length(w: CellWalk, node: ast.expr, one_d: bool) -> tuple[int, str] | None:
    """(length along the first axis, its evidence) of a sequence the walk knows; ``one_d``: only 1-D ones."""
    ok, value = literal(node)
    if ok:
        if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str)) for v in value):
            return len(value), f"{len(value)} items"
        return None
    v: Val | None = w.ev(node)
    if v is None:
        return None
    if v.kind in (Kind.NDARRAY, Kind.SERIES) and v.shape and v.shape[0] is not None:
        if one_d and len(v.shape) != 1:
            return None
        return v.shape[0], f"shape {tuple(v.shape)}"
    if (
        v.kind == Kind.LIST_LITERAL
        and v.length is not None
        and isinstance(v.value, tuple)
        and all(isinstance(x, (int, float, str)) for x in v.value)
    ):
        return v.length, f"{v.length} items"
    return None


def _problem(w: CellWalk, call: ast.Call, name: str) -> tuple[ast.AST, str, list[tuple[str, str]]] | None:
    args = call.args
    if name in _TICKS:
        labels = (
            args[1] if len(args) >= 2 else next((k.value for k in call.keywords if k.arg == "labels"), None)
        )
        if not args or labels is None:
            return None
        a, b = _length(w, args[0], True), _length(w, labels, True)
        if a is None or b is None or b[0] in (0, a[0]):
            return None  # no labels at all is allowed
        return labels, f"{name}: {b[0]} labels for {a[0]} ticks", [("ticks", a[1]), ("labels", b[1])]
    if name == "pie":
        labels = next((k.value for k in call.keywords if k.arg == "labels"), None)
        if len(args) != 1 or labels is None:
            return None
        a, b = _length(w, args[0], True), _length(w, labels, True)
        if a is None or b is None or a[0] == b[0]:
            return None
        return labels, f"pie: {b[0]} labels for {a[0]} wedges", [("x", a[1]), ("labels", b[1])]
    fmt = len(args) == 3 and isinstance(args[2], ast.Constant) and isinstance(args[2].value, str)
    if not (len(args) == 2 or (name == "plot" and fmt) or (name == "scatter" and len(args) > 2)):
        return None  # ``plot(y)``, ``plot(x1, y1, x2, y2)``: other forms; scatter checks x, y before s, c
    one_d = name != "plot"
    a, b = _length(w, args[0], one_d), _length(w, args[1], one_d)
    if a is None or b is None or a[0] == b[0]:
        return None
    if name in ("bar", "barh") and 1 in (a[0], b[0]):
        return None  # a single value broadcasts
    what = {
        "bar": "x and height cannot be broadcast together",
        "barh": "y and width cannot be broadcast together",
        "plot": "x and y must have the same first dimension",
        "scatter": "x and y must be the same size",
    }[name]
    return args[1], f"{name}: {what} ({a[0]} vs {b[0]})", [(w.text(args[0]), a[1]), (w.text(args[1]), b[1])]


@step(CHECK, on=(ast.Call,), words=_FUNCS)
def _lengths(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``plt.bar(labels, heights)`` and kin with sequences whose lengths do not match."""
    for node, method in w.method_calls(stmt, *_FUNCS):
        if has_star(node) or any(k.arg == "data" for k in node.keywords) or not _matplotlib_call(w, node):
            continue
        if method.attr in ("xticks", "yticks") and w.module_of(method.value) != "matplotlib.pyplot":
            continue  # ``ax.xticks`` does not exist
        if method.attr in ("bar", "barh") and any(
            k.arg in ("width", "height", "bottom", "left", "x", "y") for k in node.keywords
        ):
            continue  # more sequences broadcast together: not judged
        got = _problem(w, node, method.attr)
        if got is None:
            continue
        where, message, evidence = got
        return finding_at(w, CHECK, "ValueError", where, message, evidence, [])
    return []
