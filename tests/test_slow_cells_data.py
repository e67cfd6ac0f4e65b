"""Shortened dry runs of slow cells over data the first shortening did not reach, in a real kernel:
a map-style torch dataset used directly, arrays inside a dict, a counted ``while`` loop, a
comprehension over ``range(N)``, and a Keras ``fit`` on a ``tf.data`` pipeline (TensorFlow in a
fork: functions run eagerly in the child). Each crash case runs 20 s or more in full and then
really crashes (proved once, for real, after the dry runs); crane observes it in a shortened run and
says what was shortened; its clean twin gets no squiggle. Each trap runs clean in full (proved for
real) though a naive shortening would crash it: it gets no squiggle.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel, start_test_kernel, stop_test_kernel
from tests.slow_cells_util import FULL_S, SLOW_FLOOR_S, TRAP_S, Case, Trap, Truth, truth

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TF = importlib.util.find_spec("tensorflow") is not None
BUDGET_S = 3.0
#: TensorFlow's eager ops in the child are slower: the verdict comes within this budget, not 3 s
TF_BUDGET_S = 10.0
STATE = "sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count"

SETUP = f"""
import time, numpy as np, pandas as pd, torch
from torch import nn
from torch.utils.data import Dataset
torch.manual_seed(0)
_rng = np.random.default_rng(0)

def _per_unit(work, units):  # CPU seconds of a one-thread loop
    t = time.process_time(); work(); return (time.process_time() - t) / units

class RowsDS(Dataset):
    def __init__(self, X, y):
        self.X, self.y, self.classes = X, y, ['neg', 'pos']
    def __len__(self):
        return len(self.X)
    def __getitem__(self, i):
        return self.X[i], self.y[i]

dm = nn.Linear(16, 2)
def _walk(ds):
    acc = 0.0
    for x, y in ds:
        acc += dm(x).sum().item()
_X = torch.randn(4000, 16)
_c = _per_unit(lambda: _walk(RowsDS(_X, (_X.sum(1) > 0).long())), 4000)
_n = int({FULL_S} / _c)
dX = torch.randn(_n, 16)
dds = RowsDS(dX, (dX.sum(1) > 0).long())
d_n_t = max(2000, int({TRAP_S} / _c))
dX_t = torch.randn(d_n_t, 16)
dds_t = RowsDS(dX_t, (dX_t.sum(1) > 0).long())
dbox_t = {{'train': _rng.random((d_n_t, 3)), 'note': 'trap'}}
d_col = _rng.random(d_n_t)

_m = _rng.random((20_000, 5))
_c = _per_unit(lambda: [np.linalg.norm(r) for r in _m], 20_000)
_n = int({FULL_S} / 2 / _c)
dbox = {{'train': _rng.random((_n, 5)), 'test': _rng.random((_n, 5)), 'name': 'demo'}}

def _svds():
    [np.linalg.svd(np.random.rand(40, 40))[1].sum() for _ in range(200)]
