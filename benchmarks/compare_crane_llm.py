"""Side-by-side with crane-llm 1.0.1 (the CRANE-LLM paper's JupyterLab extension): exact checks and speed.

crane-llm is never imported here and never installed into this environment: it lives in its own
virtualenv and runs inside a kernel started with that virtualenv's interpreter, where we call it the way
its JupyterLab button does (``load_crane_llm()`` when the kernel is idle, then
``run_crane_llm_payload(..., use_llm=False)``, the built-in checks only; nothing is sent anywhere). As a
second guard its LLM settings point at a closed port on 127.0.0.1 and no API key is set.

1. Exact checks. For every case in ``junoreplay`` (buggy and fixed): a fresh kernel per tool with the
   setup cells replayed; ours: the checks of ``Pipeline.from_settings(Settings(dry_run="off"), link)``;
   crane-llm: its checks on the same target; then the target is RUN in our kernel for the truth (and in
   its kernel too, to confirm both kernels held the same state). Totals: buggy targets caught with the
   right exception class, fixed targets flagged (false alarms).
2. Runtime-summary speed: a 5M-row x 20 mixed-dtype DataFrame in each kernel; our probe's snapshot of it
   vs crane-llm's runtime information for a cell that uses it (``get_live_runinfo_json``).

Setup, once (a separate virtualenv; --system-site-packages lends it pandas/numpy/sklearn/ipykernel):

    python3 -m venv --system-site-packages /tmp/cranellm-venv
    /tmp/cranellm-venv/bin/pip install crane-llm==1.0.1

Run by hand (several minutes; 4 kernel starts per case):

    python3 benchmarks/compare_crane_llm.py --crane-llm-python /tmp/cranellm-venv/bin/python \
        [--cases pandas_1,sklearn_3] [--root DIR] [--rows 5000000] [--no-speed] [--no-cases]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crane_lsp.kernel.link import KernelLink  # noqa: E402
from crane_lsp.kernel.replay import sanitize, start_and_replay  # noqa: E402
from crane_lsp.notebook import Notebook, read_ipynb  # noqa: E402
from crane_lsp.pipeline import Pipeline  # noqa: E402
from crane_lsp.settings import Settings  # noqa: E402
from crane_lsp.snapshot import ProbeQuery  # noqa: E402

DEFAULT_ROOT = REPO / "crane_lsp" / "data" / "junoreplay"  # shipped with the package
VENV_HELP = """crane-llm must live in its own virtualenv (never in this environment). Create it with:

    python3 -m venv --system-site-packages /tmp/cranellm-venv
    /tmp/cranellm-venv/bin/pip install crane-llm==1.0.1

then pass --crane-llm-python /tmp/cranellm-venv/bin/python"""

#: any LLM call crane-llm might still try fails at once on a closed local port
CLOSED_PORT_URL = "http://127.0.0.1:9/v1"
PAYLOAD_BEGIN, PAYLOAD_END = "<<<CRANE-LLM:BEGIN>>>", "<<<CRANE-LLM:END>>>"

console = Console(width=160)


# ----------------------------------------------------------------------------- crane-llm's kernel


def crane_llm_version(python: str) -> str | None:
    """The crane-llm version importable by ``python``, or None."""
    try:
        out = subprocess.run(
            [python, "-c", "import crane_llm, ipykernel; print(crane_llm.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def kernel_env() -> dict[str, str]:
    """Our environment minus every LLM credential, with crane-llm's endpoints on a closed local port."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    env.update(
        PYDEVD_DISABLE_FILE_VALIDATION="1",
        CRANE_LLM_BASE_URL=CLOSED_PORT_URL,
        OPENAI_BASE_URL=CLOSED_PORT_URL,
        CRANE_LLM_API_KEY="",
        MPLBACKEND="Agg",
    )
    return env


@dataclass
class Run:
    status: str
    ename: str | None = None
    evalue: str | None = None
    stdout: str = ""
    seconds: float = 0.0


class KernelDied(RuntimeError):
    pass


