"""Slow cells written the way notebooks are, for the shortened dry run's tests and benchmark.

Each crash case is ``slow + crash`` (a real crash after 20 s or more of real work) with a clean twin
``slow + clean``; each trap is ``trap_slow + tail``, a cell that runs clean in full but whose run on
a naive sample would crash (lost classes, too few rows for a parameter, positions, labels or dates
beyond the sample, size-dependent reshapes and arithmetic, a loop that must finish to define a name,
a full-size object meeting a sampled one). The amount of work is calibrated in the kernel on the
machine it runs on (``SETUP`` times a small piece of it), so a crash case really takes 20 s or more
in full however fast or busy the machine is.

The truth is established for real, once per case (``truth``): the slow part runs in the kernel,
timed (wall and CPU seconds), then each tail; the
dry runs of the whole cells happen before it (a dry run changes nothing, so the kernel state is the
one the cells would meet).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tests.conftest import TestKernel

FULL_S = 30.0  # the work each crash case is sized for (at least 20 s, with a margin)
#: the least the slow part must really take: far beyond the budget (sized at the fixture's start,
#: the work runs faster when the machine is quieter later, so not FULL_S itself)
SLOW_FLOOR_S = 12.0
TRAP_S = 8.0  # the work before each trap: more than the dry run's budget


@dataclass(frozen=True)
class Case:
    name: str
    slow: str
    crash: str
    clean: str
    exception: str
    line: int  # 1-based line of the crash in ``slow + crash``


@dataclass(frozen=True)
class Trap:
    name: str
    tail: str
    why: str  # the class of invented crash it sets


@dataclass
class Truth:
    slow_s: float  # wall seconds the slow part really ran
    cpu_s: float  # CPU seconds the kernel spent on it
    raised: dict[str, str | None] = field(default_factory=dict)  # cell name -> exception or None


SETUP = f"""
import time, numpy as np, pandas as pd
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
_rng = np.random.default_rng(0)

def _per_unit(work, units):  # CPU seconds of a one-thread loop: what a busy machine does not change
    t = time.process_time(); work(); return (time.process_time() - t) / units

# one thread for BLAS/OpenMP (KMeans) and torch: CPU seconds of one thread are what a busy machine
# does not change, so the work sized here takes as long later, whatever else runs then (wall-clock
# sizing, taken beside a browser suite, once left a "30 s" KMeans at 2.6 s on a quieter machine)
from threadpoolctl import threadpool_limits as _limits
_limits(1)

ap_df = pd.DataFrame({{'price': _rng.random(20_000), 'qty': _rng.integers(1, 10, 20_000),
                      'region': _rng.choice(['n', 's', 'e', 'w'], 20_000)}})
_c = _per_unit(lambda: ap_df.apply(lambda r: r['price'] * r['qty'], axis=1), 20_000)
_n = int({FULL_S} / _c)
ap_df = pd.DataFrame({{'price': _rng.random(_n), 'qty': _rng.integers(1, 10, _n),
                      'region': _rng.choice(['n', 's', 'e', 'w'], _n)}})

gr_df = pd.DataFrame({{'user': _rng.integers(0, 4000, 12_000), 'amount': _rng.random(12_000)}})
_c = _per_unit(lambda: [p['amount'].sum() / len(p) for _u, p in gr_df.groupby('user')], 4000)
_u = int(1.2 * {FULL_S} / _c)  # a margin: the cost per group falls as groups grow in number
gr_df = pd.DataFrame({{'user': _rng.integers(0, _u, 3 * _u), 'amount': _rng.random(3 * _u)}})

km_X = _rng.normal(size=(60_000, 8))
_c = _per_unit(lambda: KMeans(n_clusters=8, n_init=1, random_state=0).fit(km_X), 1)
km_restarts = max(2, int({FULL_S} / _c))
km_new = _rng.normal(size=(50, 5))
km_new_ok = _rng.normal(size=(50, 8))

pw_P = _rng.random((300, 3))
def _pairs(m):
    D = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            D[i, j] = np.sqrt(((pw_P[i] - pw_P[j]) ** 2).sum())
_c = _per_unit(lambda: _pairs(300), 300 * 300)
# a margin: the per-pair cost measured here ran a third slower than the real loop once (19.5 s of 30)
pw_P = _rng.random((int((1.5 * {FULL_S} / _c) ** 0.5), 3))

_n = 2_000_000
tr_df = pd.DataFrame({{'a': _rng.random(_n), 'b': _rng.random(_n),
                      'label': np.r_[np.zeros(_n - 40, int), np.ones(28, int), np.full(12, 2)]}})
_c = _per_unit(lambda: tr_df.head(20_000).apply(lambda r: r['a'] + r['b'], axis=1), 20_000)
tr_df = tr_df.iloc[: max(30_000, min(_n, int({TRAP_S} / _c)))].copy()
tr_df.iloc[-40:, 2] = np.r_[np.ones(28, int), np.full(12, 2)]
tr_ts = pd.Series(_rng.random(len(tr_df)), index=pd.date_range('2020-01-01', periods=len(tr_df), freq='min'))
tr_box = {{'y': tr_df['label'].to_numpy()}}
"""

TORCH_SETUP = f"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)  # sized by CPU seconds of one thread, as in SETUP
tx = torch.randn(20_000, 32)
ty = (tx.sum(1) > 0).long()
tl = DataLoader(TensorDataset(tx, ty), batch_size=64, shuffle=True)
tmodel = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
topt = torch.optim.SGD(tmodel.parameters(), lr=0.01)
def _epoch():
    for xb, yb in tl:
        topt.zero_grad(); nn.functional.cross_entropy(tmodel(xb), yb).backward(); topt.step()
_epoch()  # the first epoch pays torch's lazy set-up: time the ones after it
t_epochs = max(2, int({FULL_S} / _per_unit(lambda: (_epoch(), _epoch()), 2)))
tx_test = torch.randn(500, 31)
tx_test_ok = torch.randn(500, 32)
"""