_t = time.perf_counter(); _c = _per_unit(_svds, 200); _w = (time.perf_counter() - _t) / 200
_c = min(_c, _w)  # the cheaper reading: BLAS threads that spin inflate one, a busy machine the other
d_steps = int(1.3 * {FULL_S} / _c)
d_trap_steps = int({TRAP_S} / _c)
d_wide = _rng.random((50, 1200))
"""

TF_SETUP = f"""
import tensorflow as tf
from tensorflow import keras
_X = np.random.rand(20_000, 8).astype('float32')
_y = (_X.sum(1) > 4).astype('int32')
tf_ds = tf.data.Dataset.from_tensor_slices((_X, _y)).shuffle(1000, seed=0).batch(64)
_layers = [keras.Input((8,)), keras.layers.Dense(32, activation='relu'), keras.layers.Dense(2)]
tf_model = keras.Sequential(_layers)
tf_model.compile('adam', keras.losses.SparseCategoricalCrossentropy(from_logits=True))
tf_model.fit(tf_ds, epochs=1, verbose=0)  # the first epoch traces the function: time the ones after it
_t = time.perf_counter(); tf_model.fit(tf_ds, epochs=2, verbose=0)
tf_epochs = max(2, int({FULL_S} / ((time.perf_counter() - _t) / 2 / 2)))  # wall time, twice over
"""

CASES = [
    Case(
        "torch dataset used directly",
        "d_acc = 0.0\nfor x, y in dds:\n    d_acc += dm(x).sum().item()\n",
        "d_out = dm(torch.zeros(3, 15))",
        "d_out = dm(torch.zeros(3, 16))",
        "RuntimeError",
        4,
    ),
    Case(
        "arrays inside a dict",
        "d_norms = {k: np.array([np.linalg.norm(r) for r in v]) for k, v in dbox.items() if k != 'name'}\n",
        "d_proj = dbox['train'] @ np.ones((4, 2))",
        "d_proj = dbox['train'] @ np.ones((5, 2))",
        "ValueError",
        2,
    ),
    Case(
        "counted while loop",
        "d_step = 0\nwhile d_step < d_steps:\n    d_w = np.linalg.svd(np.random.rand(40, 40))[1].sum()\n"
        "    d_step += 1\n",
        "d_w.sizee",
        "d_w.size",
        "AttributeError",
        5,
    ),
    Case(
        "comprehension over range",
        "d_vals = [np.linalg.svd(np.random.rand(40, 40))[1].sum() for _i in range(d_steps)]\n",
        "d_vals.mean()",
        "np.mean(d_vals)",
        "AttributeError",
        2,
    ),
]
TF_CASE = Case(
    "Keras fit on a tf.data pipeline",
    "tf_model.fit(tf_ds, epochs=tf_epochs, verbose=0)\n",
    "tf_pred = tf_model.predict(np.zeros((3, 7), 'float32'), verbose=0)",
    "tf_pred = tf_model.predict(np.zeros((3, 8), 'float32'), verbose=0)",
    "ValueError",
    2,
)
ALL_CASES = [*CASES, *([TF_CASE] if HAS_TF else [])]

TORCH_TRAP_SLOW = "d_acc_t = 0.0\nfor x, y in dds_t:\n    d_acc_t += dm(x).sum().item()\n"
WHILE_TRAP_SLOW = (
    "d_i = 0\nwhile d_i < d_trap_steps:\n    d_w_t = np.linalg.svd(np.random.rand(40, 40))[1].sum()\n"
)
#: (trap, its slow part): each runs clean in full
TRAPS = [
    (
        Trap("dataset attributes", "d_first = dds_t.classes[1]", "a Subset of the dataset has no 'classes'"),
        TORCH_TRAP_SLOW,
    ),
    (
        Trap(
            "position beyond the sample in a dataset", "d_far = dds_t[d_n_t - 5]", "an item the sample lacks"
        ),
        TORCH_TRAP_SLOW,
    ),
    (
        Trap(
            "arrays aligned across a dict and a name",
            "d_sum = dbox_t['train'][:, 0] + d_col",
            "a container's array and a name's array of the same rows must get the same sample",
        ),
        TORCH_TRAP_SLOW,
    ),
    (
        Trap(
            "while loop that must finish",
            "    if d_i == d_trap_steps - 1:\n        d_last = d_i\n    d_i += 1\nd_half = d_last / 2",
            "a name bound only by the last iteration",
        ),
        WHILE_TRAP_SLOW,
    ),
    (
        Trap(
            "comprehension as long as a feature axis",
            "    d_i += 1\nd_frame = pd.DataFrame(d_wide, columns=[f'c{i}' for i in range(d_wide.shape[1])])",
            "one column name per column: cut short, the frame's columns would not match",
        ),
        WHILE_TRAP_SLOW,
    ),
]


@dataclass
class Seen:
    said: dict[str, Prediction] = field(default_factory=dict)
    took_s: dict[str, float] = field(default_factory=dict)
    truths: dict[str, Truth] = field(default_factory=dict)
    state_before: str = ""
    state_after: str = ""


def _budget(name: str) -> float:
    return TF_BUDGET_S if name.startswith(TF_CASE.name) else BUDGET_S


async def _verdicts(
    kernel: TestKernel, cells: dict[str, str]
) -> tuple[dict[str, Prediction], dict[str, float]]:
    """Each cell through the real link and pipeline; then the first case's crash cell once more,
    with the same dry-run layer: known to overrun, its full run is skipped (``again``)."""
    said, took = {}, {}
    async with await KernelLink.connect(kernel.connection_file) as link:
        runners: dict[float, DryRunner] = {}
        for name, cell in [*cells.items(), (AGAIN, cells[f"{CASES[2].name}: crash"])]:
            settings = Settings(dry_run="on", dry_run_budget_s=_budget(name))
            runner = runners.setdefault(_budget(name), DryRunner(link, settings))
            pipeline = Pipeline(settings, link=link, dryrun=runner)
            started = time.perf_counter()
            said[name] = (await pipeline.predict(cell, layers={"dryrun"})).prediction
            took[name] = time.perf_counter() - started
    return said, took


AGAIN = "again: the counted while loop's crash"


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    if not HAS_TORCH:
        pytest.skip("torch is not installed")
    kernel = start_test_kernel(tmp_path_factory.mktemp("slow-cells-data"))
    try:
        kernel.run(SETUP, timeout=600)
        if HAS_TF:
            kernel.run(TF_SETUP, timeout=600)
        cells = {}
        for case in ALL_CASES:
            cells[f"{case.name}: crash"] = case.slow + case.crash
            cells[f"{case.name}: clean"] = case.slow + case.clean
        for trap, slow in TRAPS:
            cells[f"trap: {trap.name}"] = slow + trap.tail
        result = Seen(state_before=kernel.eval(STATE))
        result.said, result.took_s = asyncio.run(_verdicts(kernel, cells))
        result.state_after = kernel.eval(STATE, timeout=180)  # a busy machine: its message says why
        for case in ALL_CASES:  # the truth, once per case: the slow part for real, then each ending
            result.truths[case.name] = truth(kernel, case.slow, {"crash": case.crash, "clean": case.clean})
        for trap, slow in TRAPS:  # a trap's tail may continue its slow part's loop: run as one cell
            result.truths[trap.name] = truth(kernel, "pass", {"whole": slow + trap.tail})
        yield result
    finally:
        stop_test_kernel(kernel)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_crash_after_slow_work_is_observed_in_a_shortened_run(seen: Seen, case: Case) -> None:
    real = seen.truths[case.name]
    assert real.slow_s >= SLOW_FLOOR_S, f"the slow part ran only {real.slow_s:.1f} s for real"
    assert real.raised["crash"] == case.exception  # the truth: it really crashes so
    said = seen.said[f"{case.name}: crash"]
    assert said.crash and said.certainty == "observed", (said.message, said.notes)
    assert said.exception == case.exception
    assert said.line == case.line - 1
    assert "in a shortened run:" in said.message and " of " in said.message
    assert said.evidence and said.evidence[0].fact == "shortened dry run"
    raised = f"raised {case.exception} at line {case.line} in "
    assert any(n.startswith("shortened run 2 (") and raised in n for n in said.notes), said.notes
    assert seen.took_s[f"{case.name}: crash"] < _budget(case.name) + 1.0


def test_each_shortening_says_what_it_shortened(seen: Seen) -> None:
    messages = {case.name: seen.said[f"{case.name}: crash"].message for case in ALL_CASES}
    assert "rows (dds)" in messages["torch dataset used directly"]
    assert "rows (dbox['train'], dbox['test'])" in messages["arrays inside a dict"]
    assert "iterations of the while loop on line 2" in messages["counted while loop"]
    assert "iterations of the loop on line 1" in messages["comprehension over range"]
    if HAS_TF:
        assert "batches (tf_ds)" in messages[TF_CASE.name] and "epochs" in messages[TF_CASE.name]


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_clean_twin_gets_no_squiggle(seen: Seen, case: Case) -> None:
    assert seen.truths[case.name].raised["clean"] is None  # the truth: the twin runs clean
    said = seen.said[f"{case.name}: clean"]
    assert not said.crash
    assert said.message.startswith("no crash seen in a shortened run ("), said.message


@pytest.mark.parametrize("trap", [t for t, _slow in TRAPS], ids=lambda t: t.name)
def test_trap_gets_no_invented_crash(seen: Seen, trap: Trap) -> None:
    real = seen.truths[trap.name]
    assert real.raised["whole"] is None, "the trap must really run clean"
    said = seen.said[f"trap: {trap.name}"]
    assert not said.crash, (said.message, said.notes)
    assert said.message.startswith(("no crash seen in a shortened run", "no verdict:", "ran clean")), (
        said.message
    )


def test_a_cell_known_to_overrun_skips_its_full_run(seen: Seen) -> None:
    first, again = seen.said[f"{CASES[2].name}: crash"], seen.said[AGAIN]
    assert any(n.startswith("full dry run: did not finish in 3 s") for n in first.notes), first.notes
    assert again.crash and again.certainty == "observed" and again.exception == first.exception
    assert again.notes[0] == "full dry run: not run: its full dry run did not finish in 3 s before"
    assert "observed in a shortened dry run: the full run was not run" in again.notes
    assert seen.took_s[AGAIN] < BUDGET_S + 1.0


def test_kernel_state_unchanged_by_the_shortened_runs(seen: Seen) -> None:
    assert seen.state_after == seen.state_before
