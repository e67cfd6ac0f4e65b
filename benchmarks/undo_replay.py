"""How exact undo is on real code (issue 37): every JunoBench replay target, buggy and fixed, undone.

For each case and version (``buggy.ipynb``: the target really raises; ``fixed.ipynb``: the human fix,
runs clean) a fresh kernel replays the setup cells, undo is turned on, and the state is recorded:
every user name's value is kept aside in the kernel (``copy.deepcopy`` into a module of its own, never
a user name) together with its ``id()``. Then the target runs for real, crane is asked what it changed
(``cellChanges``) and to undo it, and each name is compared with what was kept:

- **exact**: every name is back, equal to its value before the target (arrays and frames compared
  with NaN equal to NaN, estimators by their parameters and fitted attributes, anything else by
  ``==`` or, where that is not a bool, by its pickle), and the names the target created are gone;
- **said**: not exact, but every name that differs is one the undo listed as kept (it said so);
- **wrong**: a name differs and the undo did not say so (a silent half-restore: the failure undo
  must never have).

It prints one row per run and the totals: targets that changed state (before raising, for the buggy
ones), exact restores, undo times. Run by hand: ``python benchmarks/undo_replay.py [--cases DIR]
[--only SUBSTRING] [--control]`` (``--control``: no undo,
so every target that changed the state must show as "wrong": proof that the comparison sees changes).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from crane_lsp import undo  # noqa: E402
from crane_lsp.kernel.replay import start_and_replay  # noqa: E402
from crane_lsp.notebook import read_notebook  # noqa: E402
from crane_lsp.settings import Settings  # noqa: E402

DEFAULT_CASES = REPO / "crane_lsp" / "data" / "junoreplay"

#: one cell of the benchmark's own before the target (the held copy is taken at the target's start):
#: ``undo_replay_kernel.py`` as a module no cell reads, keeping every user name's value and id()
KEEP = (
    "import sys as _s, types as _t\n"
    "_m = _s.modules.setdefault('_crane_undo_bench', _t.ModuleType('_crane_undo_bench'))\n"
    f"exec({(Path(__file__).parent / 'undo_replay_kernel.py').read_text()!r}, _m.__dict__)\n"
    "_m.keep(get_ipython())\n"
    "del _s, _t, _m\n"
)
COMPARE = "__import__('sys').modules['_crane_undo_bench'].report(get_ipython())"


@dataclass
class Run:
    case: str
    version: str
    raised: str = ""
    changed: list[str] = field(default_factory=list)
    undo_ms: float | None = None
    restored: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    refused: str = ""
    differ: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    uncopied: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def verdict(self) -> str:
        if self.error or self.refused:
            return "refused" if self.refused else "error"
        wrong = [n for n in [*self.differ, *self.missing, *self.extra] if n not in self.kept]
        if wrong:
            return "wrong"
        return "exact" if not (self.differ or self.missing or self.extra) else "said"


def target_index(nb: object) -> int:
    cells = nb.code_cells  # type: ignore[attr-defined]
    tagged = [i for i, c in enumerate(cells) if "replay-target" in c.tags]
    return tagged[-1] if tagged else len(cells) - 1


async def run_one(case_dir: Path, version: str, control: bool = False) -> Run:
    row = Run(case_dir.name, version)
    nb = read_notebook(case_dir / f"{version}.ipynb")
    target = target_index(nb)
    link, _report = await start_and_replay(nb, target, cell_timeout=120)
    try:
        await undo.configure(link, Settings(undo=True))
        kept = await link.execute(KEEP, timeout=120)
        if not kept.ok:
            row.error = f"keeping the state: {kept.ename}: {kept.evalue}"
            return row
        real = await link.execute(nb.code_cells[target].source, timeout=120)
        row.raised = "" if real.ok else (real.ename or real.status)
        changes = await undo.changes(link)
        row.changed = [*changes.bound, *changes.rebound, *changes.deleted, *changes.mutated]
        t0 = time.perf_counter()
        answer = await undo.undo(link) if not control else undo.UndoAnswer()
        row.undo_ms = (time.perf_counter() - t0) * 1000
        row.refused = answer.refused or ""
        row.restored, row.deleted = answer.restored, answer.deleted
        row.kept = [k.name for k in answer.kept]
        compared = (await link.evaluate({"c": COMPARE}, 60)).get("c", {})
        if compared.get("status") != "ok":
            row.error = f"comparing: {compared.get('ename')}: {compared.get('evalue')}"
            return row
        found = json.loads(ast.literal_eval(compared["data"]["text/plain"]))  # the JSON string's repr
        row.differ, row.missing, row.extra = found["differ"], found["missing"], found["extra"]
        row.moved, row.uncopied = found["moved"], found["uncopied"]
    except Exception as exc:  # a row, and go on
        row.error = f"{type(exc).__name__}: {exc}"
    finally:
        await link.close()
    return row


def report(rows: list[Run], console: Console) -> None:
    table = Table(title="undo of every JunoBench replay target (buggy raises, fixed runs clean)")
    for column in ("case", "version", "raised", "changed", "undo ms", "verdict", "differs / kept"):
        table.add_column(column)
    for r in rows:
        detail = ", ".join(r.differ + r.missing + r.extra) or "-"
        if r.kept:
            detail += f" / kept {', '.join(r.kept)}"
        if r.refused or r.error:
            detail = r.refused or r.error
        ms = f"{r.undo_ms:.0f}" if r.undo_ms is not None else "-"
        changed = ", ".join(r.changed[:4]) + (" ..." if len(r.changed) > 4 else "") or "-"
        table.add_row(r.case, r.version, r.raised or "-", changed, ms, r.verdict, detail)
    console.print(table)
    for version in ("buggy", "fixed"):
        runs = [r for r in rows if r.version == version]
        changers = [r for r in runs if r.changed]
        verdicts = ("exact", "said", "wrong", "refused", "error")
        counts = {v: sum(r.verdict == v for r in runs) for v in verdicts}
        times = [r.undo_ms for r in runs if r.undo_ms is not None and not r.refused]
        console.print(
            f"{version}: {len(runs)} targets, {len(changers)} changed the state"
            f"{' before raising' if version == 'buggy' else ''}; "
            + ", ".join(f"{v} {n}" for v, n in counts.items())
            + (f"; undo median {statistics.median(times):.0f} ms, max {max(times):.0f} ms" if times else "")
        )
    unjudged = sorted({f"{r.case}:{n}" for r in rows for n in r.uncopied})
    console.print(
        f"names not judged (no deep copy, or unequal to their own copy at once): {len(unjudged)}"
        + (f" ({', '.join(unjudged[:8])}{' ...' if len(unjudged) > 8 else ''})" if unjudged else "")
    )
    moved = sum(bool(r.moved) for r in rows)
    console.print(f"runs where a restored name is a new object (new id()): {moved} of {len(rows)}")


async def main_async(args: argparse.Namespace) -> list[Run]:
    folders = Path(args.cases).iterdir()
    cases = sorted(p for p in folders if (p / "meta.json").exists() and args.only in p.name)
    rows = []
    for case in cases:
        for version in ("buggy", "fixed"):
            rows.append(await run_one(case, version, args.control))
            print(f"{case.name} {version}: {rows[-1].verdict}", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=str(DEFAULT_CASES), help="the junoreplay folder")
    parser.add_argument("--only", default="", help="only cases whose folder name contains this")
    parser.add_argument(
        "--control", action="store_true", help="skip the undo: the comparison must then see every change"
    )
    args = parser.parse_args(argv)
    rows = asyncio.run(main_async(args))
    report(rows, Console(width=160))
    return 1 if any(r.verdict in ("wrong", "error") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
