"""The shape-level dry run (issue 36) against the truth: is each torch shape/dtype/device crash observed
with its exception and line, and is no clean cell flagged?

Forced on this CPU machine (``CRANE_DRYRUN_STANDIN=force``: every named torch tensor and module stood in
by ``meta`` tensors, exactly as in a kernel that initialised CUDA). Two corpora, one fresh kernel each:

- ``pairs``: a crash and its fix for each crash class of the issue (a Linear fed the wrong width, a
  channels-last image into a channels-first model, a batch missing its batch dimension, a loss given
  logits of the wrong rank, a dtype clash, a CPU tensor meeting a CUDA one), each dry-run, then run for
  real on the CPU. A device case's truth is the GPU's (``.to("cuda")`` fails differently on this CPU
  torch): it is marked ``truth: expected``;
- ``NOTEBOOKS``: every code cell of our notebooks that use torch (``benchmarks/audit_notebooks/
  torch_training.ipynb``, ``examples/torch_classifier``) in order, dry-run, then run for real (the
  notebooks' own crashes, and their clean cells as the false-alarm check).

Prints one row per cell and the totals: crashes observed with the right exception and line, false
alarms (a clean cell reported raised), no verdicts.

``--real-gpu`` (``benchmarks/gpu_real.sh``, on a machine with CUDA): nothing forced; the setup moves the
model and data to CUDA and trains one step, so the dry run takes the stand-in path because CUDA is
initialised, and every truth (the device cases too) is the real run on the GPU. The notebook corpus is
left out there (it never touches CUDA).

    python benchmarks/gpu_shapes.py [--budget S] [--real-gpu]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.notebook import read_notebook
from crane_lsp.settings import Settings

REPO = Path(__file__).resolve().parents[1]
#: every notebook of ours that uses torch: its cells in order, the real run the truth
NOTEBOOKS = [
    REPO / "benchmarks" / "audit_notebooks" / "torch_training.ipynb",
    REPO / "examples" / "torch_classifier" / "classifier.ipynb",
]
SETUP = """
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(10, 3)
xo = torch.randn(4, 10)
y = torch.randint(0, 3, (4,))
cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 5))
imgs = torch.randn(2, 3, 16, 16)
nhwc = imgs.permute(0, 2, 3, 1).contiguous()
emb = nn.Embedding(50, 8)
tok = torch.randint(0, 50, (2, 6))
"""
#: on a real GPU: everything on CUDA, one training step (CUDA initialised, the optimizer has state)
GPU_SETUP = """
for m in (model, cnn, emb):
    m.cuda()
xo, y, imgs, nhwc, tok = xo.cuda(), y.cuda(), imgs.cuda(), nhwc.cuda(), tok.cuda()
opt = torch.optim.Adam(model.parameters())
loss = F.cross_entropy(model(xo), y)
loss.backward()
opt.step()
torch.cuda.synchronize()
"""
#: (class, buggy cell, fixed cell, truth of the buggy cell when the CPU cannot give it)
PAIRS: list[tuple[str, str, str, str | None]] = [
    ("shape: Linear width", "h = model(xo)\nout = model(xo[:, :8])", "h = model(xo)\nout = model(xo)", None),
    ("shape: channels-last image", "out = cnn(nhwc)", "out = cnn(nhwc.permute(0, 3, 1, 2))", None),
    (
        "shape: no batch dimension",
        "x = imgs[0]\nout = cnn(x)",
        "x = imgs[0]\nout = cnn(x.unsqueeze(0))",
        None,
    ),
    (
        "shape: logits rank",
        "z = model(xo)\nl = F.cross_entropy(z.unsqueeze(0), y)",
        "z = model(xo)\nl = F.cross_entropy(z, y)",
        None,
    ),
    (
        "shape: matmul",
        "w = torch.randn(3, 5)\nz = model(xo) @ w.T",
        "w = torch.randn(3, 5)\nz = model(xo) @ w",
        None,
    ),
    ("shape: cat", "z = torch.cat([xo, imgs], 0)", "z = torch.cat([xo, xo], 0)", None),
    ("shape: embedding rank", "e = emb(tok)\nz = model(e)", "e = emb(tok)\nz = nn.Linear(8, 3)(e)", None),
    (
        "dtype: long into Linear",
        "z = model(y.unsqueeze(1).repeat(1, 10))",
        "z = model(y.unsqueeze(1).repeat(1, 10).float())",
        None,
    ),
    (
        "dtype: float target",
        "z = model(xo)\nl = F.nll_loss(z, y.float())",
        "z = model(xo)\nl = F.nll_loss(z, y)",
        None,
    ),
    (
        "device: CPU meets CUDA",
        "model.cuda()\nout = model(xo)",
        "model.cuda()\nout = model(xo.cuda())",
        "RuntimeError@2",
    ),
    (
        "device: batch left on the CPU",
        "g = xo.to('cuda')\nh = g + torch.ones(4, 10)",
        "g = xo.to('cuda')\nh = g + torch.ones(4, 10, device=g.device)",
        "RuntimeError@2",
    ),
]

#: the device cases on a real GPU, where the data already is on CUDA (truth: the real run)
GPU_PAIRS: list[tuple[str, str, str, str | None]] = [
    ("device: CPU meets CUDA", "out = model(xo.cpu())", "out = model(xo)", None),
    (
        "device: batch left on the CPU",
        "h = xo + torch.ones(4, 10)",
        "h = xo + torch.ones(4, 10, device=xo.device)",
        None,
    ),
    (
        "values: loss.item()",
        "l = F.cross_entropy(model(xo), y)\nv = l.item()\nmodel(xo[:, :8])",
        "l = 1",
        None,
    ),
]


@dataclass
class Row:
    corpus: str
    name: str
    verdict: str  # raised X@line | completed | no_verdict | ...
    truth: str  # X@line | ok
    truth_from: str  # real | expected

    @property
    def crash(self) -> bool:
        return self.truth != "ok"

    @property
    def observed(self) -> bool:
        return self.crash and self.verdict == f"raised {self.truth}"

    @property
    def false_alarm(self) -> bool:
        return not self.crash and self.verdict.startswith("raised")


async def dry_run_then_run(
    link: KernelLink, runner: DryRunner, source: str, expected: str | None
) -> tuple[str, str, str]:
    """``(verdict, truth, where the truth came from)``: the cell dry-run, then run for real in the kernel
    (``expected``: the truth this CPU cannot give, used instead)."""
    outcome = await runner.run_outcome(source, explicit=True)
    if outcome.outcome == "raised":
        verdict = f"raised {outcome.exception}@{outcome.line}"
    else:
        verdict = outcome.outcome + (
            f" ({outcome.message[:50]})" if outcome.outcome == "no_verdict" and outcome.message else ""
        )
    real = await link.execute(source, timeout=120)
    if expected is not None:
        return verdict, expected, "expected"
    truth = "ok" if real.ok else f"{real.ename}@{None if real.line is None else real.line + 1}"
    return verdict, truth, "real"


def shape_level_settings(budget: float, real_gpu: bool) -> Settings:
    """The dry run's settings for these benchmarks; forced on this CPU unless ``real_gpu``."""
    if not real_gpu:
        os.environ["CRANE_DRYRUN_STANDIN"] = "force"  # sent in the dry-run payloads (crane_lsp/dryrun.py)
    return Settings(
        dry_run="on", dry_run_budget_s=budget, dry_run_recheck_budget_s=budget, dry_run_shorten=False
    )


