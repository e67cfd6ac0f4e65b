"""matplotlib/seaborn checks: every crash case really raises in a real kernel; every near miss runs clean."""

from __future__ import annotations

import pytest

import crane_lsp.checks.plotting  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, verify

PLT = """
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import seaborn as sns
import numpy as np, pandas as pd
adv = np.zeros((3, 8, 8), dtype='float32')
gray = np.zeros((8, 8))
rgb = np.zeros((8, 8, 3))
line = np.zeros(8)
X = np.ones((20, 3))
counts = pd.Series([3, 2], index=['a', 'b'])
fig, ax = plt.subplots()
"""

CASES = [
    Case("imshow-channels-first", "plot.imshow-shape", PLT, "plt.imshow(adv)\n", "TypeError"),
    Case("imshow-1d", "plot.imshow-shape", PLT, "plt.figure()\nplt.imshow(line)\n", "TypeError", 1),
    Case("imshow-axes", "plot.imshow-shape", PLT, "ax.imshow(adv)\n", "TypeError"),
    Case(
        "imshow-fine",
        "plot.imshow-shape",
        PLT,
        "plt.imshow(gray)\nplt.imshow(rgb)\nplt.imshow(adv.transpose(1, 2, 0))\nax.imshow(adv[0])\n",
        None,
    ),
    Case(
        "scatter-s-twice",
        "plot.call-signature",
        PLT,
        "plt.scatter(X[:, 0], X[:, 1], X[:, 2], marker='X', s=200, c='red')\n",
        "TypeError",
    ),
    Case(
        "barplot-positional",
        "plot.call-signature",
        PLT,
        "plt.figure()\nlabels = sns.barplot(counts.index, counts)\n",
        "TypeError",
        1,
    ),
    Case(
        "plot-calls-fine",
        "plot.call-signature",
        PLT,
        "plt.scatter(X[:, 0], X[:, 1], X[:, 2], c='red')\nsns.barplot(x=counts.index, y=counts)\n"
        "plt.plot(line, line, 'r-', label='x')\nplt.title('t')\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_plotting_check(kernel, case: Case) -> None:
    verify(kernel, case)
