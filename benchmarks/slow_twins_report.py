"""The tables of ``slow_twins.py``: per kind of twin and per exception class, and why verdicts were withheld.

A crash twin counts as observed only with the exception and the line its real run raises; a crash
verdict with another exception or line is counted apart (it is not the crash the user will meet).
A clean twin given a crash verdict is a false alarm. Time to verdict is the wall time of the
pipeline's dry-run layer, over every twin of the kind (verdict or not).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from slow_twins import Site


@dataclass
class Twin:
    site: str
    role: str  # crash | clean (the truth of the twin)
    kind: str  # loop | scaled | training
    truth_exception: str | None = None
    truth_line: int | None = None  # 0-based, in the twin
    crash: bool = False
    exception: str | None = None
    line: int | None = None  # 0-based, in the twin
    certainty: str = ""
    message: str = ""
    seconds: float = 0.0
    dropped: str = ""  # why the twin was not made or not kept
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if self.dropped:
            return "dropped"
        said_clean = not self.crash and "ran clean" in self.message
        if self.role == "clean":
            return "FALSE ALARM" if self.crash else "clean" if said_clean else "withheld"
        if self.crash:
            right = self.exception == self.truth_exception and self.line == self.truth_line
            return "observed" if right else "other crash"
        return "said clean" if said_clean else "withheld"

    @property
    def headline(self) -> str:
        if self.crash:
            text = f"{self.exception} at line {(self.line or 0) + 1}: {self.message}"
        else:
            text = self.message
        return text if len(text) <= 130 else text[:129] + "…"


def dropped_twin(site: Site, kind: str, why: str) -> Twin:
    """A twin not made or not kept, and why (counted apart)."""
    return Twin(site=site.name, role=site.role, kind=kind, dropped=why)


def reason(message: str) -> str:
    """A withheld verdict's headline, numbers masked, for grouping."""
    text = re.sub(r" \(.*", "", message.split(". ")[0])  # what was shortened: detail, not the reason
    text = re.sub(r"\d[\d,._]*", "N", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text)
    return text[:110]


def _times(twins: list[Twin]) -> str:
    if not twins:
        return "-"
    ts = sorted(t.seconds for t in twins)
    p95 = ts[min(len(ts) - 1, round(0.95 * (len(ts) - 1)))]
    return f"{statistics.median(ts):.2f} / {p95:.2f}"


def report(sites: list[Site], budget: float, total_s: float) -> None:
    console = Console(width=200)
    twins = [t for s in sites for t in s.twins]
    kept = [t for t in twins if not t.dropped]
    table = Table(title=f"slow twins of fast-observed crashes: dry run at budget {budget:g} s")
    for column in ("kind", "exception", "crashes", "observed", "other crash", "said clean", "withheld",
                   "s median / p95"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("kind", "exception") else "right")
    for kind in sorted({t.kind for t in kept}):
        crash = [t for t in kept if t.kind == kind and t.role == "crash"]
        by_class: dict[str, list[Twin]] = defaultdict(list)
        for t in crash:
            by_class[t.truth_exception or "?"].append(t)
        for ename in sorted(by_class, key=lambda e: (-len(by_class[e]), e)):
            _row(table, kind, ename, by_class[ename])
        _row(table, kind, "[bold]all[/bold]", crash)
        table.add_section()
    console.print(table)
    clean = Table(title="clean twins (fixed versions): false alarms")
    for column in ("kind", "twins", "FALSE ALARMS", "clean verdict", "withheld", "s median / p95"):
        clean.add_column(column, justify="left" if column == "kind" else "right")
    for kind in sorted({t.kind for t in kept}):
        ts = [t for t in kept if t.kind == kind and t.role == "clean"]
        n = Counter(t.outcome for t in ts)
        clean.add_row(
            kind, str(len(ts)), str(n["FALSE ALARM"]), str(n["clean"]), str(n["withheld"]), _times(ts)
        )
    console.print(clean)
    for t in kept:
        if t.outcome in ("FALSE ALARM", "other crash"):
            truth = f"{t.truth_exception} at line {(t.truth_line or 0) + 1}" if t.truth_exception else "clean"
            console.print(f"[red]{t.outcome}[/red] {t.site} ({t.kind}, really {truth}): {t.headline}")
    withheld = Table(title="why verdicts were withheld (crash and clean twins)")
    for column in ("kind", "role", "n", "headline (numbers, quoted names and details masked)"):
        withheld.add_column(column)
    grouped = Counter((t.kind, t.role, reason(t.message)) for t in kept if t.outcome == "withheld")
    for (kind, role, why), n in sorted(grouped.items(), key=lambda x: (x[0][0], -x[1])):
        withheld.add_row(kind, role, str(n), why)
    console.print(withheld)
    dropped = Counter((t.kind, re.sub(r" at line \d+", "", t.dropped)) for t in twins if t.dropped)
    for (kind, why), n in sorted(dropped.items()):
        console.print(f"dropped {kind} twins: {n} ({why})")
    left = Counter(s.why_left_out.split(" is not ")[0] for s in sites if s.role == "left out")
    crashes = [s for s in sites if s.role == "crash"]
    fast = [s.fast_s for s in crashes]
    console.print(
        f"cells: {len(crashes)} fast-observed crashes kept, {sum(s.role == 'clean' for s in sites)} "
        f"clean fixed versions; left out: {dict(left) or 'none'}; fast dry run median "
        f"{statistics.median(fast) if fast else 0:.2f} s; total {total_s:.0f} s"
    )


def _row(table: Table, kind: str, ename: str, ts: list[Twin]) -> None:
    n = Counter(t.outcome for t in ts)
    share = f" ({100 * n['observed'] / len(ts):.0f}%)" if ts else ""
    table.add_row(kind, ename, str(len(ts)), f"{n['observed']}{share}", str(n["other crash"]),
                  str(n["said clean"]), str(n["withheld"]), _times(ts))  # fmt: skip
