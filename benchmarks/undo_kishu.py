"""Kishu beside crane's undo (issue 37): the same JunoBench replay targets, restored by Kishu.

Kishu (PyPI ``kishu``, https://github.com/illinoisdata/kishu) checkpoints the kernel's variables after
every cell and restores any earlier commit (``kishu checkout``, ``kishu undo``). It cannot live in
crane's venv, so it runs in a kernel of its own venv (``--venv``, default ``/tmp/kishu-venv``:
``python3 -m venv /tmp/kishu-venv && /tmp/kishu-venv/bin/pip install kishu ipykernel pandas numpy
scikit-learn matplotlib seaborn statsmodels``), reached through a kernelspec this script writes under
``/tmp`` (``JUPYTER_PATH``), never into the user's Jupyter folders.

For each case and version, exactly as ``undo_replay.py`` does for crane: a fresh kernel (in the case's
folder) replays the setup cells; Kishu is attached by its in-kernel API (``init_kishu(path)`` on a copy
of the notebook under ``/tmp``: Kishu writes its metadata into the notebook file); the lead's KEEP cell
keeps a deep copy of every name (Kishu commits after it: the state before the target); the target runs
for real (Kishu commits again); then Kishu restores the commit before the target the way ``kishu undo``
does (the automatic commit before the latest, ``KishuForJupyter.checkout(commit, skip_notebook=True)``,
the very call the CLI sends to the kernel; here sent by the benchmark, since there is no Jupyter server
to look the kernel up in), and the lead's COMPARE says exact / wrong. Kishu's test mode
(``ENV_KISHU_TEST_MODE``) is on only because there is no frontend: it skips saving and reloading the
notebook in a browser and numbers commits by a counter; checkpoints and restores are unchanged.

Per run it records Kishu's restore time (in-kernel and round trip) and its cost while cells run: the
target's time with Kishu on against a second fresh kernel of the same venv that replays and runs the
target without Kishu (``--no-off`` skips it). ``--control`` skips the checkout (every target that
changed the state must then show as "wrong": proof that the comparison sees changes under Kishu too).
``--attach-first`` attaches Kishu before the setup cells, as Kishu is meant to be used: attached
later, Kishu swaps the namespace for a copy of its own, and functions defined before keep the old
dict as their globals. ``--with-crane`` also runs ``undo_replay.run_one`` on the same case right
after (crane's kernel, crane's venv), one heavy thing at a time.

Run by hand: ``python benchmarks/undo_kishu.py [--venv DIR] [--only SUBSTRING] [--no-off] [--control]
[--attach-first] [--with-crane]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from undo_replay import COMPARE, DEFAULT_CASES, KEEP, Run, run_one, target_index

from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.replay import replay, start_and_replay
from crane_lsp.notebook import read_notebook

KERNEL_NAME = "crane-bench-kishu"

#: in-kernel helpers, a module of their own (never a user name), installed by a silent request;
#: ``undo`` mirrors ``KishuCommand.undo``: check out the automatic commit before the latest.
HELPERS = r"""
import json, time

def init(path):
    import os
    import kishu
    # Kishu names the kernel by a "kernel-<id>.json" connection file, or in its own tests by this
    # variable; crane's kernels have another file name, and the id only labels Kishu's record.
    os.environ["TEST_NOTEBOOK_PATH"] = path
    kishu.init_kishu(path)
    return kishu.__version__

def undo(checkout=True):
    from IPython import get_ipython
    from kishu.storage.commit import CommitEntryKind, KishuCommit
    from kishu.storage.commit_graph import KishuCommitGraph
    k = get_ipython().user_ns["_kishu"]
    db = k.database_path()
    ids = [n.commit_id for n in KishuCommitGraph.new_var_graph(db).list_history()]
    entries = KishuCommit(db).get_commits(ids)
    auto = [entries[i] for i in ids if entries[i].kind == CommitEntryKind.jupyter]
    if len(auto) < 2:
        return json.dumps({"error": "fewer than two automatic commits"})
    t0 = time.perf_counter()
    if checkout:
        k.checkout(auto[1].commit_id, skip_notebook=True)
    ms = (time.perf_counter() - t0) * 1000
    return json.dumps({
        "ms": ms,
        "latest": auto[0].raw_cell or "",
        "restored": auto[1].raw_cell or "",
        "checkpoint_s": auto[0].checkpoint_runtime_s,
        "commits": len(auto),
    })

