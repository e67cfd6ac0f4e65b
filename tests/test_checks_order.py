"""Statement order: the right side of ``x[...] = f(x)`` reads the kernel's old ``x``.

Each crash case really raises on the predicted line in a real kernel; each near miss runs clean.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.pandas  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, verify

SALES = """
import numpy as np, pandas as pd
sales = pd.DataFrame({'qty': [1.0, np.nan, 3.0], 'price': [2.0, 3.0, 4.0]})
full = pd.DataFrame({'qty': [1.0, 2.0, 3.0]})
df = pd.DataFrame({'zip': [2134, 10001, 501], 'town': ['a', 'b', 'c']})
"""

CASES = [
    Case(
        "astype-int-own-column",
        "pandas.astype-int",
        SALES,
        "sales['qty'] = sales['qty'].astype(int)\n",
        "IntCastingNaNError",
        0,
    ),
    Case(
        "astype-int-own-column-after-line",
        "pandas.astype-int",
        SALES,
        "total = 0\nsales['qty'] = sales['qty'].astype(int)\nsales['x'] = 1\n",
        "IntCastingNaNError",
        1,
    ),
    Case(
        "astype-int-filled-first",
        "pandas.astype-int",
        SALES,
        "sales['qty'] = sales['qty'].fillna(0).astype(int)\n",
        None,
    ),
    Case("astype-int-no-nan", "pandas.astype-int", SALES, "full['qty'] = full['qty'].astype(int)\n", None),
    Case(
        "str-accessor-own-column",
        "pandas.accessor-dtype",
        SALES,
        "df['zip'] = df['zip'].str.zfill(5)\n",
        "AttributeError",
        0,
    ),
    Case(
        "str-accessor-after-astype-str",
        "pandas.accessor-dtype",
        SALES,
        "df['zip'] = df['zip'].astype(str).str.zfill(5)\n",
        None,
    ),
    Case(
        "str-accessor-text-column",
        "pandas.accessor-dtype",
        SALES,
        "df['town'] = df['town'].str.upper()\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_statement_order(kernel, case: Case) -> None:
    verify(kernel, case)


ML = """
import warnings
warnings.filterwarnings('ignore')
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression, LinearRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import cross_val_score
rng = np.random.default_rng(0)
features = rng.normal(size=(100, 4))
labels = np.array([0, 1] * 50)
preds = np.array([1, 0] * 50)
clf = LogisticRegression().fit(features, labels)
frame = pd.DataFrame(rng.normal(size=(100, 3)), columns=['a', 'b', 'c'])
target = pd.Series(rng.normal(size=100))
reg = LinearRegression().fit(frame, target)
cols = ['a', 'b']
model = LogisticRegression()
"""

BUILT_IN_CALL = [
    Case(
        "predict-column-slice", "sklearn.features", ML, "p = clf.predict(features[:, 1:])\n", "ValueError", 0
    ),
    Case("predict-full-slice", "sklearn.features", ML, "p = clf.predict(features[:10, 0:4])\n", None),
    Case("metric-sliced-truth", "sklearn.lengths", ML, "s = f1_score(labels[:50], preds)\n", "ValueError", 0),
    Case("metric-both-sliced", "sklearn.lengths", ML, "s = f1_score(labels[:50], preds[-50:])\n", None),
    Case(
        "predict-selected-columns-values",
        "sklearn.features",
        ML,
        "p = reg.predict(frame[cols].values)\n",
        "ValueError",
        0,
    ),
    Case(
        "predict-all-columns-values",
        "sklearn.features",
        ML,
        "p = reg.predict(frame[['a', 'b', 'c']].to_numpy())\n",
        None,
    ),
    Case(
        "cv-short-target",
        "sklearn.lengths",
        ML,
        "s = cross_val_score(model, features, labels[:-10], cv=3)\n",
        "ValueError",
        0,
    ),
    Case(
        "cv-same-lengths",
        "sklearn.lengths",
        ML,
        "s = cross_val_score(model, features[:-10], labels[:-10], cv=3)\n",
        None,
    ),
    Case("predict-head", "sklearn.features", ML, "p = reg.predict(frame.head(5)[cols])\n", "ValueError", 0),
]


@pytest.mark.parametrize("case", BUILT_IN_CALL, ids=str)
def test_values_built_inside_the_call(kernel, case: Case) -> None:
    import crane_lsp.checks.sklearn  # noqa: F401  (registers the checks)

    verify(kernel, case)


LOOP_SETUP = (
    "from sklearn.decomposition import PCA\npca = PCA(n_components=2)\n"
    "fitted = PCA(n_components=2).fit([[0, 1], [1, 0], [2, 2]])"
)

LOOP_BODIES = [
    # the first pass of a loop over a non-empty literal or range certainly runs its body
    Case(
        "undefined-in-range-loop",
        "python.undefined-name",
        "",
        "total = 0\nfor i in range(3):\n    total += undefined_step\n",
        "NameError",
        2,
    ),
    Case(
        "defined-in-range-loop",
        "python.undefined-name",
        "step = 2",
        "total = 0\nfor i in range(3):\n    total += step\n",
        None,
    ),
    Case(
        "empty-range-loop",
        "python.undefined-name",
        "",
        "for i in range(0):\n    print(undefined_step)\n",
        None,
    ),
    Case(
        "unfitted-components-in-loop",
        "python.missing-attribute",
        LOOP_SETUP,
        "for k in [0, 1]:\n    print(pca.components_[k])\n",
        "AttributeError",
        1,
    ),
    Case(
        "fitted-components-in-loop",
        "python.missing-attribute",
        LOOP_SETUP,
        "for k in [0, 1]:\n    print(fitted.components_[k])\n",
        None,
    ),
    Case(
        "break-before-the-use",
        "python.undefined-name",
        "",
        "for i in range(3):\n    if i == 0:\n        break\n    print(undefined_step)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", LOOP_BODIES, ids=str)
def test_loop_bodies(kernel, case: Case) -> None:
    import crane_lsp.checks.python  # noqa: F401  (registers the checks)

    verify(kernel, case)


KERAS_ARRAYS = """
import numpy as np
from tensorflow import keras
X = np.zeros((8, 4), dtype='float32')
y3 = np.eye(3, dtype='float32')[[0, 1, 2, 0, 1, 2, 0, 1]]
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation='softmax')])
model.compile(optimizer='adam', loss='categorical_crossentropy')
model3 = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation='softmax')])
model3.compile(optimizer='adam', loss='categorical_crossentropy')
"""

KERAS_TARGETS = [
    Case(
        "one-hot-width",
        "keras.units-classes",
        KERAS_ARRAYS,
        "h = model.fit(X, y3, epochs=1, verbose=0)\n",
        "ValueError",
        0,
    ),
    Case(
        "one-hot-width-matches",
        "keras.units-classes",
        KERAS_ARRAYS,
        "h = model3.fit(X, y3, epochs=1, verbose=0)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", KERAS_TARGETS, ids=str)
def test_keras_one_hot_array_targets(kernel, case: Case) -> None:
    import crane_lsp.checks.keras  # noqa: F401  (registers the checks)

    verify(kernel, case)


TEXT = """
import pandas as pd
shop = pd.DataFrame({'price': [1.5, 2.0], 'qty': [3, 4]})
shop['name'] = pd.Series(['pen', 'ink'], dtype='string')
"""

TEXT_ARITHMETIC = [
    Case(
        "number-plus-text",
        "pandas.text-arithmetic",
        TEXT,
        "total = shop['price'] + shop['name']\n",
        "TypeError",
        0,
    ),
    Case(
        "text-minus-number",
        "pandas.text-arithmetic",
        TEXT,
        "n = 1\nd = shop['name'] - shop['qty']\n",
        "TypeError",
        1,
    ),
    Case("number-times-text", "pandas.text-arithmetic", TEXT, "rep = shop['qty'] * shop['name']\n", None),
    Case("number-plus-number", "pandas.text-arithmetic", TEXT, "total = shop['price'] * shop['qty']\n", None),
]


@pytest.mark.parametrize("case", TEXT_ARITHMETIC, ids=str)
def test_arithmetic_with_a_text_column(kernel, case: Case) -> None:
    import crane_lsp.checks.frame_ops  # noqa: F401  (registers the check)

    verify(kernel, case)
