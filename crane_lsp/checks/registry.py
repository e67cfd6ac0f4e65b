"""The checks' registry: ``@check`` for whole-cell checks, ``@step`` for step hooks on the ONE walk.

A check reports only crashes that the kernel state PROVES (certain means certain): when a fact is
unknown, sampled past the budget, or the cell may have changed a value before the line
(``facts.untrusted_from``), the check stays silent.

Most checks look at one statement at a time in the state the value walk has there: they are step
hooks ``(walk, stmt) -> list[Finding]``, registered with ``@step("id")`` (or ``@step_factory`` when a
check first decides from the facts and snapshot whether it applies at all). ``walk_hooks`` runs one
``CellWalk`` and calls every hook on every statement; a hook is done at its first finding (the first
crash it sees stops the cell). Every step hook is also a plain check ``(facts, snapshot)`` in
``REGISTRY.checks``, for callers that want one check alone.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.positions import Span
from crane_lsp.analysis.values import Val
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.snapshot import Snapshot

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finding:
    check_id: str
    exception: str  # class name the cell will raise, e.g. "KeyError"
    span: Span  # where the squiggle goes (the offending expression, not the whole line)
    message: str  # one sentence, e.g. "column 'Hour' does not exist in df"
    evidence: tuple[tuple[str, str], ...] = ()  # (fact, value), e.g. ("df.columns", "['a', 'b']")
    variables: tuple[str, ...] = ()  # kernel variables involved (for origin lookup)
    diagnosis: str = ""  # longer explanation; defaults to the message
    # a certain repair, e.g. the existing column a misspelt literal was meant to name:
    # (span of the text to replace, the replacement source text, a short description)
    replacement: tuple[Span, str, str] | None = None
    # why the line may not be reached although no earlier line of the CELL may raise (a crash inside a
    # user function, after a body line that may raise first): such a finding is a Warning, not certain
    unproven_reach: str = ""
    # why the crash is not proven although the line is reached: a hook of the object's own that the probe
    # could not run may answer (a trusted module's PEP 562 ``__getattr__``): such a finding is a Warning
    unproven_hook: str = ""


CheckFn = Callable[[CellFacts, Snapshot], list[Finding]]
#: A step hook: called on each certainly-run statement, in the walk's state right before it.
CheckHook = Callable[[CellWalk, ast.stmt], list[Any]]
#: Builds a check's hook for one cell, or None when the check cannot apply (nothing of its kind).
HookFactory = Callable[[CellFacts, Snapshot], "CheckHook | None"]


@dataclass(frozen=True)
class Trigger:
    """When a step hook can find anything at all, so that the walk need not call it elsewhere.

    ``on``: node types one of which the statement must certainly evaluate (``CellWalk.kinds``); a hook
    whose every finding sits on such a node. ``words``: identifiers one of which the cell's text must
    contain (an attribute or function name the hook looks for, e.g. ``savetxt``). Empty: no limit."""

    on: frozenset[type[ast.AST]] = frozenset()
    words: tuple[str, ...] = ()
    #: the hook can only prove a crash from a value the walk knows (``CellWalk.knows_any``): it is not
    #: called on a statement whose every name is unknown there
    needs_value: bool = True


@dataclass
class _Registry:
    checks: dict[str, CheckFn] = field(default_factory=dict)
    steps: dict[str, HookFactory] = field(default_factory=dict)
    triggers: dict[str, Trigger] = field(default_factory=dict)


REGISTRY = _Registry()


def check(check_id: str) -> Callable[[CheckFn], CheckFn]:
    """Register a whole-cell check under a stable id (shown to users as ``check:<id>``)."""

    def register(fn: CheckFn) -> CheckFn:
        if check_id in REGISTRY.checks:
            raise ValueError(f"duplicate check id {check_id!r}")
        REGISTRY.checks[check_id] = fn
        return fn

    return register


def step_factory(
    check_id: str,
    *,
    on: tuple[type[ast.AST], ...] = (),
    words: tuple[str, ...] = (),
    needs_value: bool = True,
) -> Callable[[HookFactory], HookFactory]:
    """Register a step-hook check whose hook is built per cell (None: the check does not apply).
    ``on`` / ``words`` / ``needs_value``: see ``Trigger``."""

    def register(factory: HookFactory) -> HookFactory:
        def applies(facts: CellFacts, snapshot: Snapshot) -> CheckHook | None:
            if words and not any(facts.mentions(word) for word in words):
                return None  # the cell never names what the check looks for
            return factory(facts, snapshot)

        def alone(facts: CellFacts, snapshot: Snapshot) -> list[Finding]:
            hook = applies(facts, snapshot)
            return walk_hooks(facts, snapshot, {check_id: hook}).get(check_id, []) if hook is not None else []

        check(check_id)(alone)
        REGISTRY.steps[check_id] = applies
        REGISTRY.triggers[check_id] = Trigger(frozenset(on), words, needs_value)
        return factory

    return register


def step(
    check_id: str,
    *,
    on: tuple[type[ast.AST], ...] = (),
    words: tuple[str, ...] = (),
    needs_value: bool = True,
) -> Callable[[CheckHook], CheckHook]:
    """Register a step hook ``(walk, stmt) -> findings`` under a stable id (``on`` / ``words`` /
    ``needs_value``: see ``Trigger``)."""

    def register(hook: CheckHook) -> CheckHook:
        step_factory(check_id, on=on, words=words, needs_value=needs_value)(lambda facts, snapshot: hook)
        return hook

    return register


def walk_hooks(facts: CellFacts, snapshot: Snapshot, hooks: dict[str, CheckHook]) -> dict[str, list[Any]]:
    """ONE walk of the cell with every hook called on every certainly-run statement (that evaluates a
    node of a type its ``Trigger.on`` names); each hook's first findings (a hook is done once it found
    something). A hook that raises is logged and dropped."""
    if facts.syntax_error or not hooks:
        return {}
    w = CellWalk(facts, snapshot)
    active = {k: (h, _trigger(k)) for k, h in hooks.items()}
    # the hooks to call on a statement, by its node types (a cell has few distinct sets of them) and
    # whether it names a known value; emptied whenever a hook is done
    plans: dict[tuple[frozenset[type[ast.AST]], bool], list[tuple[str, CheckHook]]] = {}
    out: dict[str, list[Any]] = {}
    for stmt in w.steps():
        kinds = w.kinds(stmt)
        known = w.knows_any(stmt)
        plan = plans.get((kinds, known))
        if plan is None:
            plan = plans[(kinds, known)] = [
                (k, h)
                for k, (h, t) in active.items()
                if (not t.on or t.on & kinds) and (known or not t.needs_value)
            ]
        for check_id, hook in plan:
            try:
                found = hook(w, stmt)
            except Exception:
                _log.exception("check %s raised; skipped", check_id)
                del active[check_id]
                plans.clear()
                out.pop(check_id, None)
                continue
            if found:
                if w.loop_note:
                    found = [
                        replace(f, message=f"{f.message} ({w.loop_note})") if isinstance(f, Finding) else f
                        for f in found
                    ]
                out[check_id] = found
                del active[check_id]
                plans.clear()
        if not active:
            break
    return out


_NO_TRIGGER = Trigger(needs_value=False)


def _trigger(check_id: str) -> Trigger:
    """A registered hook's trigger; a hook registered some other way (``run_walk``) runs everywhere."""
    return REGISTRY.triggers.get(check_id, _NO_TRIGGER)


def run_walk(facts: CellFacts, snapshot: Snapshot, hook: CheckHook) -> list[Any]:
    """Call ``hook`` on each certainly-run statement, in the state the walk had there; stop at the first
    finding."""
    return walk_hooks(facts, snapshot, {"hook": hook}).get("hook", [])


def finding_at(
    w: CellWalk,
    check_id: str,
    exc: str,
    node: ast.AST,
    message: str,
    evidence: list[tuple[str, str]] | tuple[tuple[str, str], ...],
    vals: list[Val],
    replacement: tuple[str, str] | None = None,
) -> list[Finding]:
    """One finding on ``node``'s span, naming the kernel variables behind ``vals`` (for origins).

    ``replacement`` is (new source text for ``node``, description): a certain repair of that span."""
    variables = tuple(dict.fromkeys(n for v in vals for n in v.variables))
    span = w.span(node)
    return [
        Finding(
            check_id=check_id,
            exception=exc,
            span=span,
            message=message,
            evidence=tuple(evidence),
            variables=variables,
            replacement=(span, *replacement) if replacement else None,
        )
    ]