CASES = [
    Case(
        "row-wise apply",
        "ap_total = ap_df.apply(lambda r: r['price'] * r['qty'], axis=1)\n",
        "ap_df['code'] = ap_df['regoin'].map({'n': 0, 's': 1})",
        "ap_df['code'] = ap_df['region'].map({'n': 0, 's': 1})",
        "KeyError",
        2,
    ),
    Case(
        "loop over groups",
        "gr_stats = {}\nfor user, part in gr_df.groupby('user'):\n"
        "    gr_stats[user] = part['amount'].sum() / len(part)\n",
        "gr_top = pd.Series(gr_stats).sort_values().tail(10).to_frame('mean').plott()",
        "gr_top = pd.Series(gr_stats).sort_values().tail(10).to_frame('mean').round(2)",
        "AttributeError",
        4,
    ),
    Case(
        "KMeans with many restarts",
        "km = KMeans(n_clusters=8, n_init=km_restarts, random_state=0).fit(km_X)\n",
        "km_labels = km.predict(km_new)",
        "km_labels = km.predict(km_new_ok)",
        "ValueError",
        2,
    ),
    Case(
        "pairwise-distance loop",
        "n = len(pw_P)\npw_D = np.zeros((n, n))\nfor i in range(n):\n    for j in range(n):\n"
        "        pw_D[i, j] = np.sqrt(((pw_P[i] - pw_P[j]) ** 2).sum())\n",
        "pw_score = pw_D.max() / pw_scale",
        "pw_score = pw_D.max() / pw_D.mean()",
        "NameError",
        6,
    ),
]

TORCH_CASE = Case(
    "torch training loop",
    "for epoch in range(t_epochs):\n    for xb, yb in tl:\n        topt.zero_grad()\n"
    "        loss = nn.functional.cross_entropy(tmodel(xb), yb)\n"
    "        loss.backward()\n        topt.step()\n",
    "t_preds = tmodel(tx_test).argmax(1)",
    "t_preds = tmodel(tx_test_ok).argmax(1)",
    "RuntimeError",
    7,
)

TRAP_SLOW = "tr_s = tr_df.apply(lambda r: r['a'] + r['b'], axis=1)\n"
TRAPS = [
    Trap(
        "lost classes",
        "tr_scores = cross_val_score(LogisticRegression(), tr_df[['a', 'b']], tr_df['label'],"
        " cv=StratifiedKFold(5))",
        "a class-sorted label with a rare class: a naive sample loses it (stratified split, classifier)",
    ),
    Trap(
        "too few rows for n_neighbors",
        "tr_knn = KNeighborsClassifier(n_neighbors=400).fit(tr_df[['a', 'b']], tr_df['label'])\n"
        "tr_knn_pred = tr_knn.predict(tr_df[['a', 'b']].head(5))",
        "n_neighbors above the sample's rows",
    ),
    Trap("position beyond the sample", "tr_row = tr_df.iloc[25_000]", "iloc on a position the sample lacks"),
    Trap("label beyond the sample", "tr_row = tr_df.loc[25_001]", "loc on a row label the sample lacks"),
    Trap("date beyond the sample", "tr_at = tr_ts.loc['2020-01-15 10:07']", "a time the sample lacks"),
    Trap(
        "size-dependent reshape",
        "tr_m = tr_df[['a', 'b']].to_numpy()[: len(tr_df) // 500 * 500].reshape(500, -1)",
        "a reshape whose size depends on the rows",
    ),
    Trap(
        "size-dependent arithmetic",
        "tr_chunks = len(tr_df) // 1000\ntr_avg = int(tr_s.sum()) // tr_chunks",
        "a division by a count the sample makes zero",
    ),
    Trap(
        "loop that must finish",
        "for tr_i in range(5000):\n    if tr_i == 4321:\n        tr_found = tr_i\ntr_half = tr_found / 2",
        "a name bound only by a late iteration",
    ),
    Trap(
        "full-size object meets a sample",
        "tr_sum = tr_df['label'].to_numpy() + tr_box['y']",
        "an object inside a container is not sampled",
    ),
]


def truth(kernel: TestKernel, slow: str, tails: dict[str, str], timeout: float = 900) -> Truth:
    """Run ``slow`` for real (timed), then each tail: what really happens (exception name or None)."""
    kernel.run("import time as _truth_time\n_truth_cpu = _truth_time.process_time()")
    started = time.perf_counter()
    kernel.run(slow, timeout=timeout)
    wall = time.perf_counter() - started
    found = Truth(wall, float(kernel.eval("_truth_time.process_time() - _truth_cpu")))
    for name, tail in tails.items():
        reply: dict[str, Any] = kernel.run(tail, timeout=timeout, allow_error=True)
        found.raised[name] = reply["ename"] if reply["status"] == "error" else None
    return found
