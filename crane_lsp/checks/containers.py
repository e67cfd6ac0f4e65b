"""Keys of kernel containers in the forms notebooks write them.

Attributes of a scikit-learn ``Bunch`` (``iris.target_names``): a Bunch answers a missing attribute from its
keys and raises AttributeError when the key is absent too, so the keys the probe listed in full prove it.
Keys and positions the walk computes (``d[k]``, ``d[key]`` in a loop over a literal list) on a kernel dict
whose every key the probe listed, or a kernel list whose length it knows.
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import literal
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.python import dict_keys, kernel_value, type_name
from crane_lsp.checks.registry import Finding, check, finding_at, step
from crane_lsp.snapshot import Snapshot

BUNCH = "sklearn.utils._bunch.Bunch"


@check("python.bunch-attribute")
def bunch_attribute(facts: CellFacts, snap: Snapshot) -> list[Finding]:
    """``bunch.name`` where ``name`` is neither an attribute of the Bunch nor one of its keys."""
    for chain in facts.chains:
        if chain.guarded or not facts.is_trusted(chain.base, chain.span):
            continue
        attrs = chain.attrs[:-1] if chain.is_store else chain.attrs
        for i in range(1, len(attrs) + 1):
            owner_text = ".".join((chain.base, *attrs[: i - 1]))
            fact = snap.attributes.get(f"{owner_text}.{attrs[i - 1]}")
            if fact is None or fact.exists:
                if fact is None:
                    break
                continue
            # the plain lookup missed and Bunch.__getattr__ decides: the probe replays it (exists False, the
            # key is absent) or leaves it open (exists None); the keys listed in full decide either way
            if not (fact.dynamic and fact.owner_type == BUNCH):
                break
            owner = kernel_value(facts, snap, owner_text, chain.span)
            keys = dict_keys(owner) if owner is not None and owner.type == BUNCH else None
            if keys is None or attrs[i - 1] in keys:
                break
            last = i == len(chain.attrs)
            shown = ", ".join(repr(k) for k in keys[:12])
            return [
                Finding(
                    check_id="python.bunch-attribute",
                    exception="AttributeError",
                    span=chain.attr_span if last else chain.span,
                    message=f"{owner_text} (Bunch) has no attribute or key '{attrs[i - 1]}'",
                    evidence=((f"{owner_text}.keys()", f"[{shown}]"),),
                    variables=(chain.base,),
                )
            ]
    return []


@step("python.computed-key", on=(ast.Subscript,))
def computed_key(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``d[k]`` / ``xs[i]`` with a key the walk knows but the text does not spell (a name bound earlier in
    the cell, a loop variable on one pass, ``i + 1``): a key the kernel dict lacks -> KeyError, a position
    past a kernel list's end -> IndexError. Literal keys are ``python.missing-key``'s."""
    for node in w.evaluated_of(stmt, ast.Subscript):
        if not isinstance(node.ctx, ast.Load) or literal(node.slice)[0]:
            continue
        base = w.ev(node.value)
        if base is None or base.summary is None or base.kind not in (Kind.DICT, Kind.LIST, Kind.TUPLE):
            continue
        ok, key = w.const(node.slice)
        if not ok or type(key) not in (str, int):
            continue
        s = base.summary
        if base.kind == Kind.DICT:
            keys = dict_keys(s)
            if keys is None or key in keys:
                continue
            shown = ", ".join(repr(k) for k in keys[:12])
            return finding_at(
                w,
                "python.computed-key",
                "KeyError",
                node.slice,
                f"{base.text} has no key {key!r} ({w.text(node.slice)} is {key!r} here)",
                [(f"{base.text}.keys()", f"[{shown}]")],
                [base],
            )
        n = s.length
        if type(key) is int and n is not None and type_name(s) in ("builtins.list", "builtins.tuple"):
            if -n <= key < n:
                continue
            return finding_at(
                w,
                "python.computed-key",
                "IndexError",
                node.slice,
                f"{base.text} has {n} items, so index {key} ({w.text(node.slice)}) is out of range",
                [(f"len({base.text})", str(n))],
                [base],
            )
    return []
