"""Budgets on a 5M-row x 20 mixed-dtype DataFrame: sampled stats, deadlines, other objects summarised."""

from __future__ import annotations

import time

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

pytestmark = pytest.mark.slow

BIG = """
import numpy as np, pandas as pd
n = 5_000_000
rng = np.random.default_rng(0)
cols = {}
for i in range(8):
    f = rng.random(n); f[::97] = np.nan; cols[f'f{i}'] = f
for i in range(4):
    cols[f'i{i}'] = rng.integers(0, 100, n)
words = np.array(['alpha', 'beta', 'gamma', '12', '3.5', None], dtype=object)
for i in range(4):
    cols[f's{i}'] = words[rng.integers(0, 6, n)]
for i in range(2):
    cols[f'c{i}'] = pd.Categorical.from_codes(rng.integers(0, 5, n), list('abcde'))
for i in range(2):
    cols[f'd{i}'] = pd.to_datetime(rng.integers(1_500_000_000, 1_600_000_000, n), unit='s')
big = pd.DataFrame(cols)
big.iloc[::1000, 18] = pd.NaT
del cols, f, i
small = [1, 2, 3]
"""


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(BIG, timeout=300)
    install_probe(kernel)
    return kernel


def test_5m_by_20_frame_answers_well_within_budget(k: TestKernel) -> None:
    query = {"names": ["big", "small"], "subscripts": ["big['s3']"], "request_budget_s": 2.0}
    snapshot(k, query)  # warm-up: first-call imports inside pandas
    t0 = time.monotonic()
    snap = snapshot(k, query)
    wall = time.monotonic() - t0
    print(f"\n5M x 20 probe: round trip {wall * 1000:.0f} ms, in kernel {snap.elapsed_ms:.0f} ms")
    assert wall < 2.0
    big = snap.variables["big"]
    assert big.shape == [5_000_000, 20] and big.n_columns == 20
    assert snap.variables["small"].length == 3
    cols = {c.name: c for c in big.columns or []}
    if not snap.deadline_hit:  # a loaded machine may run out of the per-object budget: then unknown
        f0, s0, d0 = cols["f0"].stats, cols["s0"].stats, cols["d0"].stats
        assert f0 and f0.sampled and not f0.nan_sampled and f0.nan_count == len(range(0, 5_000_000, 97))
        assert s0 and s0.sampled and s0.nan_sampled and s0.has_nan
        assert (
            s0.non_numeric_examples
            and "'alpha'" in s0.non_numeric_examples
            and "'12'" not in s0.non_numeric_examples
        )
        assert d0 and d0.nan_count == 5000 and d0.value_kind == "datetime"
        assert cols["c0"].stats and cols["c0"].stats.distinct == 5
    assert snap.variables["big['s3']"].kind == "series"


def test_object_deadline_leaves_fields_unknown_and_others_summarised(k: TestKernel) -> None:
    t0 = time.monotonic()
    snap = snapshot(k, {"names": ["big", "small"], "object_budget_s": 0.03})
    assert time.monotonic() - t0 < 1.5
    big = snap.variables["big"]
    assert snap.deadline_hit and big.error == "deadline"
    assert big.shape == [5_000_000, 20] and len(big.columns or []) == 20  # cheap fields still there
    assert any(c.stats is None for c in big.columns or [])
    assert snap.variables["small"].length == 3 and snap.variables["small"].error is None


def test_request_deadline_marks_remaining_objects(k: TestKernel) -> None:
    k.run("big2 = big")
    snap = snapshot(k, {"names": ["big", "big2", "small"], "request_budget_s": 0.05, "object_budget_s": 0.05})
    assert snap.deadline_hit
    later = [snap.variables[n] for n in ("big2", "small")]
    assert all(v.error == "deadline" for v in later)
    assert snap.variables["big2"].kind == "dataframe" and snap.variables["big2"].shape is None
