"""Column statistics by backing: numpy, object, pandas' string dtypes (pandas 3's ``str`` too) and Arrow.

The probe reads a numpy column in one cached pass and sorts a copy of its sample; an object column is
never turned into pandas 3's ``str`` dtype on the way (0.6 s per 5M strings); the string dtypes give
the same fields as an object column of the same values; and the user's arrays stay as they were.
"""

from __future__ import annotations

import ast
import contextlib

import pytest
from conftest import CellError, TestKernel
from probe_util import install_probe, snapshot

from crane_lsp.snapshot import ValueStats

pytestmark = pytest.mark.slow

N = 300_000  # over sample_rows (100,000): distinct counts and examples are sampled

STATE = f"""
import numpy as np, pandas as pd
n = {N}
rng = np.random.default_rng(7)
f = rng.normal(size=n); f[-1] = np.nan; f[5] = -7.5; f[n - 2] = 9.25  # NaN in the last step only
g = np.full(n, np.nan); g[n // 2] = 3.0  # NaN everywhere but one value
ints = rng.integers(-50, 50, n); ints[-1] = -1000; ints[0] = 1000
when = pd.to_datetime(rng.integers(1_500_000_000, 1_600_000_000, n), unit='s').to_numpy().copy()
when[0] = np.datetime64('NaT'); when[-3] = np.datetime64('NaT'); when[7] = np.datetime64('2001-02-03')
frame = pd.DataFrame({{'f': f, 'g': g, 'ints': ints, 'when': when, 'flag': ints > 0,
                       'nothing': np.full(n, np.nan), 'never': np.full(n, np.datetime64('NaT'), 'M8[ns]')}})
words = np.array(['alpha', 'beta', 'gamma', '12', '3.5', None], dtype=object)[rng.integers(0, 6, n)]
texts = pd.DataFrame({{'obj': pd.Series(words, dtype=object), 'default': pd.Series(words),
                       'python': pd.Series(words, dtype='string[python]')}})
small = frame.head(500).copy()
"""

ARROW = """
import pyarrow as pa
texts['pyarrow'] = pd.Series(words, dtype='string[pyarrow]')
texts['arrow'] = pd.Series(words, dtype=pd.ArrowDtype(pa.string()))
texts['large'] = pd.Series(words, dtype=pd.ArrowDtype(pa.large_string()))
"""


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(STATE, timeout=300)
    with contextlib.suppress(CellError):  # no pyarrow here: the numpy-backed string dtypes only
        kernel.run(ARROW, timeout=120)
    install_probe(kernel)
    return kernel


def _columns(k: TestKernel, name: str) -> dict[str, ValueStats]:
    query = {"names": [name], "object_budget_s": 10.0, "request_budget_s": 20.0}
    snap = snapshot(k, query)
    out = {}
    for c in snap.variables[name].columns or []:
        assert c.stats is not None, c.name
        out[c.name] = c.stats
    return out


def test_numpy_columns_exact_nan_counts_and_ranges_over_every_step(k: TestKernel) -> None:
    cols = _columns(k, "frame")
    f, g, ints, when = cols["f"], cols["g"], cols["ints"], cols["when"]
    assert (f.nan_count, f.min, f.max, f.nan_sampled) == (1, -7.5, 9.25, False)
    assert (g.nan_count, g.min, g.max) == (N - 1, 3.0, 3.0)
    assert (ints.nan_count, ints.min, ints.max) == (0, -1000, 1000)
    assert when.nan_count == 2 and when.min == "2001-02-03 00:00:00" and when.value_kind == "datetime"
    assert cols["nothing"].nan_count == N and cols["nothing"].min is None and cols["nothing"].distinct == 0
    assert cols["never"].nan_count == N and cols["never"].min is None and cols["never"].distinct == 0
    assert cols["flag"].distinct == 2 and cols["flag"].value_kind == "binary"
    assert all(st.sampled for st in cols.values())
    # the sampled distinct count is pandas' own nunique on the same sample positions
    assert ints.distinct == 100 or ints.distinct == 101 or ints.distinct == 102
    assert f.examples and all(e != "nan" for e in f.examples)


def test_small_columns_read_whole_and_left_unsorted(k: TestKernel) -> None:
    """Below sample_rows the probe works on the column itself: it must sort a copy, never the data."""
    before = k.eval("[small[c].to_numpy().tobytes().hex()[:4000] for c in small.columns]")
    cols = _columns(k, "small")
    assert not any(st.sampled for st in cols.values())
    expected = ast.literal_eval(k.eval("[int(small[c].nunique()) for c in ('f', 'ints', 'when')]"))
    assert [cols[c].distinct for c in ("f", "ints", "when")] == expected
    assert k.eval("[small[c].to_numpy().tobytes().hex()[:4000] for c in small.columns]") == before


def test_object_text_column_is_not_converted_to_the_str_dtype(k: TestKernel) -> None:
    """pandas 3 infers ``str`` for a Series built over object strings: the probe passes the dtype."""
    k.run(
        "import pandas.core.arrays.string_arrow as _sa, pandas.core.arrays.string_ as _sp\n"
        "_converted = []\n"
        "_real = {c: c.__dict__['_from_sequence'] for c in (_sa.ArrowStringArray, _sp.StringArray)}\n"
        "for _c, _f in _real.items():\n"
        "    setattr(_c, '_from_sequence', classmethod(lambda cls, *a, _f=_f, **kw: "
        "(_converted.append(len(a[0])), _f.__func__(cls, *a, **kw))[1]))\n"
    )
    try:
        cols = _columns(k, "texts")
        snap = snapshot(k, {"names": ["words"], "subscripts": ["texts['obj']"]})
    finally:
        k.run("for _c, _f in _real.items(): setattr(_c, '_from_sequence', _f)\ndel _c, _f, _real, _sa, _sp")
    converted = ast.literal_eval(k.eval("_converted"))
    k.run("del _converted")
    assert not [size for size in converted if size > 20_000], converted  # samples only, never the column
    assert cols["obj"].value_kind == "categorical" and snap.variables["words"].stats is not None
    assert snap.variables["texts['obj']"].dtype == "object"


def test_string_dtypes_give_the_fields_of_an_object_column(k: TestKernel) -> None:
    cols = _columns(k, "texts")
    obj = cols["obj"]
    assert obj.sampled and obj.nan_sampled and obj.has_nan
    assert obj.non_numeric_examples and "'alpha'" in obj.non_numeric_examples
    assert "'12'" not in obj.non_numeric_examples
    fields = (
        "value_kind",
        "distinct",
        "nan_count",
        "has_nan",
        "non_numeric_examples",
        "sampled",
        "nan_sampled",
    )
    for name, st in cols.items():
        assert {f: getattr(st, f) for f in fields} == {f: getattr(obj, f) for f in fields}, name
        assert st.examples and set(st.examples) <= {"'alpha'", "'beta'", "'gamma'", "'12'", "'3.5'"}, name
