"""The shape-level dry run (issue 36), forced on a CPU kernel: torch tensors and modules stood in by
``meta`` tensors (``kernel/agent/dryrun/standin.py``), exactly as in a kernel that initialised CUDA.

Each crash class is a crash and its near miss; the truth is the same cell run for real on the CPU
afterwards (the device mismatch excepted: ``.to("cuda")`` on this CPU-only torch fails differently for
real, so only the stand-in's verdict is asserted). A cell that needs values gets "no verdict", the
client words it all as a shape-level run ("no shape error seen", never "ran clean"), and the kernel's
state is unchanged by the dry runs.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest
from jail_util import JailKernel, forced_dry_run, set_up_kernels, verdict

from crane_lsp.dryrun import DryRunOutcome, outcome_to_prediction
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

SETUP = """
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(10, 3)
xo = torch.randn(4, 10)
x_wide = torch.randn(4, 12)
y = torch.randint(0, 3, (4,))
net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8 * 30 * 30, 2))
img = torch.randn(3, 32, 32)
batch = {"x": xo, "y": y}
"""
STATE = (
    "(model.weight.device.type, round(float(model.weight.sum()), 6), str(xo.dtype), tuple(xo.shape),"
    " round(float(xo.sum()), 6), batch['x'] is xo, next(net.parameters()).device.type,"
    " sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count)"
)


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    yield from set_up_kernels(SETUP)


def _run(jk: JailKernel, cell: str) -> dict[str, Any]:
    return forced_dry_run(jk, cell, 20.0)


def _real(jk: JailKernel, cell: str) -> tuple[str, str | None]:
    reply = jk.run(cell, allow_error=True)
    return reply["status"], reply.get("ename")


CASES = [  # (crash, near miss, exception, line): a Linear fed the wrong width, a batch missing its
    # batch dimension fed to a Conv2d model, a loss given logits of the wrong rank, a dtype clash
    ("h = model(xo)\nout = model(x_wide)", "h = model(xo)\nout = model(xo)", "RuntimeError", 2),
    ("z = 1\nout = net(img)", "z = 1\nout = net(img.unsqueeze(0))", "RuntimeError", 2),
    (
        "logits = model(batch['x'])\nloss = F.cross_entropy(logits.unsqueeze(0), batch['y'])",
        "logits = model(batch['x'])\nloss = F.cross_entropy(logits, batch['y'])",
        "ValueError",
        2,
    ),
    ("z = model(xo.long())", "z = model(xo)", "RuntimeError", 1),  # a dtype clash (meta does not check it)
]


IDS = ["linear", "conv", "loss", "dtype"]


@pytest.mark.parametrize(("crash", "near", "exception", "line"), CASES, ids=IDS)
def test_crash_and_near_miss_as_on_the_cpu(
    jk: JailKernel, crash: str, near: str, exception: str, line: int
) -> None:
    seen = _run(jk, crash)
    assert verdict(seen)[:3] == ("raised", exception, line), verdict(seen)
    assert any("shape-level dry run" in n for n in seen["notes"]), seen["notes"]
    clean = _run(jk, near)
    assert clean["outcome"] == "completed", verdict(clean)
    # the truth, on the CPU for real
    assert _real(jk, crash) == ("error", exception)
    assert _real(jk, near) == ("ok", None)


def test_device_mismatch_is_observed(jk: JailKernel) -> None:
    """Only the stand-in's verdict: for real, this CPU-only torch fails at ``.to('cuda')`` instead."""
    cell = "moved = xo.to('cuda')\nmodel.cuda()\nok = model(moved)\nmixed = moved + x_wide[:, :10]"
    seen = _run(jk, cell)
    assert verdict(seen)[:3] == ("raised", "RuntimeError", 4), verdict(seen)
    assert "found at least two devices, cuda:0 and cpu" in seen["message"]


def test_a_cell_needing_values_gets_no_verdict(jk: JailKernel) -> None:
    cell = "loss = F.cross_entropy(model(xo), y)\nif loss.item() > 0:\n    loss = loss * 2\nmodel(x_wide)"
    seen = _run(jk, cell)
    assert seen["outcome"] == "no_verdict", verdict(seen)
    assert seen["message"].startswith("needs the values of `loss`") and seen["line"] == 2
    words = outcome_to_prediction(DryRunOutcome.model_validate(seen), cell)
    assert not words.crash and words.message.startswith("no verdict: needs the values of `loss`")
    truth = _run(jk, "loss = F.cross_entropy(model(xo), y)\nif loss > 0:\n    loss = loss * 2")
    assert truth["outcome"] == "no_verdict" and truth["message"].startswith("needs the values of `loss`")
    assert "truth value" in truth["message"] and truth["line"] == 2
    swallowed = _run(jk, "try:\n    print(xo)\nexcept BaseException:\n    pass\nmodel(x_wide)")
    assert swallowed["outcome"] == "no_verdict", verdict(swallowed)  # not the crash after a value it faked


