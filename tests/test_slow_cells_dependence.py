"""The shortened run's verdict decided by what the shortening changed, in a real kernel (issue 32).

- **Where the time goes**: a slow ``for ... in range`` loop that binds nothing the failing line reads
  is cut, and nothing is sampled: the failing line meets the full data, so its crash (an IndexError
  along the rows, an AxisError: classes the old lists withheld) is the full run's, and a position the
  full data holds is no crash.
- **A loop cut short that carries its state** (each iteration extends the previous one's result) is
  no verdict: skipping iterations would invent the IndexError.
- **Sampled data, decided on shapes**: a slow row-wise loop over a frame samples it; the failing
  operation is run again at the full shape (a zero-strided stand-in), so an AxisError or a non-square
  LinAlgError is observed, and a position beyond the sample but inside the full data is not.

Every verdict is checked against the truth, run for real: the slow prefixes bind nothing the rest
reads, so the rest runs alone (the carried trap runs whole).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.check_util import run_cell
from tests.conftest import TestKernel, start_test_kernel, stop_test_kernel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
BUDGET_S = 6.0  # the decisions are tested here, not the speed (benchmarks/slow_twins.py measures 3 s)
SLOW_S = 18.0  # each slow part's real work: well over the budget

SETUP = f"""
import time, numpy as np, pandas as pd
def _per_unit(work, units):
    t = time.process_time(); work(); return (time.process_time() - t) / units
X = np.random.default_rng(0).random((200_000, 5))
_c = _per_unit(lambda: [sum(k * k for k in range(2000)) for _ in range(200)], 200)
N = int({SLOW_S} / _c)
_rows = pd.DataFrame({{'a': np.arange(20_000)}})
_c = _per_unit(lambda: [sum(k for k in range(300)) for _r in _rows.itertuples()], 20_000)
_n = max(20_000, int({SLOW_S} / _c))
big = pd.DataFrame(np.random.default_rng(1).random((_n, 4)), columns=list('abcd'))
Xb = big.to_numpy()
_c = _per_unit(lambda: [sum(k * k for k in range(2000)) for _ in range(50)], 50)
M = int(12.0 / _c)
"""
TORCH_SETUP = """
import torch
T = torch.tensor(Xb, dtype=torch.float32)  # as many rows as ``big``: sampled with it
net = torch.nn.Linear(5, 2)
"""
HAS_TORCH = importlib.util.find_spec("torch") is not None
LOOP = "for _i in range(N):\n    _s = sum(k * k for k in range(2000))\n"
ROWS = "for _r in big.itertuples():\n    _s = sum(k for k in range(300))\n"


@dataclass(frozen=True)
class Case:
    name: str
    slow: str
    tail: str
    exception: str | None  # the truth, checked for real
    verdict: str  # "crash" (observed, on the tail's first line) or "none" (no squiggle)


CASES = [
    Case("loop: rows past the end", LOOP, "row = X[250_000]\n", "IndexError", "crash"),
    Case("loop: a row the data holds", LOOP, "row = X[150_000]\n", None, "none"),
    Case("loop: an axis the array lacks", LOOP, "tot = X.sum(axis=2)\n", "AxisError", "crash"),
    Case("sample: an axis the array lacks", ROWS, "tot = Xb.sum(axis=2)\n", "AxisError", "crash"),
    Case("sample: not square", ROWS, "inv = np.linalg.inv(Xb[:, :3])\n", "LinAlgError", "crash"),
    Case("sample: a row beyond the sample", ROWS, "row = Xb[5_000]\n", None, "none"),
    # pandas names the labels in its message ("[15000] not found in axis"): a row label the full data holds
    Case("sample: drop a row the sample left out", ROWS, "big2 = big.drop([15_000])\n", None, "none"),
]
if HAS_TORCH:  # torch operands stand in as ``meta`` tensors, a module called on them moved there too
    CASES += [
        Case("sample: torch, a module fed the wrong width", ROWS, "out = net(T)\n", "RuntimeError", "crash"),
        Case("sample: torch, a row beyond the sample", ROWS, "row = T[5_000]\n", None, "none"),
    ]
CARRIED = (
    "xs = [0.0]\n"
    "for t in range(1, M):\n"
    "    xs.append(xs[t - 1] + sum(k * k for k in range(2000)))\n"
    "last = xs[-1]\n"
)


@dataclass
class Seen:
    said: dict[str, Prediction] = field(default_factory=dict)
    real: dict[str, str | None] = field(default_factory=dict)


async def _verdicts(
    kernel: TestKernel, cells: dict[str, str], budget_s: float = BUDGET_S
) -> dict[str, Prediction]:
    """Each cell through the real link and pipeline (the dry-run layer alone), in order."""
    said = {}
    async with await KernelLink.connect(kernel.connection_file) as link:
        settings = Settings(dry_run="on", dry_run_budget_s=budget_s)
        runner = DryRunner(link, settings)
        for name, cell in cells.items():
            pipeline = Pipeline(settings, link=link, dryrun=runner)
            said[name] = (await pipeline.predict(cell, layers={"dryrun"})).prediction
    return said


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    kernel = start_test_kernel(tmp_path_factory.mktemp("slow-dependence"))
    try:
        kernel.run(SETUP, timeout=600)
        if HAS_TORCH:
            kernel.run(TORCH_SETUP, timeout=600)
        cells = {case.name: case.slow + case.tail for case in CASES}
        cells["carried"] = CARRIED
        result = Seen(said=asyncio.run(_verdicts(kernel, cells)))
        for case in CASES:  # the slow part binds nothing the tail reads: the tail alone is the truth
            result.real[case.name] = run_cell(kernel, case.tail)[0]
        result.real["carried"] = run_cell(kernel, CARRIED)[0]
        yield result
    finally:
        stop_test_kernel(kernel)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_verdict_follows_what_the_shortening_changed(seen: Seen, case: Case) -> None:
    assert seen.real[case.name] == case.exception  # the truth
    said = seen.said[case.name]
    tail_line = case.slow.count("\n")  # 0-based line of the tail
    if case.verdict == "crash":
        assert said.crash and said.certainty == "observed", (said.message, said.notes)
        assert said.exception == case.exception and said.line == tail_line
        assert "in a shortened run" in said.message
    else:
        assert not said.crash, (said.message, said.notes)
    joined = "\n".join(said.notes)
    if case.slow is LOOP:  # the time went to the loop: it alone was cut (see the test below)
        assert "iterations of the loop on line 1" in joined, joined
    else:  # the time went to a loop over the frame's rows: the data was sampled
        assert " rows (" in joined, joined
        if said.crash:
            assert "re-run on the full shapes" in joined, joined
        else:
            assert "would not fail" in said.message or "row label" in said.message, said.message


def test_only_the_slow_loop_is_cut_and_the_data_stays_whole(seen: Seen) -> None:
    """The full run's child says which line it is on: in a loop the rewrite can cut, only that loop is
    cut. (On a machine so loaded that the first report comes late, a run samples as before: at least
    one of the three must show it.)"""
    loops = [seen.said[c.name] for c in CASES if c.slow is LOOP]
    whole = [p for p in loops if not any(" rows (" in n for n in p.notes)]
    assert whole, [p.notes for p in loops]
    for prediction in whole:
        if prediction.crash:
            assert any("reads nothing the shortening changed" in n for n in prediction.notes)


def test_where_the_time_goes_decides_what_is_shortened() -> None:
    from crane_lsp.kernel.agent.shorten.shorten_flow import _shf_slow_part as _sh_slow_part

    cell = "x = df.apply(f, axis=1)\nfor i in tqdm(range(n)):\n    for j in range(m):\n        s += j\n"
    assert _sh_slow_part(cell, 4)["where"] == {
        "line": 4,
        "mode": "loops",
        "span": [2, 4],
        "reads": ["j", "m", "n", "range", "s", "tqdm"],
    }
    assert _sh_slow_part(cell, 1)["where"] == {"line": 1, "mode": "sample", "reads": ["df", "f"]}
    derived = "X = df.to_numpy()\ny = other.sum()\nZ = np.apply_along_axis(g, 1, X)\n"
    assert _sh_slow_part(derived, 3)["where"]["reads"] == ["X", "df", "g", "np"]  # not ``other``
    assert _sh_slow_part("for row in df.itertuples():\n    g(row)\n", 2)["where"]["mode"] == "sample"
    assert _sh_slow_part(cell, None)["where"]["mode"] == "sample"


def test_a_loop_that_carries_its_state_is_no_verdict(seen: Seen) -> None:
    assert seen.real["carried"] is None  # the truth: it runs clean
    said = seen.said["carried"]
    assert not said.crash, (said.message, said.notes)
    assert "built up by a loop cut short" in said.message, said.message


TF_SETUP = """
import os
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
import numpy as np, tensorflow as tf
Xt = np.random.rand(60_000, 8).astype('float32'); yt = (Xt.sum(1) > 4).astype('float32')
tf_net = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation='relu'),
                              tf.keras.layers.Dense(1)])
