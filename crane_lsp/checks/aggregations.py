"""An aggregation named by a string pandas cannot resolve: ``df.agg('meen')`` -> AttributeError.

pandas (``core/apply.py``, ``Apply._apply_str``) resolves ``obj.agg('name')`` as ``getattr(obj, name)`` (class
attributes, then ``NDFrame.__getattr__``: a DataFrame's column / a Series' index label), else
``getattr(numpy, name)`` (an object with ``__array__``), else raises ``AttributeError: 'name' is not a valid
function for 'DataFrame' object``. The probe answers the first two without running anything (chain
``df.name``: a static class lookup plus ``_info_axis._can_hold_identifiers_and_holds_name``, only for pandas'
own classes) and the third from the loaded numpy module (chain ``@numpy.name``). Only a kernel DataFrame or
Series of pandas' own class, called with the name alone (no ``axis``: ``axis=1`` aggregates the transpose);
a list of names only on a Series (on a DataFrame each name goes to a column Series, looked up there).
"""

from __future__ import annotations

from crane_lsp.analysis.facts import NUMPY_CHAIN, Call, CellFacts, agg_names
from crane_lsp.checks.python import kernel_value, type_name
from crane_lsp.checks.registry import Finding, check
from crane_lsp.snapshot import Snapshot

_FRAME, _SERIES = "pandas.DataFrame", "pandas.Series"
_OWN_CLASSES = {
    _FRAME: "DataFrame",
    _SERIES: "Series",
    "pandas.core.frame.DataFrame": "DataFrame",
    "pandas.core.series.Series": "Series",
}


def _absent(snap: Snapshot, key: str) -> bool:
    fact = snap.attributes.get(key)
    return fact is not None and fact.exists is False


@check("pandas.agg-name")
def agg_name(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``df.agg('meen')`` / ``s.agg(['mean', 'stdd'])``: a name neither pandas nor numpy resolves."""
    for call in facts.calls:
        names = agg_names(call)
        if not names or call.guarded or call.receiver is None or "." in call.receiver:
            continue
        if len(call.positional()) > 1 or any(a.keyword not in (None, "func") for a in call.args):
            continue
        summary = kernel_value(facts, snap, call.receiver, call.span)
        cls = _OWN_CLASSES.get(type_name(summary)) if summary is not None else None
        if cls is None or (cls == "DataFrame" and not isinstance(_first_literal(call), str)):
            continue
        label = "column" if cls == "DataFrame" else "index label"
        for name in names:
            if _absent(snap, f"{call.receiver}.{name}") and _absent(snap, f"{NUMPY_CHAIN}.{name}"):
                return [
                    Finding(
                        check_id="pandas.agg-name",
                        exception="AttributeError",
                        message=(
                            f"{call.func}({name!r}): '{name}' is not a valid function for '{cls}' object "
                            f"(no {cls} method or attribute, no {label} and no numpy function of that name)"
                        ),
                        span=call.span,
                        evidence=((f"{call.receiver}.{name}", "absent"), (f"numpy.{name}", "absent")),
                        variables=(call.receiver,),
                    )
                ]
    return []


def _first_literal(call: Call) -> object:
    pos = call.positional()
    arg = pos[0] if pos else call.keyword("func")
    return arg.literal if arg is not None else None
