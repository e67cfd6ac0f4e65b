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


N_NAN_FLOAT = len(range(0, 5_000_000, 97))
#: A text column's dtype: ``object`` in pandas 2, the ``str`` string dtype by default in pandas 3.
TEXT_DTYPES = ("object", "str", "string")


def test_subscripted_and_cheap_columns_first_and_sampled_fields_say_so(k: TestKernel) -> None:
    """Every column's fields (a budget that fits a loaded machine: the speed is the benchmark's)."""
    query = {
        "names": ["big"],
        "subscripts": ["big['s3']", "big['i3']"],
        "object_budget_s": 5.0,
        "request_budget_s": 10.0,
    }
    snapshot(k, query)  # warm-up
    snap = snapshot(k, query)
    cols = {c.name: c for c in snap.variables["big"].columns or []}
    cheap = [name for name, c in cols.items() if c.dtype not in TEXT_DTYPES]
    assert len(cheap) == 16
    missing = [name for name in ["s3", "i3", *cheap] if cols[name].stats is None]
    assert not missing, f"subscripted or cheap columns without stats: {missing} ({snap.elapsed_ms:.0f} ms)"
    for name, c in cols.items():
        st = c.stats
        if st is None:  # only an object column may run out of its slice of the budget: then unknown
            assert c.dtype in TEXT_DTYPES and snap.deadline_hit and snap.variables["big"].error == "deadline"
            continue
        # 5M rows > sample_rows: distinct counts and examples come from a sample and say so
        assert st.sampled, name
        assert st.distinct is not None and st.distinct <= 100_000, name
        if c.dtype in TEXT_DTYPES:
            assert st.nan_sampled and st.nan_count is not None and st.nan_count < 100_000, name
            assert st.non_numeric_examples and "'alpha'" in st.non_numeric_examples
        else:  # full-length NaN counts and ranges: exact, so they must be right
            assert not st.nan_sampled, name
            expected_nan = N_NAN_FLOAT if name.startswith("f") else 5000 if name == "d0" else 0
            assert st.nan_count == expected_nan and st.has_nan == (expected_nan > 0), name
    for name in ("i0", "i1", "i2", "i3"):
        assert cols[name].stats.min == 0 and cols[name].stats.max == 99  # type: ignore[union-attr]
    assert cols["c0"].stats.distinct == 5 and cols["c0"].stats.value_kind == "categorical"  # type: ignore[union-attr]
    assert cols["d1"].stats.value_kind == "datetime"  # type: ignore[union-attr]


@pytest.mark.parametrize("budget", [0.04, 0.08, 0.15])
def test_tight_budget_leaves_out_object_columns_before_cheap_ones(k: TestKernel, budget: float) -> None:
    query = {"names": ["big"], "subscripts": ["big['s3']"], "object_budget_s": budget}
    snapshot(k, query)
    snap = snapshot(k, query)
    cols = snap.variables["big"].columns or []
    with_stats = {c.name for c in cols if c.stats is not None}
    missing = [c.name for c in cols if c.stats is None]
    if budget < 0.05:
        assert missing  # 20 columns at ~5-10 ms each cannot fit
    if missing:
        assert snap.deadline_hit and snap.variables["big"].error == "deadline"
    # s3 is computed first; any cheap column left out means every other object column was too
    assert "s3" in with_stats
    if any(c.dtype not in TEXT_DTYPES and c.stats is None for c in cols):
        assert not any(c.dtype in TEXT_DTYPES and c.name != "s3" and c.stats is not None for c in cols)
    assert [c.name for c in cols] == [f"f{i}" for i in range(8)] + [f"i{i}" for i in range(4)] + [
        f"s{i}" for i in range(4)
    ] + ["c0", "c1", "d0", "d1"]  # output order is the frame's order, whatever the work order


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
