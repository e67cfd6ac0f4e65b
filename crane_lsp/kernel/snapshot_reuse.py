"""What the probe read, kept while the kernel stands still: each query asks only for what it adds.

Between two keystrokes the kernel's state has not changed unless something ran in it. The link counts
what may move the state in IOPub order (``KernelLink.state_epoch``: any execute, silent or not, from
any client; a comm message; a restart), and stamps each of its probes with the count at which the
kernel started on it. So a query whose probe carries the stamp of the held snapshot read the very
same state: its answer (the names, chains, subscripts, paths and modules the held snapshot lacks) is
merged into it, and the query's part of the whole is returned. The held snapshot is dropped as soon
as the stamp differs (the new query is then asked in full), when a probe ran beside a busy cell, after
``REUSE_WINDOW_S`` (what changes with no message at all, a thread of the user's, is seen within it),
and when the budgets or the privacy mode differ. A summary its budget cut short stays as it is for
that state (its unknown fields stay unknown; asking again on every keystroke would spend the budget
again for the same answer), except that a frame is asked again for a new subscript of a column
whose statistics it lacks. Every query still costs one round trip: it is the
barrier that makes "nothing ran since" a fact rather than a guess.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crane_lsp.kernel.agent.wire import Kind
from crane_lsp.snapshot import ObjectSummary, ProbeQuery, Snapshot

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink

#: the longest a held snapshot serves (seconds since the probe that read it in full)
REUSE_WINDOW_S = 10.0
#: a held snapshot with more summaries than this is read afresh (bounded memory and ``known`` list)
MAX_HELD = 400
#: the free globals of cell functions, followed this many levels deep (as the agent does)
FREE_GLOBAL_DEPTH = 3
_BUDGET_FIELDS = (
    "max_columns",
    "max_list_items",
    "sample_rows",
    "object_budget_s",
    "request_budget_s",
    "privacy",
    "torch_samples",
)


def _budget_key(query: ProbeQuery) -> tuple[object, ...]:
    return tuple(getattr(query, name) for name in _BUDGET_FIELDS)


def _chain_keys(chain: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b", "a.b.c"]``: what the agent may summarise and test for a chain."""
    parts = chain.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _subscript_read(text: str) -> tuple[str, list[str] | None] | None:
    """``"data.train.loc['x']"`` -> ``("data.train", ["x"])``: the object a subscript reads (as the agent
    parses it) and its literal keys as text (None: not literal)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Subscript):
        return None
    parts, target = [], node.value
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return None
    parts = [target.id, *reversed(parts)]
    if len(parts) > 1 and parts[-1] in ("loc", "iloc", "at", "iat"):
        parts.pop()
    try:
        key = ast.literal_eval(node.slice)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ".".join(parts), None
    return ".".join(parts), [str(k) for k in (key if isinstance(key, list) else [key])]


def _wants_more_columns(summary: ObjectSummary | None, keys: list[str] | None) -> bool:
    """Whether a new subscript of a held frame summary wants stats it lacks: a column it names whose
    stats are missing, or maybe one past the listed columns. A misspelt key wants nothing more."""
    if summary is None or summary.kind != Kind.DATAFRAME:
        return False
    columns = summary.columns or []
    if keys is None:
        return summary.columns_truncated or any(c.stats is None for c in columns)
    listed = {c.name: c for c in columns}
    return any(
        (key in listed and listed[key].stats is None) or (key not in listed and summary.columns_truncated)
        for key in keys
    )


@dataclass
class HeldSnapshot:
    """The union of what the probe answered for one kernel state, and what it was asked."""

    epoch: int
    restarts: int
    generation: int | None
    budgets: tuple[object, ...]
    taken: float
    snap: Snapshot
    names: set[str] = field(default_factory=set)
    chains: set[str] = field(default_factory=set)
    subscripts: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    labels: dict[str, set[object]] = field(default_factory=dict)

    def record(self, query: ProbeQuery) -> None:
        self.names.update(query.names)
        self.chains.update(query.chains)
        self.subscripts.update(query.subscripts)
        self.paths.update(query.paths)
        self.modules.update(query.modules)
        for text, labels in query.index_labels.items():
            self.labels.setdefault(text, set()).update(labels)

    def serves(self, link: KernelLink, query: ProbeQuery) -> bool:
        """Nothing moved the state since (as far as the link has heard), and the query's budgets match."""
        return (
            link.state_epoch == self.epoch
            and link.restarts == self.restarts
            and not link.busy
            and time.monotonic() - self.taken < REUSE_WINDOW_S
            and _budget_key(query) == self.budgets
            and len(self.snap.variables) <= MAX_HELD
        )

    def delta(self, query: ProbeQuery) -> ProbeQuery:
        """The part of ``query`` this snapshot cannot answer, with what it holds as ``known``."""
        held = self.snap.variables
        names = [n for n in query.names if n not in self.names]
        chains = [c for c in query.chains if c not in self.chains]
        subscripts = [s for s in query.subscripts if s not in self.subscripts]
        again: set[str] = set()  # held summaries to read again (a new subscript or row label wants more)
        for text in subscripts:
            read = _subscript_read(text)
            if read is not None and _wants_more_columns(held.get(read[0]), read[1]):
                again.add(read[0])
        labels = {}
        for text, wanted in query.index_labels.items():
            if not set(wanted) <= self.labels.get(text, set()):
                labels[text] = wanted
                again.add(text)
        for text in sorted(again):
            if text in query.names and text not in names:
                names.append(text)
            if text in query.chains and text not in chains:
                chains.append(text)
        if again:  # a frame read again puts every subscripted column of the query first
            subscripts = list(query.subscripts)
        known = sorted(k for k in held if k not in again)
        return query.model_copy(
            update={
                "names": names,
                "chains": chains,
                "subscripts": subscripts,
                "paths": [p for p in query.paths if p not in self.paths],
                "modules": [m for m in query.modules if m not in self.modules],
                "index_labels": labels,
                "known": known,
            }
        )

    def merge(self, query: ProbeQuery, answer: Snapshot) -> None:
        """Add a delta's answer (same state): its summaries replace held ones of the same key."""
        snap = self.snap
        snap.variables.update(answer.variables)
        snap.attributes.update(answer.attributes)
        snap.paths.update(answer.paths)
        snap.modules.update(answer.modules)
        snap.undefined += [n for n in answer.undefined if n not in snap.undefined]
        snap.errors += [e for e in answer.errors if e not in snap.errors]
        snap.imported, snap.versions, snap.cwd = answer.imported, answer.versions, answer.cwd
        self.record(query)

    def answer_for(self, query: ProbeQuery, delta: Snapshot) -> Snapshot:
        """What a fresh probe of ``query`` would have answered, from the held whole."""
        held = self.snap
        keys: set[str] = set(query.names) | set(query.subscripts)
        attributes: set[str] = set()
        roots = set(query.names)
        for chain in query.chains:
            chain_keys = _chain_keys(chain)
            keys.update(chain_keys)
            attributes.update(chain_keys[1:])
            roots.add(chain_keys[0])
        frontier = [held.variables[n] for n in query.names if n in held.variables]
        for _depth in range(FREE_GLOBAL_DEPTH):  # what cell functions read, as the agent follows it
            found = []
            for summary in frontier:
                if summary.source is None:
                    continue
                for name in summary.free_globals or []:
                    if name not in keys and name in held.variables:
                        keys.add(name)
                        found.append(held.variables[name])
            frontier = found
        return held.model_copy(
            update={
                "variables": {k: v.model_copy(deep=True) for k, v in held.variables.items() if k in keys},
                "attributes": {k: v.model_copy() for k, v in held.attributes.items() if k in attributes},
                "paths": {p: held.paths[p] for p in query.paths if p in held.paths},
                "modules": {m: held.modules[m] for m in query.modules if m in held.modules},
                "undefined": [n for n in held.undefined if n in roots],
                "elapsed_ms": delta.elapsed_ms,
                "deadline_hit": delta.deadline_hit,
                "ok": held.ok and delta.ok,
                "errors": list(held.errors),
                "imported": list(held.imported),
            }
        )


