"""Type recognition across library releases: by class object, whatever ``__module__`` a release reports.

CI runs this file twice: with the newest releases, and with pandas 2.x laid over them
(``CRANE_EXPECT_PANDAS_MAJOR=2``), so the kernel's pandas really is the major under test.
"""

from __future__ import annotations

import os

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

SETUP = """
import numpy as np, pandas as pd
frame = pd.DataFrame({'price': [1.5, 2.0], 'name': ['a', 'b']}, index=['x', 'y'])
col = frame['name']
idx = frame.index
arr = np.zeros((2, 3))
class MyFrame(pd.DataFrame):
    pass
sub = MyFrame({'a': [1]})
class Impostor:
    pass
Impostor.__module__ = 'pandas'
Impostor.__qualname__ = 'DataFrame'
fake = Impostor()
"""


@pytest.fixture(scope="module")
def v(kernel: TestKernel) -> TestKernel:
    kernel.run("%reset -f")
    kernel.run(SETUP)
    install_probe(kernel)
    return kernel


def test_kernel_runs_the_expected_pandas_major(v: TestKernel) -> None:
    major = int(v.eval("pd.__version__").strip("'").split(".")[0])
    expected = os.environ.get("CRANE_EXPECT_PANDAS_MAJOR")
    if expected is not None:
        assert major == int(expected), f"the kernel runs pandas {major}, this run is for {expected}"
    assert major in (2, 3)


def test_library_types_are_recognised_by_class(v: TestKernel) -> None:
    snap = snapshot(v, {"names": ["frame", "col", "idx", "arr", "sub", "fake"]})
    kinds = {name: s.kind for name, s in snap.variables.items()}
    assert kinds == {
        "frame": "dataframe",
        "col": "series",
        "idx": "index",
        "arr": "ndarray",
        "sub": "other",  # a user subclass may override what the probe would call: not read as a frame
        "fake": "other",  # a class that only claims pandas' name is not
    }
    assert snap.variables["frame"].columns is not None
    assert [c.name for c in snap.variables["frame"].columns] == ["price", "name"]


def test_text_column_dtype_is_reported_as_the_release_names_it(v: TestKernel) -> None:
    snap = snapshot(v, {"names": ["col"]})
    real = v.eval("str(col.dtype)").strip("'")
    assert snap.variables["col"].dtype == real
    assert real in ("object", "str")