def functions(names):
    # for each differing name that was a function: is the restored one the same code, and does it
    # still read the notebook's globals (a copy of them would see stale values)?
    import sys
    from IPython import get_ipython
    ns = get_ipython().user_ns
    kept = sys.modules["_crane_undo_bench"].kept
    out = {}
    for name in names:
        before, now = kept[name][0], ns.get(name)
        if not (callable(before) and hasattr(before, "__code__") and hasattr(now, "__code__")):
            continue
        same_code = before.__code__ == now.__code__ and before.__defaults__ == now.__defaults__
        out[name] = "same code" if same_code else "other code"
        if now.__globals__ is not before.__globals__:
            out[name] += ", other globals"
            out[name] += " (the kept one's were the namespace)" if before.__globals__ is ns else ""
    return json.dumps(out)

def last():
    return undo(checkout=False)
"""
INSTALL = (
    f"exec({HELPERS!r}, __import__('sys').modules.setdefault('_kishu_bench', "
    "__import__('types').ModuleType('_kishu_bench')).__dict__)"
)
HELPER = "__import__('sys').modules['_kishu_bench']"


@dataclass
class KishuRun:
    case: str
    version: str
    raised: str = ""
    on_ms: float | None = None  # the target with Kishu attached (its commit included)
    off_ms: float | None = None  # the target in a kernel without Kishu
    keep_ms: float | None = None  # the KEEP cell with Kishu on: Kishu's first, full checkpoint
    checkpoint_ms: float | None = None  # Kishu's own figure for the target's checkpoint
    restore_ms: float | None = None  # in-kernel checkout
    roundtrip_ms: float | None = None
    differ: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    uncopied: list[str] = field(default_factory=list)
    functions: dict[str, str] = field(default_factory=dict)  # differing functions: how they differ
    hook_errors: str = ""
    error: str = ""
    crane: Run | None = None

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        return "wrong" if self.differ or self.missing or self.extra else "exact"


def write_kernelspec(venv: Path, root: Path) -> None:
    """A kernelspec for the Kishu venv under ``root`` (put on ``JUPYTER_PATH``), Kishu's store there too."""
    spec = root / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    kernel = {
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "kishu bench",
        "language": "python",
        "env": {"ENV_KISHU_TEST_MODE": "1", "KISHU_PATH_ROOT": str(root), "MPLBACKEND": "agg"},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("JUPYTER_PATH")]))


def kishu_version(venv: Path) -> str:
    """Kishu's version in ``venv``, or why it is not usable there."""
    python = venv / "bin" / "python"
    if not python.exists():
        return f"no Python at {python}"
    probe = subprocess.run(
        [str(python), "-c", "import kishu, ipykernel; print(kishu.__version__)"],
        capture_output=True,
        text=True,
    )
    return (
        probe.stdout.strip()
        if probe.returncode == 0
        else f"kishu does not import: {probe.stderr.strip()[-300:]}"
    )


async def _json(link: KernelLink, expression: str, timeout: float) -> dict:
    answer = (await link.evaluate({"x": expression}, timeout)).get("x", {})
    if answer.get("status") != "ok":
        return {"error": f"{answer.get('ename')}: {answer.get('evalue')}"}
    value = eval(answer["data"]["text/plain"])  # the repr of a str
    return json.loads(value) if value.startswith("{") else {"value": value}


async def time_off(case_dir: Path, version: str) -> float | None:
    """The target's time in a fresh kernel of the Kishu venv, without Kishu."""
    nb = read_notebook(case_dir / f"{version}.ipynb")
    target = target_index(nb)
    link, _ = await start_and_replay(nb, target, kernel_name=KERNEL_NAME, cell_timeout=120)
    try:
        if not (await link.execute(KEEP, timeout=120)).ok:
            return None
        t0 = time.perf_counter()
        await link.execute(nb.code_cells[target].source, timeout=120)
        return (time.perf_counter() - t0) * 1000
    finally:
        await link.close()


