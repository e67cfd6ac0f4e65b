"""Cells the dry run gives no verdict, by reason: walk every notebook with the dry run alone.

Walk mode (``crane-lsp check NOTEBOOK --predictors dryrun --dry-run on --json``, the dry-run budget
raised to ``--budget`` so that a loaded machine does not count as the jail) dry-runs each
cell against the state the notebook built so far, then runs it. A cell gets a verdict when the
dry run observed a crash or ran it clean; else its headline says why not (stopped by the jail,
did not finish, unavailable). Blocked cells are listed with the call that stopped them, so a
library's first import that still ends the run shows up here. Notebooks: ``examples/``,
``benchmarks/audit_notebooks/`` and (``--only replay``) the JunoBench replay corpus.

    python3 benchmarks/jail_no_verdict.py [--only examples,audit,replay] [--budget 20] [--notebooks a,b]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from certainty_audit import notebooks as audit_notebooks  # noqa: E402
from walk_json import check_json  # noqa: E402


def notebooks(only: set[str], names: set[str]) -> list[Path]:
    found = [path for _group, path in audit_notebooks(only)]  # examples, audit, replay (certainty_audit)
    return [p for p in found if not names or p.stem in names or p.parent.name in names]


def walk(path: Path, budget: float, timeout: int) -> list[dict[str, Any]] | str:
    options = ["--predictors", "dryrun", "--dry-run", "on", "--dry-run-budget", f"{budget:g}"]
    return check_json(path, options, timeout)


def reason(row: dict[str, Any]) -> str | None:
    """None for a verdict; else the kind of no-verdict (the call's name for a blocked cell)."""
    message = row.get("message") or ""
    if row.get("crash") or "ran clean" in message:
        return None
    blocked = re.search(r"was stopped \((.*?)\(", message)
    if blocked:
        return "blocked: " + blocked.group(1).strip()
    if "did not finish" in message:
        return "timeout"
    return "other: " + message[:60]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="examples,audit")
    ap.add_argument("--notebooks", default="", help="comma-separated notebook names (stems) to walk")
    ap.add_argument("--budget", type=float, default=20.0, help="dry-run budget (s): load is not the jail")
    ap.add_argument("--timeout", type=int, default=900)
    args = ap.parse_args(argv)
    found = notebooks(set(args.only.split(",")), {n for n in args.notebooks.split(",") if n})
    reasons: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    cells = verdicts = 0
    started = time.perf_counter()
    for path in found:
        rows = walk(path, args.budget, args.timeout)
        name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else "/".join(path.parts[-2:])
        if isinstance(rows, str):
            print(f"{name}: {rows}", flush=True)
            continue
        for row in rows:
            cells += 1
            why = reason(row)
            verdicts += why is None
            if why is not None:
                reasons[why] += 1
                print(f"    {name} cell {row.get('cell')}: {row.get('message')}", flush=True)
            for note in row.get("notes") or []:
                if note.startswith("answered by the jail"):
                    answered.update(re.findall(r"(\w+)\(", note.split(":", 1)[1]))
        print(f"{name}: {len(rows)} cells", flush=True)
    print(f"\n{cells} cells in {len(found)} notebooks: {verdicts} with a verdict, {cells - verdicts} without")
    for why, n in reasons.most_common():
        print(f"  {n:>4}  {why}")
    print("calls the jail answered (cells):", dict(answered) or "none")
    print(f"walked in {time.perf_counter() - started:.0f} s (dry-run budget {args.budget:g} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