tf_net.compile('adam', 'mse')
tf_net.fit(Xt[:256], yt[:256], epochs=1, verbose=0)  # TensorFlow's runtime starts in the kernel
"""
TF_FIT = "tf_net.fit(Xt, yt, epochs=25, verbose=0)\n"
TF_TAILS = {
    "crash": "pred = tf_net.predict(np.zeros((3, 7), 'float32'), verbose=0)\n",
    "clean": "pred = tf_net.predict(np.zeros((3, 8), 'float32'), verbose=0)\n",
}
TF_BUDGET_S = 20.0  # eager Keras in the copies: slower than the typing budget (docs/slow-cells.md)


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="tensorflow is not installed")
def test_a_kernel_that_started_tensorflow_still_gets_a_shortened_verdict(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Its thread pools stayed in the kernel: the full run's compiled ``fit`` on arrays waits in the copy
    (the notes say why at once), and the shortened runs, eager, sample the data and lower ``epochs``."""
    kernel = start_test_kernel(tmp_path_factory.mktemp("slow-tf"))
    try:
        kernel.run(TF_SETUP, timeout=600)
        said = asyncio.run(_verdicts(kernel, {n: TF_FIT + tail for n, tail in TF_TAILS.items()}, TF_BUDGET_S))
        real = {name: run_cell(kernel, tail)[0] for name, tail in TF_TAILS.items()}
    finally:
        stop_test_kernel(kernel)
    assert real == {"crash": "ValueError", "clean": None}  # the truth (the fit binds nothing new)
    crash, clean = said["crash"], said["clean"]
    assert crash.crash and crash.exception == "ValueError" and crash.line == 1, (crash.message, crash.notes)
    assert "epochs on line 1: 1 instead of 25" in crash.message and "of 60,000 rows" in crash.message
    assert not clean.crash, (clean.message, clean.notes)
    assert any("TensorFlow's runtime runs in this kernel" in n for n in crash.notes), crash.notes