@contextlib.asynccontextmanager
async def set_up_kernel(settings: Settings, setup_code: str) -> AsyncIterator[tuple[KernelLink, DryRunner]]:
    """A fresh kernel with ``setup_code`` run in it, and its dry runner; closed at the end."""
    link = await KernelLink.start(REPO, quiet=True)
    try:
        setup = await link.execute(setup_code, timeout=300)
        assert setup.ok, setup.evalue
        yield link, DryRunner(link, settings)
    finally:
        await link.close()


async def run(budget: float, real_gpu: bool = False) -> list[Row]:
    settings = shape_level_settings(budget, real_gpu)
    setup_code = SETUP + (GPU_SETUP if real_gpu else "")
    pairs = [p for p in PAIRS if not p[0].startswith("device")] + GPU_PAIRS if real_gpu else PAIRS
    rows: list[Row] = []
    async with set_up_kernel(settings, setup_code) as (link, runner):
        for name, buggy, fixed, expected in pairs:
            for version, source, truth in (
                ("buggy", buggy, expected),
                ("fixed", fixed, "ok" if expected else None),
            ):
                await link.execute(setup_code, timeout=120)  # the same state for each (real runs change it)
                verdict, real, origin = await dry_run_then_run(link, runner, source, truth)
                rows.append(Row("pairs", f"{name} [{version}]", verdict, real, origin))
    if real_gpu:
        return rows
    for notebook in NOTEBOOKS:
        rows += await walk_notebook(notebook, settings)
    return rows


async def walk_notebook(notebook: Path, settings: Settings) -> list[Row]:
    """Every code cell of ``notebook`` in order, in a fresh kernel in its folder: dry-run, then run."""
    rows = []
    link = await KernelLink.start(notebook.parent, quiet=True)
    try:
        runner = DryRunner(link, settings)
        for index, cell in enumerate(read_notebook(notebook).code_cells, 1):
            verdict, real, origin = await dry_run_then_run(link, runner, cell.source, None)
            rows.append(Row(notebook.stem, f"cell {index}", verdict, real, origin))
    finally:
        await link.close()
    return rows


def report(rows: list[Row], console: Console) -> None:
    table = Table(title="shape-level dry run (forced on the CPU) against the truth")
    for column in ("corpus", "cell", "shape-level verdict", "truth", "agrees"):
        table.add_column(column)
    for row in rows:
        agrees = "yes" if (row.observed or (not row.crash and row.verdict == "completed")) else "no"
        truth = row.truth + (" (expected)" if row.truth_from == "expected" else "")
        table.add_row(row.corpus, row.name, row.verdict, truth, agrees)
    console.print(table)
    crashes = [r for r in rows if r.crash]
    clean = [r for r in rows if not r.crash]
    observed = sum(r.observed for r in crashes)
    alarms = sum(r.false_alarm for r in clean)
    no_verdict = sum(r.verdict.startswith("no_verdict") for r in rows)
    console.print(
        f"crashes observed with the right exception and line: {observed}/{len(crashes)}"
        f" ({100 * observed / max(1, len(crashes)):.0f}%);"
        f" false alarms on clean cells: {alarms}/{len(clean)};"
        f" no verdict: {no_verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per dry run")
    parser.add_argument("--real-gpu", action="store_true", help="CUDA for real, nothing forced")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(args.budget, args.real_gpu))
    report(rows, Console(width=200))
    return 0 if not any(r.false_alarm for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
