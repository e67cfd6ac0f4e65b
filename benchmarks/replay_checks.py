"""Run the built-in checks over the executable JunoBench replay cases and compare with what really happens.

For every case folder in ``crane_lsp/data/junoreplay`` and both versions (buggy, fixed): start a fresh
kernel in the case folder, run the setup cells, analyse the target cell, snapshot the kernel through the
real probe, run every registered check, then RUN the target for the truth. Prints one row per (case,
version) and the totals that matter: buggy targets caught with the right exception class, and fixed
targets flagged (a bug, must be 0).

    python3 benchmarks/replay_checks.py [--cases pandas_15,sklearn_3] [--root DIR]
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crane_lsp.analysis.parse import analyze  # noqa: E402
from crane_lsp.analysis.reach import first_risky_line  # noqa: E402
from crane_lsp.checks.runner import run_checks  # noqa: E402
from crane_lsp.kernel.probe_install import call_expression, install_code, installed_expression  # noqa: E402
from crane_lsp.snapshot import ProbeQuery, Snapshot  # noqa: E402


@dataclass
class Row:
    case: str
    version: str
    predicted: str | None
    check_id: str | None
    line: int | None
    truth: str | None
    setup_error: str | None = None
    seconds: float = 0.0
    certain: bool = False  # the lines before the finding provably do not raise (else: a Warning)


class Kernel:
    """A fresh ipykernel in a folder, driven synchronously."""

    def __init__(self, cwd: Path) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(cwd), env={**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
        self.kc: BlockingKernelClient = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = 300) -> dict[str, Any]:
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
        content: dict[str, Any] = reply["content"]
        return content

    def expressions(self, code: str, exprs: dict[str, str], timeout: float = 120) -> dict[str, Any]:
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions=exprs)
        while True:
            try:
                msg = self.kc.get_shell_msg(timeout=timeout)
            except queue.Empty as exc:
                raise TimeoutError("kernel did not answer") from exc
            if msg["parent_header"].get("msg_id") == msg_id:
                result: dict[str, Any] = msg["content"].get("user_expressions", {})
                return result

    def snapshot(self, query: ProbeQuery) -> Snapshot:
        self.expressions(install_code(), {"ok": installed_expression()})
        answer = self.expressions("", {"snap": call_expression("snapshot", query.model_dump())})["snap"]
        if answer.get("status") != "ok":
            raise RuntimeError(f"probe raised {answer.get('ename')}: {answer.get('evalue')}")
        return Snapshot.model_validate(answer["data"]["application/json"])

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def guard_imports(source: str, evalue: str) -> str:
    """Wrap top-level imports of a module missing here (``No module named 'cv2'``) in try/except, as the
    replay cases already do for the modules they knew to be missing; the target's truth still comes from
    really running it."""
    match = re.search(r"No module named '([\w.]+)'", evalue)
    if not match:
        return source
    top = match.group(1).split(".")[0]
    pattern = re.compile(rf"^(import|from)\s+{re.escape(top)}\b")
    out = []
    for line in source.splitlines():
        if pattern.match(line):
            out += ["try:", f"    {line}", "except ImportError:", "    pass"]
        else:
            out.append(line)
    return "\n".join(out)


def run_version(folder: Path, version: str) -> Row:
    nb = nbformat.read(folder / f"{version}.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    setup, target = cells[:-1], cells[-1].source
    start = time.perf_counter()
    k = Kernel(folder)
    try:
        for cell in setup:
            content = k.run(cell.source)
            if content["status"] == "error" and content["ename"] == "ModuleNotFoundError":
                content = k.run(guard_imports(cell.source, content["evalue"]))
            if content["status"] == "error":
                return Row(
                    folder.name,
                    version,
                    None,
                    None,
                    None,
                    None,
                    setup_error=f"{content['ename']}: {content['evalue']}"[:80],
                )
        facts = analyze(target)
        snap = k.snapshot(ProbeQuery(**facts.probe_query_fields()))
        findings = run_checks(facts, snap)
        first = findings[0] if findings else None
        certain = first is not None and first_risky_line(facts, snap, first.span.line, first.span.col) is None
        content = k.run(target)
        truth = content["ename"] if content["status"] == "error" else None
        return Row(
            folder.name,
            version,
            first.exception if first else None,
            first.check_id if first else None,
            first.span.line if first else None,
            truth,
            seconds=time.perf_counter() - start,
            certain=certain,
        )
    finally:
        k.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=REPO / "crane_lsp" / "data" / "junoreplay")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    args = ap.parse_args(argv)
    folders = sorted(p for p in args.root.iterdir() if (p / "buggy.ipynb").exists())
    if args.cases:
        wanted = set(args.cases.split(","))
        folders = [f for f in folders if f.name in wanted]
    rows: list[Row] = []
    print(f"{'case':<16} {'version':<6} {'predicted':<18} {'check':<26} {'cert':<4} {'true':<18} {'s':>5}")
    for folder in folders:
        for version in ("buggy", "fixed"):
            row = run_version(folder, version)
            rows.append(row)
            truth = row.truth if row.setup_error is None else f"setup! {row.setup_error}"
            print(
                f"{row.case:<16} {row.version:<6} {row.predicted or '-':<18} {row.check_id or '-':<26} "
                f"{'yes' if row.certain else '-':<4} {truth or '-':<18} {row.seconds:5.1f}",
                flush=True,
            )
    buggy = [r for r in rows if r.version == "buggy"]
    fixed = [r for r in rows if r.version == "fixed"]
    caught = [r for r in buggy if r.predicted is not None and r.predicted == r.truth]
    wrong_class = [r for r in buggy if r.predicted is not None and r.predicted != r.truth]
    flagged = [r for r in fixed if r.predicted is not None and r.truth is None]
    env_crash = [r for r in fixed if r.truth is not None]
    false_alarm = [r for r in rows if r.predicted is not None and r.truth is None]
    print()
    print(f"buggy caught with the right exception class: {len(caught)}/{len(buggy)}")
    print(f"buggy flagged with another exception class:  {len(wrong_class)}")
    print(f"fixed flagged (must be 0): {len(flagged)}/{len(fixed)}")
    if env_crash:
        print(
            "fixed targets that really crash in this environment (not counted above): "
            + ", ".join(f"{r.case} {r.truth} (predicted {r.predicted or '-'})" for r in env_crash)
        )
    print(f"predictions on targets that ran clean (must be 0): {len(false_alarm)}")
    certain_right = [r for r in caught if r.certain]
    certain_wrong = [r for r in rows if r.certain and r.predicted != r.truth]
    print(f"caught as certain (earlier lines proven not to raise): {len(certain_right)}/{len(caught)}")
    print(f"certain findings that did not happen as said (must be 0): {len(certain_wrong)}")
    by_check: dict[str, int] = {}
    for r in caught:
        by_check[r.check_id or "?"] = by_check.get(r.check_id or "?", 0) + 1
    print("caught by check: " + ", ".join(f"{k} {v}" for k, v in sorted(by_check.items())))
    return 0 if not flagged and not false_alarm and not certain_wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
