"""Checks for inputs a library rejects (issue 33's checks-alone misses): a pipeline given another width,
a text column in a numeric reduction, misspelt columns in seaborn and ``DataFrame.plot``, matplotlib
sequences of lengths that cannot go together, and shapes the walk now follows (``reshape``, ``iloc``).

Each crash case really raises in a real kernel, on the predicted line, with the predicted class; each near
miss really runs clean with the check silent. Forms are the ones notebooks write: values built inside the
call, module-level objects, chains.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.arrays
import crane_lsp.checks.pandas
import crane_lsp.checks.pipelines
import crane_lsp.checks.plot_columns
import crane_lsp.checks.plot_lengths
import crane_lsp.checks.sklearn
import crane_lsp.checks.text_reductions  # noqa: F401
from tests.lib_checks_util import Case, verify

ML = """
import numpy as np, pandas as pd
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
X = rng.random((30, 4)); y = (X[:, 0] > 0.5).astype(int)
df = pd.DataFrame(X, columns=list('abcd'))
m = LogisticRegression().fit(X, y)
pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
fpipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(df, y)
ct = make_pipeline(ColumnTransformer([('s', StandardScaler(), ['a', 'b'])]), LogisticRegression()).fit(df, y)
fresh = make_pipeline(StandardScaler(), LogisticRegression())
named = df.assign(city=['paris', 'oslo', 'rome'] * 10)
"""

TEXT = """
import pandas as pd
people = pd.DataFrame({'age': [31.0, 42, 25], 'score': [1, 2, 3], 'name': ['ann', 'bob', 'cy']})
mixed = people.astype({'name': object})
"""

PLOTS = """
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import seaborn as sns
import numpy as np, pandas as pd
tips = pd.DataFrame({'Age': [21.0, 35, 48], 'bill': [10.0, 12, 9], 'day': ['mon', 'tue', 'wed']})
by_day = tips.set_index('day')
heights = np.array([3, 5, 2])
fig, ax = plt.subplots()
"""

CASES = [
    # a fitted Pipeline: its first step validates X's width and dimensions
    Case("pipe-fewer", "sklearn.pipeline-features", ML, "pipe.predict(X[:, 1:])\n", "ValueError"),
    Case(
        "pipe-1d-row",
        "sklearn.pipeline-features",
        ML,
        "row = X[0]\npipe.predict_proba(row)\n",
        "ValueError",
        1,
    ),
    Case("pipe-frame-cols", "sklearn.pipeline-features", ML, "fpipe.predict(df[['a', 'b']])\n", "ValueError"),
    Case("pipe-iloc-row", "sklearn.pipeline-features", ML, "fpipe.predict(df.iloc[0])\n", "ValueError"),
    Case(
        "pipe-near",
        "sklearn.pipeline-features",
        ML,
        "pipe.predict(X[:5])\npipe.predict(X[0].reshape(1, -1))\nfpipe.predict(df.iloc[:, :])\n"
        "ct.predict(df[['a', 'b', 'c']])\n",
        None,
    ),
    Case(
        "pipe-method-missing-near",
        "sklearn.pipeline-features",
        ML,
        "try:\n    pipe.transform(X[:, 1:])\nexcept AttributeError:\n    pass\n",
        None,
    ),
    Case(
        "pipe-fit-text", "sklearn.pipeline-features", ML, "fresh.fit(named[['a', 'city']], y)\n", "ValueError"
    ),
    Case(
        "pipe-predict-text",
        "sklearn.pipeline-features",
        ML,
        "fpipe.predict(named.drop(columns='a'))\n",
        "ValueError",
    ),
    Case(
        "pipe-fit-near",
        "sklearn.pipeline-features",
        ML,
        "fresh.fit(named[['a', 'b']], y)\nfresh.fit(X[:, :2], y)\n",
        None,
    ),
    # the walk follows ``reshape`` and ``iloc`` now: the plain-estimator check sees the wrong width
    Case("reshape-whole", "sklearn.features", ML, "m.predict(X.reshape(1, -1))\n", "ValueError"),
    Case("iloc-fewer", "sklearn.features", ML, "m.predict(df.iloc[:, 1:].values)\n", "ValueError"),
    # positions past the end along any axis, slices elsewhere in the key (slices never raise)
    Case("index-column", "array.index-range", ML, "first = X[:, 0]\nlast = X[:, 4]\n", "IndexError", 1),
    Case("index-column-near", "array.index-range", ML, "X[:, 3]\nX[1:, -4]\nX[:, 1:9]\nX[29, :]\n", None),
    Case("iloc-column", "pandas.iloc-range", TEXT, "people.iloc[:, 3]\n", "IndexError"),
    Case(
        "iloc-column-near",
        "pandas.iloc-range",
        TEXT,
        "people.iloc[:, 2]\npeople.iloc[1:9, :]\npeople.iloc[-3, 0]\n",
        None,
    ),
    # text in a numeric reduction (pandas 3: TypeError)
    Case("mean-frame", "pandas.text-reduction", TEXT, "people.mean()\n", "TypeError"),
    Case(
        "median-selection", "pandas.text-reduction", TEXT, "people[['age', 'name']].median()\n", "TypeError"
    ),
    Case("mean-column", "pandas.text-reduction", TEXT, "people['name'].mean()\n", "TypeError"),
    Case("mean-object", "pandas.text-reduction", TEXT, "mixed.std()\n", "TypeError"),
    Case("groupby-mean", "pandas.text-reduction", TEXT, "people.groupby('score').mean()\n", "TypeError"),
    Case(
        "reductions-near",
        "pandas.text-reduction",
        TEXT,
        "people.mean(numeric_only=True)\npeople.sum()\npeople.min()\npeople[['age', 'score']].mean()\n"
        "people.groupby('name').mean()\npeople.describe()\n",
        None,
    ),
    # misspelt columns in seaborn and DataFrame.plot
    Case(
        "sns-x",
        "plot.seaborn-column",
        PLOTS,
        "sns.scatterplot(data=tips, x='Agee', y='bill')\n",
        "ValueError",
    ),
    Case(
        "sns-positional-hue",
        "plot.seaborn-column",
        PLOTS,
        "sns.histplot(tips, x='Age', hue='dya')\n",
        "ValueError",
    ),
    Case(
        "sns-regplot",
        "plot.seaborn-column",
        PLOTS,
        "col = 'bil'\nsns.regplot(data=tips, x='Age', y=col)\n",
        "KeyError",
        1,
    ),
    Case(
        "sns-near",
        "plot.seaborn-column",
        PLOTS,
        "sns.scatterplot(data=by_day, x='day', y='bill')\nsns.barplot(data=tips, x='day', y='bill')\n"
        "sns.lineplot(x=[1, 2], y=[3, 4])\n",
        None,
    ),
    Case("frame-plot-x", "plot.frame-column", PLOTS, "tips.plot(x='Agee', y='bill')\n", "KeyError"),
    Case(
        "frame-plot-scatter", "plot.frame-column", PLOTS, "tips.plot.scatter(x='Age', y='bil')\n", "KeyError"
    ),
    Case(
        "frame-plot-ylist",
        "plot.frame-column",
        PLOTS,
        "tips.plot(kind='bar', x='day', y=['Age', 'bil'])\n",
        "KeyError",
    ),
    Case(
        "frame-plot-near",
        "plot.frame-column",
        PLOTS,
        "tips.plot(x='Age', y='bill')\ntips.plot.bar(x='day', y=['Age', 'bill'])\n"
        "tips.plot(kind='hist', y='Age')\n",
        None,
    ),
    # matplotlib lengths that really raise
    Case("bar-lengths", "plot.lengths", PLOTS, "plt.bar(['a', 'b', 'c'], heights[:2])\n", "ValueError"),
    Case("plot-lengths", "plot.lengths", PLOTS, "ax.plot(tips['Age'], [1, 2])\n", "ValueError"),
    Case(
        "scatter-lengths",
        "plot.lengths",
        PLOTS,
        "plt.scatter(heights, tips['bill'][:2], 20, 'r')\n",
        "ValueError",
    ),
    Case("plot-fmt-lengths", "plot.lengths", PLOTS, "plt.plot(heights, heights[1:], 'r-')\n", "ValueError"),
    Case("pie-labels", "plot.lengths", PLOTS, "plt.pie(heights, labels=['a', 'b'])\n", "ValueError"),
    Case(
        "xticks-labels",
        "plot.lengths",
        PLOTS,
        "plt.xticks(np.arange(3), ['a', 'b'], rotation=45)\n",
        "ValueError",
    ),
    Case(
        "set-yticks-labels",
        "plot.lengths",
        PLOTS,
        "ax.set_yticks([0, 1], labels=['a', 'b', 'c'])\n",
        "ValueError",
    ),
    Case(
        "ticks-near",
        "plot.lengths",
        PLOTS,
        "plt.xticks([0, 1, 2], [])\nax.set_xticks(heights, ['a', 'b', 'c'])\n",
        None,
    ),
    Case(
        "lengths-near",
        "plot.lengths",
        PLOTS,
        "plt.bar(['a', 'b', 'c'], heights)\nplt.bar(['a', 'b', 'c'], [1])\nplt.plot([1, 2])\n"
        "plt.legend(['a', 'b', 'c'])\nplt.bar([1, 2, 3], heights, color=['r', 'g'])\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_input_check(kernel, case: Case) -> None:
    verify(kernel, case)