class ForeignKernel:
    """A fresh ipykernel run by another interpreter (crane-llm's virtualenv), driven asynchronously."""

    def __init__(self, python: str, spec_dir: Path) -> None:
        self.python = python
        self.spec_dir = spec_dir
        self.km: Any = None
        self.kc: Any = None

    @staticmethod
    def write_spec(python: str, root: Path) -> Path:
        folder = root / "kernels" / "cranellm-bench"
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "crane-llm 1.0.1 (bench)",
            "language": "python",
        }
        (folder / "kernel.json").write_text(json.dumps(spec))
        return root / "kernels"

    async def start(self, cwd: Path) -> None:
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager

        ksm = KernelSpecManager(kernel_dirs=[str(self.spec_dir)])
        self.km = AsyncKernelManager(kernel_name="cranellm-bench", kernel_spec_manager=ksm)
        await self.km.start_kernel(
            cwd=str(cwd), env=kernel_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.kc = self.km.client()
        self.kc.start_channels()
        await self.watch(self.kc.wait_for_ready(timeout=120))

    async def watch(self, awaitable: Any) -> Any:
        """``awaitable``'s result, or ``KernelDied`` as soon as the kernel process is gone."""
        task = asyncio.ensure_future(awaitable)
        while not task.done():
            await asyncio.wait({task}, timeout=1.0)
            if not task.done() and not await self.km.is_alive():
                task.cancel()
                raise KernelDied(f"the crane-llm kernel died (exit code {self.km.provisioner.exit_code})")
        return task.result()

    async def run(self, code: str, *, store_history: bool = True, timeout: float = 600) -> Run:
        out: list[str] = []
        err: dict[str, Any] = {}

        def hook(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                out.append(content.get("text", ""))
            elif kind == "error":
                err.update(content)

        t0 = time.perf_counter()
        try:
            reply = await self.watch(
                self.kc.execute_interactive(
                    code, store_history=store_history, timeout=timeout, output_hook=hook, stop_on_error=False
                )
            )
        except TimeoutError:
            await self.km.interrupt_kernel()
            return Run("timeout", seconds=time.perf_counter() - t0)
        content = reply["content"]
        return Run(
            content.get("status", "error"),
            content.get("ename") or err.get("ename"),
            content.get("evalue") or err.get("evalue"),
            "".join(out),
            time.perf_counter() - t0,
        )

    async def close(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            try:
                await self.km.shutdown_kernel(now=True)
            except Exception as exc:  # a dead kernel is already what we want
                console.print(f"[dim]crane-llm kernel shutdown: {exc}[/]")


LOAD_BACKEND = (  # what its JupyterLab extension runs when a kernel goes idle (guard off by default)
    "from crane_llm.nb_extension.api import load_crane_llm, set_guard\nload_crane_llm();\nset_guard(False);"
)


def check_call(source: str, cells: list[dict[str, str]]) -> str:
    """What its toolbar button runs, with "Use the LLM" switched off (checks only)."""
    return (
        "from crane_llm.nb_extension.api import run_crane_llm_payload\n"
        f"print(run_crane_llm_payload(source={json.dumps(source)}, cell_id='replay-target', "
        f"include_runinfo=True, use_llm=False, notebook_cells_json={json.dumps(json.dumps(cells))}))"
    )


def parse_payload(stdout: str) -> dict[str, Any]:
    start, end = stdout.find(PAYLOAD_BEGIN), stdout.rfind(PAYLOAD_END)
    if start < 0 or end < start:
        return {"ok": False, "error": f"no payload in its output: {stdout[-300:]!r}"}
    payload: dict[str, Any] = json.loads(stdout[start + len(PAYLOAD_BEGIN) : end])
    return payload


# ----------------------------------------------------------------------------- one case


@dataclass
class Verdict:
    exception: str | None = None  # None: nothing found
    rule: str | None = None
    line: int | None = None  # 0-based
    seconds: float = 0.0
    error: str | None = None  # the tool failed, or setup failed

    def show(self) -> str:
        if self.error:
            return f"[yellow]error: {self.error[:60]}[/]"
        if self.exception is None:
            return "[dim]-[/]"
        where = f" L{self.line + 1}" if self.line is not None else ""
        return f"{self.exception}{where} [dim]{self.rule or ''}[/]"


@dataclass
class Row:
    case: str
    version: str
    label: str | None  # meta.json ename for buggy, None for fixed
    truth: str | None = None  # what running the target raised in our kernel
    truth_line: int | None = None  # 0-based line of the target where it raised
    truth_theirs: str | None = None
    ours: Verdict = field(default_factory=Verdict)
    theirs: Verdict = field(default_factory=Verdict)
    setup_errors: list[str] = field(default_factory=list)


def split(nb: Notebook) -> tuple[int, list[int]]:
    cells = nb.code_cells
    target = next((i for i, c in enumerate(cells) if "replay-target" in c.tags), len(cells) - 1)
    setup = [i for i, c in enumerate(cells) if "replay-setup" in c.tags and i != target]
    return target, setup


async def run_ours(nb: Notebook, target: int, row: Row, timeout: float) -> None:
    link: KernelLink | None = None
    try:
        link, report = await start_and_replay(nb, target, cell_timeout=timeout)
        row.setup_errors += [f"ours: {r.describe_failure()}" for r in report.failures]
        source = nb.code_cells[target].source
        t0 = time.perf_counter()
        pred = (
            await Pipeline.from_settings(Settings(dry_run="off"), link).predict(source, layers={"checks"})
        ).prediction
        seconds = time.perf_counter() - t0
        if pred.crash:
            row.ours = Verdict(pred.exception or "?", pred.source.check_id, pred.line, seconds)
        else:  # a note such as "probe failed" says why nothing could be checked
            row.ours = Verdict(None, "; ".join(pred.notes)[:60] or None, None, seconds)
        result = await link.execute(source, timeout=timeout)
        row.truth = result.ename if not result.ok else None
        row.truth_line = result.line
        if result.status == "timeout":
            row.truth = "timeout"
    except Exception as exc:
        row.ours.error = f"{type(exc).__name__}: {exc}"
    finally:
        if link is not None:
            await link.close()


async def run_theirs(
    python: str, spec_dir: Path, nb: Notebook, target: int, row: Row, timeout: float
) -> None:
    kernel = ForeignKernel(python, spec_dir)
    cells = nb.code_cells
    _, setup = split(nb)
    try:
        assert nb.path is not None
        await kernel.start(nb.path.parent)
        loaded = await kernel.run(LOAD_BACKEND, store_history=False)
        if loaded.status != "ok":
            raise RuntimeError(f"load_crane_llm failed: {loaded.ename}: {loaded.evalue}")
        for i in setup:
            r = await kernel.run(sanitize(cells[i].source), timeout=timeout)
            if r.status != "ok":
                row.setup_errors.append(f"crane-llm: cell {i + 1} raised {r.ename}: {r.evalue}")
        source = cells[target].source
        listing = [{"id": c.cell_id or f"cell-{i}", "source": c.source} for i, c in enumerate(cells)]
        called = await kernel.run(check_call(source, listing), store_history=False, timeout=timeout)
        payload = parse_payload(called.stdout)
        verdict = payload.get("verdict") or {}
        if not payload.get("ok"):
            row.theirs = Verdict(error=str(payload.get("error") or called.evalue), seconds=called.seconds)
        elif verdict.get("tone") == "crash":
            row.theirs = Verdict(
                verdict.get("exception") or "?", verdict.get("rule"), verdict.get("line"), called.seconds
            )
        else:
            row.theirs = Verdict(None, verdict.get("tone"), None, called.seconds)
        truth = await kernel.run(source, timeout=timeout)
        row.truth_theirs = truth.ename if truth.status != "ok" else None
    except Exception as exc:
        row.theirs.error = f"{type(exc).__name__}: {exc}"
    finally:
        await kernel.close()


def line_of_theirs(line: Any) -> int | None:
    """crane-llm's verdict line is 1-based in the cell (its CheckFinding.line); ours 0-based."""
    return line - 1 if isinstance(line, int) and line > 0 else None


async def run_case(folder: Path, python: str, spec_dir: Path, timeout: float) -> list[Row]:
    meta = json.loads((folder / "meta.json").read_text())
    rows = []
    for version in ("buggy", "fixed"):
        path = folder / f"{version}.ipynb"
        if not path.exists():
            continue
        nb = read_ipynb(path)
        target, _ = split(nb)
        label = meta.get("observed", {}).get("buggy", {}).get("target_ename") if version == "buggy" else None
        row = Row(folder.name, version, label)
        await asyncio.gather(
            run_ours(nb, target, row, timeout), run_theirs(python, spec_dir, nb, target, row, timeout)
        )
        if row.theirs.error and "KernelDied" in row.theirs.error:  # retried once, alone
            console.print(f"[yellow]{folder.name}/{version}: {row.theirs.error}; retrying crane-llm alone[/]")
            row.theirs, row.setup_errors = Verdict(), [e for e in row.setup_errors if e.startswith("ours")]
            await run_theirs(python, spec_dir, nb, target, row, timeout)
        row.theirs.line = line_of_theirs(row.theirs.line)
        rows.append(row)
        console.print(
            f"{row.case:15} {version:5}  truth={truth_text(row, plain=True):26} ours={row.ours.show():50} "
            f"crane-llm={row.theirs.show()}",
            highlight=False,
        )
    return rows


def truth_text(r: Row, plain: bool = False) -> str:
    if not r.truth:
        return "clean" if plain else "[dim]clean[/]"
    return f"{r.truth} L{r.truth_line + 1}" if r.truth_line is not None else r.truth


def same_class(predicted: str | None, truth: str | None) -> bool:
    """Same exception class; a module prefix (``numpy.exceptions.AxisError``) is ignored."""
    if not predicted or not truth:
        return False
    return predicted.rsplit(".", 1)[-1] == truth.rsplit(".", 1)[-1]


def report(rows: list[Row]) -> None:
    table = Table(title="crane-lsp checks vs crane-llm 1.0.1 checks on junoreplay (same kernel state)")
    for col in ("case", "version", "truth", "ours", "crane-llm", "ms ours/theirs"):
        table.add_column(col)

    def mark(r: Row, v: Verdict) -> str:
        if r.version == "buggy":
            ok = same_class(v.exception, r.truth)
            return ("[green]" if ok else "[red]" if v.exception else "") + v.show()
        return ("[red]FALSE ALARM " if v.exception else "") + v.show()

    for r in rows:
        truth = truth_text(r)
        if r.truth_theirs != r.truth:
            truth += f" [yellow](in its kernel: {r.truth_theirs})[/]"
        table.add_row(
            r.case,
            r.version,
            truth,
            mark(r, r.ours),
            mark(r, r.theirs),
            f"{r.ours.seconds * 1000:.0f}/{r.theirs.seconds * 1000:.0f}",
        )
    console.print(table)

    buggy = [r for r in rows if r.version == "buggy" and r.truth]
    fixed = [r for r in rows if r.version == "fixed" and not r.truth]
    odd = [r for r in rows if (r.version == "buggy") != bool(r.truth)]
    totals = Table(title="totals")
    for col in ("", "crane-lsp", "crane-llm 1.0.1"):
        totals.add_column(col)

    caught = [sum(1 for r in buggy if same_class(v(r).exception, r.truth)) for v in (_o, _t)]
    flagged = [sum(1 for r in buggy if v(r).exception) for v in (_o, _t)]
    alarms = [sum(1 for r in fixed if v(r).exception) for v in (_o, _t)]
    errors = [sum(1 for r in rows if v(r).error) for v in (_o, _t)]
    n_b, n_f = len(buggy), len(fixed)
    totals.add_row("buggy caught, right exception class", *(f"{c}/{n_b}" for c in caught))
    right_line = [
        sum(1 for r in buggy if same_class(v(r).exception, r.truth) and v(r).line == r.truth_line)
        for v in (_o, _t)
    ]
    totals.add_row("  ... and on the line that raised", *(f"{c}/{n_b}" for c in right_line))
    totals.add_row("buggy flagged (any class)", *(f"{c}/{n_b}" for c in flagged))
    totals.add_row("fixed flagged (false alarms)", *(f"{c}/{n_f}" for c in alarms))
    totals.add_row("tool errors", *(str(c) for c in errors))
    only_ours = [r.case for r in buggy if same_class(r.ours.exception, r.truth) and not r.theirs.exception]
    only_theirs = [r.case for r in buggy if same_class(r.theirs.exception, r.truth) and not r.ours.exception]
    console.print(totals)
    console.print(f"caught by crane-lsp only: {', '.join(only_ours) or '-'}")
    console.print(f"caught by crane-llm only: {', '.join(only_theirs) or '-'}")
    if odd:
        console.print(
            "[yellow]not counted (the target did not behave as labelled here): "
            + ", ".join(f"{r.case}/{r.version} ran {r.truth or 'clean'}" for r in odd)
        )
    setup = [f"{r.case}/{r.version}: {e}" for r in rows for e in r.setup_errors]
    if setup:
        console.print("[yellow]setup cells that raised:[/]\n  " + "\n  ".join(setup))


def _o(r: Row) -> Verdict:
    return r.ours


def _t(r: Row) -> Verdict:
    return r.theirs


# ----------------------------------------------------------------------------- speed


def big_frame_code(rows: int) -> str:
    """A {rows} x 20 mixed-dtype frame named ``df``, identical in both kernels (fixed seed)."""
    return f"""
import numpy as np, pandas as pd
_r = np.random.default_rng(7)
_n = {rows}
_words = [f"v{{k}}" for k in range(500)]
df = pd.DataFrame({{
    **{{f"f{{i}}": _r.normal(size=_n) for i in range(5)}},
    "f_nan": np.where(_r.random(_n) < 0.1, np.nan, _r.random(_n)),
    **{{f"i{{i}}": _r.integers(0, 1_000_000, _n) for i in range(4)}},
    "i32": _r.integers(0, 100, _n).astype("int32"),
    "f32": _r.random(_n).astype("float32"),
    **{{f"s{{i}}": pd.Series(_r.choice(_words, _n), dtype=object) for i in range(3)}},
    "s_nan": pd.Series(np.where(_r.random(_n) < 0.05, None, "x"), dtype=object),
    "flag": _r.integers(0, 2, _n).astype(bool),
    "cat": pd.Categorical(_r.choice(["a", "b", "c", "d"], _n)),
    "when": pd.date_range("2020-01-01", periods=_n, freq="s"),
    "id": np.arange(_n),
}})
del _r, _n, _words
print(df.shape, int(df.memory_usage(deep=False).sum() / 2**20), "MiB")
"""


THEIR_SUMMARY = """
import json as _json, time as _time
from crane_llm.nb_extension.api import get_live_runinfo_json as _runinfo
_t0 = _time.perf_counter()
_s = _runinfo("df.head()")
print("CRANE_SECONDS", _time.perf_counter() - _t0, "CRANE_CHARS", len(_s))
_d = _json.loads(_s).get("df", {})
print("CRANE_COLS", len(_d.get("per_column", {})), "columns summarised of", _d.get("shape"))
print("CRANE_DF", _json.dumps(_d, default=str)[:600])
del _json, _time, _runinfo, _t0, _s, _d
"""


async def speed(python: str, spec_dir: Path, rows: int, repeats: int) -> None:
    console.rule(f"runtime summary of a {rows:,}-row x 20 mixed-dtype DataFrame")
    code = big_frame_code(rows)
    ours: list[float] = []
    link = await KernelLink.start(REPO, quiet=True)
    try:
        made = await link.execute(code)
        console.print(f"ours: frame built in {made.elapsed_s:.1f} s: {made.stdout.strip()}")
        query = ProbeQuery(names=["df"])
        for _ in range(repeats + 1):  # the first call also installs the probe
            t0 = time.perf_counter()
            snap = await link.snapshot(query)
            ours.append(time.perf_counter() - t0)
        summary = json.dumps(snap.model_dump(mode="json"), default=str)
        obj = snap.variables.get("df")
        cols = (obj.columns or []) if obj else []
        with_stats = [c for c in cols if c.stats is not None]
        console.print(
            f"ours: snapshot {len(summary):,} chars; deadline_hit={snap.deadline_hit}, "
            f"df.error={obj.error if obj else None!r}; {len(with_stats)}/{len(cols)} columns with stats "
            f"({sum(1 for c in with_stats if c.stats and c.stats.distinct is not None)} with distinct, "
            f"{sum(1 for c in with_stats if c.stats and c.stats.sampled)} sampled)",
            highlight=False,
        )
        for c in cols:
            st = c.stats
            brief = (
                f"{st.value_kind} distinct={st.distinct} nan={st.nan_count} sampled={st.sampled}"
                if st
                else "-"
            )
            console.print(f"  {c.name:6} {c.dtype:15} {brief}", highlight=False)
    finally:
        await link.close()
    kernel = ForeignKernel(python, spec_dir)
    theirs: list[float] = []
    try:
        await kernel.start(REPO)
        await kernel.run(LOAD_BACKEND, store_history=False)
        made = await kernel.run(code)
        console.print(f"crane-llm: frame built in {made.seconds:.1f} s: {made.stdout.strip()}")
        for _ in range(repeats):
            r = await kernel.run(THEIR_SUMMARY, store_history=False)
            if r.status != "ok":
                console.print(f"[red]crane-llm summary raised {r.ename}: {r.evalue}")
                break
            inside = float(r.stdout.split("CRANE_SECONDS", 1)[1].split()[0])
            theirs.append(inside)
            console.print(f"crane-llm: round trip {r.seconds:.2f} s, in the kernel {inside:.2f} s")
        for key in ("CRANE_COLS", "CRANE_DF"):
            detail = next((ln for ln in r.stdout.splitlines() if ln.startswith(key)), "")
            console.print(f"crane-llm: {detail[:500]}", highlight=False)
    finally:
        await kernel.close()
    cold, warm = ours[0], min(ours[1:]) if len(ours) > 1 else ours[0]
    console.print(
        f"[bold]ours: snapshot(ProbeQuery(names=['df'])) first {cold:.2f} s (installs the probe), "
        f"then best {warm:.2f} s over {len(ours) - 1} (round trip)[/]"
    )
    if theirs:
        first, best = theirs[0], min(theirs)
        console.print(
            f"[bold]crane-llm: get_live_runinfo_json first {first:.2f} s, best {best:.2f} s over "
            f"{len(theirs)} (in the kernel) -> crane-llm / ours: first {first / cold:.0f}x, "
            f"best {best / warm:.0f}x[/]"
        )


# ----------------------------------------------------------------------------- main


async def main_async(args: argparse.Namespace) -> int:
    python = args.crane_llm_python
    version = crane_llm_version(python)
    if version is None:
        console.print(
            f"[red]{python} cannot import crane_llm and ipykernel.[/]\n{VENV_HELP}", highlight=False
        )
        return 2
    console.print(f"crane-llm {version} from {python}; crane-lsp from {REPO}")
    with tempfile.TemporaryDirectory(prefix="cranellm-spec-") as tmp:
        spec_dir = ForeignKernel.write_spec(python, Path(tmp))
        if not args.no_cases:
            folders = sorted(p for p in Path(args.root).iterdir() if (p / "meta.json").exists())
            if args.cases:
                wanted = set(args.cases.split(","))
                folders = [p for p in folders if p.name in wanted]
            rows: list[Row] = []
            t0 = time.perf_counter()
            for folder in folders:
                rows += await run_case(folder, python, spec_dir, args.timeout)
            console.print(f"{len(folders)} cases in {time.perf_counter() - t0:.0f} s")
            report(rows)
        if not args.no_speed:
            await speed(python, spec_dir, args.rows, args.repeats)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crane-llm-python", help="the interpreter of crane-llm's own virtualenv")
    ap.add_argument("--root", default=str(DEFAULT_ROOT), help="junoreplay folder")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per cell")
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=2, help="summary repeats in the speed test")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-cases", action="store_true")
    args = ap.parse_args()
    if not args.crane_llm_python or not Path(args.crane_llm_python).exists():
        console.print(f"--crane-llm-python is required and must exist.\n{VENV_HELP}", highlight=False)
        return 2
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