class SnapshotReuse:
    """One kernel link's held snapshot (the server's ``CountedLink`` holds one of these)."""

    def __init__(self) -> None:
        self.held: HeldSnapshot | None = None
        self.reused = 0  # queries answered from a held snapshot (for tests and benchmarks)
        self.full = 0  # queries asked in full

    async def snapshot(self, link: KernelLink, query: ProbeQuery, timeout: float | None = None) -> Snapshot:
        held = self.held
        if held is not None and held.serves(link, query):
            delta = held.delta(query)
            answer, epoch = await link.snapshot_stamped(delta, timeout)
            if (
                epoch == held.epoch
                and link.restarts == held.restarts
                and answer.generation == held.generation
                and not answer.taken_while_busy
                and answer.ok
            ):
                held.merge(delta, answer)
                self.reused += 1
                return held.answer_for(query, answer)
        self.held = None
        self.full += 1
        snap, epoch = await link.snapshot_stamped(query, timeout)
        if epoch is not None and snap.ok and not snap.taken_while_busy:
            kept = HeldSnapshot(
                epoch,
                link.restarts,
                snap.generation,
                _budget_key(query),
                time.monotonic(),
                snap.model_copy(deep=True),
            )
            kept.record(query)
            self.held = kept
        return snap

    def drop(self) -> None:
        self.held = None
