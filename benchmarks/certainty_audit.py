"""Certainty audit: walk every notebook we have with the built-in checks and count certain findings
on cells that really ran clean (must be 0) or that crashed otherwise than said.

Walk mode (``crane-lsp check NOTEBOOK --predictors checks --json``) predicts each cell against the
state the notebook built so far, then runs it: the truth is what the cell really did. Notebooks:
``examples/``, the replay corpus (buggy and fixed), ``benchmarks/audit_notebooks/``.

    python3 benchmarks/certainty_audit.py [--only examples,audit,replay] [--jobs 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from walk_json import check_json  # noqa: E402


def replay_root() -> Path:
    for root in (REPO / "crane_lsp" / "data" / "junoreplay", REPO.parent / "shared" / "junoreplay"):
        if root.is_dir():
            return root
    return REPO / "crane_lsp" / "data" / "junoreplay"


def notebooks(only: set[str]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if "examples" in only:
        found += [("examples", p) for p in sorted((REPO / "examples").glob("*/*.ipynb"))]
    if "audit" in only:
        found += [("audit", p) for p in sorted((REPO / "benchmarks" / "audit_notebooks").glob("*.ipynb"))]
    if "replay" in only:
        found += [("replay", p) for p in sorted(replay_root().glob("*/*.ipynb"))]
    return found


@dataclass
class Tally:
    cells: int = 0
    certain: int = 0
    certain_right: int = 0
    certain_clean: list[str] = field(default_factory=list)  # must stay empty
    certain_other: list[str] = field(default_factory=list)  # crashed, but not as said
    warnings: int = 0
    warnings_right: int = 0
    crashes: int = 0
    errors: list[str] = field(default_factory=list)


def walk(path: Path, timeout: int) -> list[dict[str, Any]] | str:
    return check_json(path, ["--predictors", "checks"], timeout)


def count(tally: Tally, name: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if "actual" not in row:
            continue
        tally.cells += 1
        actual = row.get("actual")
        tally.crashes += actual is not None
        where = f"{name} cell {row.get('cell')}"
        if row.get("crash") and row.get("certainty") == "certain":
            tally.certain += 1
            if actual is None:
                tally.certain_clean.append(f"{where}: {row.get('exception')} {row.get('message', '')[:90]}")
            elif actual != row.get("exception"):
                tally.certain_other.append(f"{where}: said {row.get('exception')}, raised {actual}")
            else:
                tally.certain_right += 1
        elif row.get("crash"):
            tally.warnings += 1
            tally.warnings_right += actual is not None and actual == row.get("exception")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="examples,audit,replay")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args(argv)
    found = notebooks(set(args.only.split(",")))
    tallies: dict[str, Tally] = {}
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = pool.map(lambda item: (item, walk(item[1], args.timeout)), found)
        for (group, path), rows in results:
            tally = tallies.setdefault(group, Tally())
            name = str(path.relative_to(path.parents[1]))
            if isinstance(rows, str):
                tally.errors.append(f"{name}: {rows}")
                print(f"{name}: {rows}", flush=True)
                continue
            count(tally, name, rows)
            print(f"{name}: {len(rows)} cells", flush=True)
    print()
    print(f"{'group':<9} {'nbs':>4} {'cells':>6} {'crashed':>7} {'certain':>7} {'right':>5} "
          f"{'on clean':>8} {'other':>5} {'warnings':>8} {'w right':>7}")  # fmt: skip
    bad = 0
    for group, t in tallies.items():
        n = sum(1 for g, _ in found if g == group)
        print(
            f"{group:<9} {n:>4} {t.cells:>6} {t.crashes:>7} {t.certain:>7} {t.certain_right:>5} "
            f"{len(t.certain_clean):>8} {len(t.certain_other):>5} {t.warnings:>8} {t.warnings_right:>7}"
        )
        bad += len(t.certain_clean) + len(t.certain_other)
        for line in t.certain_clean + t.certain_other + t.errors:
            print(f"    {line}")
    print(f"\ncertain findings on cells that ran clean or crashed otherwise (must be 0): {bad}")
    print(f"walked {len(found)} notebooks in {time.perf_counter() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
