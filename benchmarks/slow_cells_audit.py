"""Slow-cell audit: walk every notebook with the dry run, with and without shortened runs, and count
the cells left with no verdict and the false alarms (a crash said on a cell that ran clean: must be 0).

Walk mode (``crane-lsp check NOTEBOOK --predictors dryrun --dry-run on --json``) dry-runs each cell
against the state the notebook built so far, then runs it: the truth is what the cell really did.
Notebooks: ``examples/``, ``benchmarks/audit_notebooks/``, the replay corpus (as in
``certainty_audit.py``).

    python3 benchmarks/slow_cells_audit.py [--only examples,audit,replay] [--budget 3] [--limit N]

The whole replay corpus takes over an hour; ``--limit N`` walks the first N notebooks of each group.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from certainty_audit import notebooks
from walk_json import check_json


@dataclass
class Tally:
    cells: int = 0
    no_verdict: int = 0
    shortened_clean: int = 0  # "no crash seen in a shortened run"
    shortened_crash: int = 0  # a crash observed in a shortened run
    shortened_right: int = 0
    false_alarms: list[str] = field(default_factory=list)  # must stay empty
    errors: list[str] = field(default_factory=list)


def walk(path: Path, budget: float, shorten: bool, timeout: int) -> list[dict[str, Any]] | str:
    options = ["--predictors", "dryrun", "--dry-run", "on", "--dry-run-budget", str(budget)]
    return check_json(path, options + ([] if shorten else ["--no-shortened-runs"]), timeout)


def count(tally: Tally, name: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if "actual" not in row:
            continue
        tally.cells += 1
        message = str(row.get("message") or "")
        actual = row.get("actual")
        tally.no_verdict += message.startswith("no verdict:")
        tally.shortened_clean += message.startswith("no crash seen in a shortened run")
        shortened = "in a shortened run" in message
        if row.get("crash"):
            tally.shortened_crash += shortened
            tally.shortened_right += shortened and actual == row.get("exception")
            if actual is None:
                tally.false_alarms.append(f"{name} cell {row.get('cell')}: {message[:100]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="examples,audit,replay")
    ap.add_argument("--budget", type=float, default=3.0)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--limit", type=int, default=0, help="at most this many notebooks of each group")
    args = ap.parse_args(argv)
    found = notebooks(set(args.only.split(",")))
    if args.limit > 0:  # the first N of each group, in the selection's order
        groups = [g for g, _p in found]
        found = [item for i, item in enumerate(found) if groups[:i].count(item[0]) < args.limit]
    started = time.perf_counter()
    tallies = {"before": Tally(), "after": Tally()}
    for group, path in found:
        name = f"{group}/{path.parent.name}/{path.name}"
        for label, shorten in (("before", False), ("after", True)):
            rows = walk(path, args.budget, shorten, args.timeout)
            if isinstance(rows, str):
                tallies[label].errors.append(f"{name}: {rows}")
                print(f"{name} ({label}): {rows}", flush=True)
                continue
            count(tallies[label], name, rows)
        before, after = tallies["before"], tallies["after"]
        print(
            f"{name}: walked; so far no verdict {before.no_verdict} before, {after.no_verdict} after, "
            f"false alarms {len(before.false_alarms)} before, {len(after.false_alarms)} after",
            flush=True,
        )
    print()
    print(f"{'':<7} {'cells':>6} {'no verdict':>10} {'shortened clean':>15} {'shortened crash':>15} "
          f"{'right':>5} {'false alarms':>12}")  # fmt: skip
    for label, t in tallies.items():
        print(
            f"{label:<7} {t.cells:>6} {t.no_verdict:>10} {t.shortened_clean:>15} {t.shortened_crash:>15} "
            f"{t.shortened_right:>5} {len(t.false_alarms):>12}"
        )
        for line in t.false_alarms + t.errors:
            print(f"    {line}")
    print(f"walked {len(found)} notebooks twice in {time.perf_counter() - started:.0f} s")
    return 1 if tallies["after"].false_alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
