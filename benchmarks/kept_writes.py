"""Cells that save a file: does the dry run still give the real run's verdict? (``jail_writes.py``)

Derived from every target of the JunoBench replay corpus (buggy and fixed, real code nobody here
wrote): each target gets twins that first save a small file, one per common writer (Python's
``open``, ``np.save``, ``np.savetxt``, ``DataFrame.to_csv``, a matplotlib ``Figure.savefig``,
``torch.save``, a native writer, and ``os.makedirs`` then ``to_csv`` into the new folder), so the
crash or the clean end comes after a write. Before files were kept in the copy's memory, every twin
ended the dry run at its save (``blocked: writes a file``, ``creates a folder``): no verdict.

Per notebook, in a copy of its case folder: replay the state, dry-run the original target and each
twin (nothing may reach the folder), then run the original target for real: its outcome (and its
line moved by the prefix) is each twin's truth, since the prefix only writes its own file. Prints one
row per notebook and the totals: twins whose verdict agrees with the real run, no verdicts by reason,
and verdicts that disagree (must be 0).

Run by hand: ``python benchmarks/kept_writes.py [--cases DIR] [--only SUBSTRING] [--budget S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_dryrun import DEFAULT_CASES, case_copy, target_index

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.notebook import read_notebook
from crane_lsp.settings import Settings

#: the saves prefixed to each target: (name, lines); each writes a file of its own in the cell's folder
SAVES = {
    "open": "open('crane_twin.txt', 'w').write('saved\\n')",
    "np.save": "import numpy as _twin_np\n_twin_np.save('crane_twin.npy', _twin_np.arange(3))",
    "np.savetxt": "import numpy as _twin_np\n_twin_np.savetxt('crane_twin.csv', _twin_np.eye(2))",
    "to_csv": "import pandas as _twin_pd\n_twin_pd.DataFrame({'a': [1, 2]}).to_csv('crane_twin_frame.csv')",
    "savefig": "from matplotlib.figure import Figure as _TwinFigure\n_TwinFigure().savefig('crane_twin.png')",
    "torch.save": "import torch as _twin_torch\n_twin_torch.save(_twin_torch.ones(2), 'crane_twin.pt')",
    "makedirs": (
        "import os as _twin_os, pandas as _twin_pd\n_twin_os.makedirs('crane_twin/out', exist_ok=True)\n"
        "_twin_pd.DataFrame({'a': [1]}).to_csv('crane_twin/out/t.csv')"
    ),
}


@dataclass
class Row:
    case: str
    version: str
    truth: str = ""  # the original target's real exception ("" = clean)
    truth_line: int | None = None  # 1-based
    original: str = ""  # the dry run of the original target, as "raised X@line" / "completed" / ...
    twins: dict[str, str] = field(default_factory=dict)  # save -> agrees | no verdict: why | DISAGREES: ...
    wrote: list[str] = field(default_factory=list)  # files the dry runs left in the folder (must be none)
    error: str = ""


def _shown(outcome: object) -> str:
    o = outcome
    if getattr(o, "outcome", "") == "raised":
        return f"raised {o.exception}@{o.line}"  # type: ignore[attr-defined]
    return str(getattr(o, "outcome", "none"))


async def run_notebook(case_dir: Path, version: str, budget: float) -> Row:
    row = Row(case=case_dir.name, version=version)
    nb = read_notebook(case_dir / f"{version}.ipynb")
    target = target_index(nb)
    source = nb.code_cells[target].source
    before = sorted(p.name for p in case_dir.iterdir())
    link, _report = await start_and_replay(nb, target, cwd=case_dir, cell_timeout=120)
    try:
        runner = DryRunner(link, Settings.model_validate({"dry_run": "on", "dry_run_budget_s": budget}))
        row.original = _shown(await runner.run_outcome(source))
        outcomes = {}
        for name, prefix in SAVES.items():
            outcomes[name] = (prefix.count("\n") + 1, await runner.run_outcome(f"{prefix}\n{source}"))
        row.wrote = sorted(set(p.name for p in case_dir.iterdir()) - set(before))
        real = await link.execute(source, timeout=120)
    finally:
        await link.close()
    row.truth = "" if real.ok else (real.ename or real.status)
    row.truth_line = None if real.line is None else real.line + 1
    for name, (shift, o) in outcomes.items():
        if o.outcome == "completed":
            row.twins[name] = "agrees" if not row.truth else f"DISAGREES: completed, real {row.truth}"
        elif o.outcome == "raised":
            line = (o.line or 0) - shift
            same = o.exception == row.truth and (row.truth_line is None or line == row.truth_line)
            actual = row.truth or "clean"
            row.twins[name] = "agrees" if same else f"DISAGREES: {o.exception}@{line}, real {actual}"
        else:
            row.twins[name] = f"no verdict: {o.outcome}: {(o.message or '')[:70]}"
    return row


def report(rows: list[Row]) -> None:
    twins = [(r, name, verdict) for r in rows for name, verdict in r.twins.items()]
    agree = [t for t in twins if t[2] == "agrees"]
    wrong = [t for t in twins if t[2].startswith("DISAGREES")]
    none = Counter(
        t[2].split(":")[1].strip() + (" (after a native writer)" if "native code" in t[2] else "")
        for t in twins
        if t[2].startswith("no verdict")
    )
    print()
    print(f"notebooks: {len(rows)} ({sum(1 for r in rows if r.error)} failed to run)")
    print(f"twins (a save before the target): {len(twins)}; before files were kept, all ended at the save")
    print(f"verdict agrees with the real run: {len(agree)}/{len(twins)}")
    for name in SAVES:
        of = [t for t in twins if t[1] == name]
        print(f"  {name:<11} {sum(1 for t in of if t[2] == 'agrees')}/{len(of)}")
    print(f"no verdict: {sum(none.values())} {dict(none)}")
    for r, name, verdict in twins:
        if verdict.startswith("no verdict") and "native code" not in verdict:
            print(f"  {r.case}/{r.version} {name}: {verdict}")
    print(f"verdict disagrees with the real run (must be 0): {len(wrong)}")
    for r, name, verdict in wrong:
        print(f"  {r.case}/{r.version} {name}: {verdict}")
    left = [f"{r.case}/{r.version}: {r.wrote}" for r in rows if r.wrote]
    print(f"files the dry runs left in the notebooks' folders (must be none): {left or 0}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--only", default="")
    parser.add_argument("--budget", type=float, default=10.0)
    args = parser.parse_args()
    rows: list[Row] = []
    for case_dir in sorted(p for p in args.cases.iterdir() if (p / "meta.json").exists()):
        if args.only not in case_dir.name:
            continue
        for version in ("buggy", "fixed"):
            with case_copy(case_dir) as copy:
                try:
                    row = await run_notebook(copy, version, args.budget)
                except Exception as exc:  # a row, not a lost run
                    row = Row(case=case_dir.name, version=version, error=f"{type(exc).__name__}: {exc}")
            rows.append(row)
            twins = " ".join(f"{n}={v.split(':')[0]}" for n, v in row.twins.items())
            print(
                f"{row.case:<16} {version:<5} real={row.truth or 'clean'}@{row.truth_line} "
                f"dry={row.original} {twins} {row.error}",
                flush=True,
            )
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