async def run_kishu(
    case_dir: Path, version: str, scratch: Path, control: bool = False, attach_first: bool = False
) -> KishuRun:
    row = KishuRun(case_dir.name, version)
    nb = read_notebook(case_dir / f"{version}.ipynb")
    target = target_index(nb)
    source = nb.code_cells[target].source
    copy = scratch / f"{case_dir.name}-{version}.ipynb"  # Kishu writes its metadata into this file
    shutil.copyfile(case_dir / f"{version}.ipynb", copy)
    if attach_first:  # Kishu's own usage: attached in the notebook's first cell, then every cell runs
        link = await KernelLink.start(case_dir, kernel_name=KERNEL_NAME, quiet=True)
    else:  # as undo_replay.py turns crane's undo on: after the setup cells
        link, _ = await start_and_replay(nb, target, kernel_name=KERNEL_NAME, cwd=case_dir, cell_timeout=120)
    try:
        installed = await link.evaluate({"x": INSTALL}, 60)
        if installed.get("x", {}).get("status") != "ok":
            row.error = f"helpers: {installed.get('x')}"
            return row
        # a cell, as a user attaches Kishu (attached by a silent request, the next cell hangs); Kishu's
        # post-cell hook then complains of no pre-cell call for this one cell, as it does in Jupyter
        attached = await link.execute(f"{HELPER}.init({str(copy)!r})", timeout=120)
        if not attached.ok:
            row.error = f"init_kishu: {attached.ename}: {attached.evalue}"
            return row
        if attach_first:
            await replay(link, nb, target, cell_timeout=120)
        t0 = time.perf_counter()
        kept = await link.execute(KEEP, timeout=300)
        row.keep_ms = (time.perf_counter() - t0) * 1000
        if not kept.ok:
            row.error = f"keeping the state: {kept.ename}: {kept.evalue}"
            return row
        t0 = time.perf_counter()
        real = await link.execute(source, timeout=300)
        row.on_ms = (time.perf_counter() - t0) * 1000
        row.raised = "" if real.ok else (real.ename or real.status)
        output = kept.stdout + kept.stderr + real.stdout + real.stderr
        errors = [line for line in output.splitlines() if "Error in callback" in line]
        row.hook_errors = "; ".join(errors)[:200]
        t0 = time.perf_counter()
        undone = await _json(link, f"{HELPER}.undo()" if not control else f"{HELPER}.last()", 300)
        row.roundtrip_ms = (time.perf_counter() - t0) * 1000
        if "error" in undone:
            row.error = f"checkout: {undone['error']}"
            return row
        if undone["latest"].strip() != source.strip():
            row.error = "Kishu's latest commit is not the target (a hook failed?)"
            return row
        row.restore_ms = undone["ms"]
        row.checkpoint_ms = (undone["checkpoint_s"] or 0) * 1000
        found = await _json(link, COMPARE, 60)
        if "error" in found:
            row.error = f"comparing: {found['error']}"
            return row
        row.differ, row.missing, row.extra = found["differ"], found["missing"], found["extra"]
        row.uncopied = found["uncopied"]
        if row.differ:
            row.functions = await _json(link, f"{HELPER}.functions({row.differ!r})", 60)
    except Exception as exc:  # a row, and go on
        row.error = f"{type(exc).__name__}: {exc}"
    finally:
        await link.close()
    return row


def _ms(value: float | None) -> str:
    return f"{value:.0f}" if value is not None else "-"