def test_prepared_child_and_client_wording(jk: JailKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's environment forces it (the payloads of ``crane-lsp check`` and the server), also
    through a child prepared ahead; the wording is a shape-level run's."""
    import asyncio

    monkeypatch.setenv("CRANE_DRYRUN_STANDIN", "force")

    async def predict(cell: str) -> Any:
        async with await KernelLink.connect(jk.kernel.connection_file) as link:
            from crane_lsp.dryrun import DryRunner

            settings = Settings(dry_run="on", dry_run_budget_s=20.0, dry_run_shorten=False)
            runner = DryRunner(link, settings)
            prepared = await runner.prepare()
            assert prepared is not None and prepared.outcome == "prepared", prepared
            pipeline = Pipeline(settings, link=link, dryrun=runner)
            return (await pipeline.predict(cell, layers={"dryrun"})).prediction

    crash = asyncio.run(predict("h = model(xo)\nout = model(x_wide)"))
    assert crash.crash and crash.certainty == "observed" and crash.line == 1
    assert any(
        n.startswith(
            "raised RuntimeError at line 2 in a shape-level dry run (tensors on cpu stood in by their shapes)"
        )
        for n in crash.notes
    ), crash.notes
    clean = asyncio.run(predict("h = model(xo)"))
    assert not clean.crash and clean.message == "no shape error seen in a shape-level dry run"
    assert not any("ran clean" in n for n in clean.notes)


def test_kernel_state_unchanged(jk: JailKernel) -> None:
    before = jk.eval(STATE)
    for cell in (
        "model.to('cuda')\nxo.mul_(0)\nbatch['x'] = xo.cuda()\nnet.double()\nbrand_new = model(xo)",
        "loss = F.cross_entropy(model(xo), y)\nloss.backward()\nprint(loss)",
        "xo.add_(1)\nmodel(x_wide)",
    ):
        _run(jk, cell)
    assert jk.eval(STATE) == before
    assert "brand_new" not in before


def test_a_cuda_kernel_makes_no_cuda_call(jk: JailKernel) -> None:
    """Nothing forced: CUDA initialised (the flag the child reads, set as CUDA sets it) takes the path.
    ``torch.cuda`` calls that only wait do nothing, those that ask the GPU stop the run; CPU tensors
    stay real (the truth: the same crash for real)."""
    jk.run("_saved_init = torch.cuda._initialized\ntorch.cuda._initialized = True")
    try:
        asks = jk.dry_run("torch.cuda.synchronize()\nfree, total = torch.cuda.mem_get_info()", budget_s=20.0)
        cell = "torch.cuda.synchronize()\nv = xo.sum().item()\nout = model(x_wide)"
        waits = jk.dry_run(cell, budget_s=20.0)
    finally:
        jk.run("torch.cuda._initialized = _saved_init\ndel _saved_init")
    assert asks["outcome"] == "no_verdict" and "asks the GPU" in asks["message"], verdict(asks)
    assert asks["line"] == 2 and asks["standin"]["why"] == "cuda"
    assert verdict(waits)[:3] == ("raised", "RuntimeError", 3), verdict(waits)
    assert waits["standin"] == {"why": "cuda", "names": [], "devices": [], "how": ["meta"]}


MAP_A_DEVICE = """
import mmap as _mm, os as _os
_dev_path = _dev_map = None
for _name in sorted(_os.listdir("/sys/block")):
    try:
        _fd = _os.open("/dev/" + _name, _os.O_RDONLY)
    except OSError:
        continue
    try:
        _dev_map, _dev_path = _mm.mmap(_fd, 4096, _mm.MAP_SHARED, _mm.PROT_READ), "/dev/" + _name
        break
    except OSError:
        continue
    finally:
        _os.close(_fd)
"""


def test_a_cuda_kernel_s_device_mappings_are_fenced_not_refused(jk: JailKernel) -> None:
    """A kernel mapping a device shared (a block device read-only, never read: the stand-in here for
    the ``/dev/nvidia*`` mappings of a CUDA kernel): a plain dry run refuses; a CUDA kernel's
    shape-level run fences the mapping off in the child (it makes no call into the device) and gives
    its verdict, and the kernel's mapping stays."""
    if os.geteuid() != 0 or not os.path.isdir("/sys/block"):
        pytest.skip("needs root to map a block device")
    jk.run(MAP_A_DEVICE)
    device = jk.eval("_dev_path").strip("'")
    try:
        if device == "None":
            pytest.skip("no block device could be mapped shared here")
        plain = jk.dry_run("z = 1", budget_s=20.0)
        jk.run("_saved_init = torch.cuda._initialized\ntorch.cuda._initialized = True")
        try:
            seen = jk.dry_run("h = model(xo)\nout = model(x_wide)", budget_s=20.0)
        finally:
            jk.run("torch.cuda._initialized = _saved_init\ndel _saved_init")
        still = jk.eval("_dev_map is not None and not _dev_map.closed")
    finally:
        jk.run("if _dev_map is not None:\n    _dev_map.close()\ndel _dev_map, _dev_path, _mm, _os")
    assert plain["outcome"] == "unavailable" and f"maps the device {device} shared" in plain["message"], plain
    assert verdict(seen)[:3] == ("raised", "RuntimeError", 2), verdict(seen)
    assert f"device mappings fenced off (a shape-level run): {device}" in seen["notes"], seen["notes"]
    assert still == "True"