def report(rows: list[KishuRun], console: Console) -> None:
    table = Table(title="Kishu restoring every JunoBench replay target (buggy raises, fixed runs clean)")
    columns = ["case", "version", "raised", "target ms off/on", "ckpt ms", "restore ms", "kishu", "differs"]
    columns += ["crane", "crane undo ms"] if any(r.crane for r in rows) else []
    for column in columns:
        table.add_column(column)
    for r in rows:
        names = [f"{n} ({r.functions[n]})" if n in r.functions else n for n in r.differ]
        detail = r.error or ", ".join(names + r.missing + r.extra) or "-"
        cells = [r.case, r.version, r.raised or "-", f"{_ms(r.off_ms)}/{_ms(r.on_ms)}", _ms(r.checkpoint_ms)]
        cells += [_ms(r.restore_ms), r.verdict, detail[:90]]
        if r.crane:
            cells += [r.crane.verdict, _ms(r.crane.undo_ms)]
        elif len(columns) > 8:
            cells += ["-", "-"]
        table.add_row(*cells)
    console.print(table)
    for version in ("buggy", "fixed"):
        runs = [r for r in rows if r.version == version]
        counts = {v: sum(r.verdict == v for r in runs) for v in ("exact", "wrong", "error")}
        line = f"{version}: {len(runs)} targets; Kishu " + ", ".join(f"{v} {n}" for v, n in counts.items())
        # under Kishu, In and Out are compared too (Kishu's namespace leaves them among the user's names)
        beyond = sum(bool(set(r.differ + r.missing + r.extra) - {"In", "Out"}) for r in runs)
        line += f" ({beyond} with names other than In/Out differing)"
        restores = [r.restore_ms for r in runs if r.restore_ms is not None]
        if restores:
            line += f"; restore median {statistics.median(restores):.0f} ms, max {max(restores):.0f} ms"
        extra = [r.on_ms - r.off_ms for r in runs if r.on_ms is not None and r.off_ms is not None]
        if extra:
            line += f"; target on-off median {statistics.median(extra):+.0f} ms, max {max(extra):+.0f} ms"
        keeps = [r.keep_ms for r in runs if r.keep_ms is not None]
        if keeps:
            line += f"; first commit (KEEP cell) median {statistics.median(keeps):.0f} ms"
        crane = [r.crane for r in runs if r.crane]
        if crane:
            cv = {
                v: sum(c.verdict == v for c in crane) for v in ("exact", "said", "wrong", "refused", "error")
            }
            times = [c.undo_ms for c in crane if c.undo_ms is not None and not c.refused]
            line += "; crane " + ", ".join(f"{v} {n}" for v, n in cv.items())
            line += f", undo median {statistics.median(times):.0f} ms" if times else ""
        console.print(line)
    functions = [f"{r.case}/{r.version}" for r in rows if r.differ and set(r.differ) == set(r.functions)]
    console.print(
        f"runs whose only differing names are functions (Kishu restores them as new function objects; "
        f"the comparison tells functions by identity): {len(functions)} {', '.join(functions)}"
    )
    hooks = [f"{r.case}/{r.version}" for r in rows if r.hook_errors]
    console.print(f"runs where a Kishu hook printed an error: {len(hooks)} {', '.join(hooks)}")


async def main_async(args: argparse.Namespace, scratch: Path) -> list[KishuRun]:
    folders = Path(args.cases).iterdir()
    cases = sorted(p for p in folders if (p / "meta.json").exists() and args.only in p.name)
    rows = []
    for case in cases:
        for version in ("buggy", "fixed"):
            row = await run_kishu(case, version, scratch, args.control, args.attach_first)
            if not args.no_off:
                try:
                    row.off_ms = await time_off(case, version)
                except Exception as exc:  # keep the Kishu row
                    print(f"{case.name} {version}: off run failed: {exc}", file=sys.stderr)
            if args.with_crane:
                row.crane = await run_one(case, version)
            rows.append(row)
            print(f"{case.name} {version}: kishu {row.verdict} {row.error}", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default="/tmp/kishu-venv", help="a venv with kishu and ipykernel")
    parser.add_argument("--cases", default=str(DEFAULT_CASES), help="the junoreplay folder")
    parser.add_argument("--only", default="", help="only cases whose folder name contains this")
    parser.add_argument("--no-off", action="store_true", help="skip the kernels without Kishu (no overhead)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="skip Kishu's checkout: the comparison must then see every change",
    )
    parser.add_argument(
        "--attach-first", action="store_true", help="attach Kishu before the setup cells (its own usage)"
    )
    parser.add_argument("--with-crane", action="store_true", help="also run crane's undo on each case")
    args = parser.parse_args(argv)
    console = Console(width=170)
    version = kishu_version(Path(args.venv))
    if not version[:1].isdigit():
        console.print(f"Kishu cannot run here: {version}")
        return 2
    console.print(f"kishu {version} from {args.venv}")
    with tempfile.TemporaryDirectory(prefix="crane-kishu-") as tmp:
        write_kernelspec(Path(args.venv), Path(tmp))
        rows = asyncio.run(main_async(args, Path(tmp)))
    report(rows, console)
    return 1 if any(r.verdict in ("wrong", "error") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
