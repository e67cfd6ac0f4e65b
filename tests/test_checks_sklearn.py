"""scikit-learn checks: every crash case really raises in a real kernel; every near miss runs clean."""

from __future__ import annotations

import pytest

import crane_lsp.checks.sklearn  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, verify

SK = """
import warnings
warnings.filterwarnings('ignore')
import numpy as np, pandas as pd
from sklearn.preprocessing import StandardScaler
from sklearn.linear_model import LogisticRegression, LinearRegression
from sklearn.tree import DecisionTreeClassifier
from sklearn.model_selection import train_test_split
from sklearn import metrics
from sklearn.metrics import accuracy_score
rng = np.random.default_rng(0)
X = pd.DataFrame({'a': rng.normal(size=20), 'b': rng.normal(size=20), 'c': rng.normal(size=20)})
X2 = X[['a', 'b']].copy()
Xr = X[['c', 'b', 'a']].copy()
Xs = X.assign(c=['yes', 'no'] * 10)
Xn = X.assign(c=[np.nan] + [1.0] * 19)
y = pd.Series([0, 1] * 10)
yc = pd.Series(rng.normal(size=20))
yi = pd.Series([0.0, 1.0] * 10)
ys = pd.Series(['Yes', 'No'] * 10)
y_short = y[:15]
empty = X.iloc[:0]
arr = X.to_numpy()
fitted = LinearRegression().fit(X, y)
unfitted = LinearRegression()
proba = rng.uniform(size=20)
images = rng.normal(size=(20, 4, 4))
"""

CASES = [
    Case("predict-unfitted-kernel", "sklearn.not-fitted", SK, "p = unfitted.predict(X)\n", "NotFittedError"),
    Case(
        "predict-unfitted-cell",
        "sklearn.not-fitted",
        SK,
        "m = DecisionTreeClassifier()\nm.get_params()\np = m.predict(X)\n",
        "NotFittedError",
        2,
    ),
    Case(
        "predict-after-fit",
        "sklearn.not-fitted",
        SK,
        "m = DecisionTreeClassifier()\nm.fit(X, y)\np = m.predict(X)\nq = fitted.predict(X)\n",
        None,
    ),
    Case(
        "unfitted-inside-pipeline",
        "sklearn.not-fitted",
        SK + "from sklearn.pipeline import make_pipeline\npipe = make_pipeline(StandardScaler(), unfitted)\n",
        "pipe.fit(X, y)\np = unfitted.predict(X)\n",
        None,
    ),
    Case(
        "cell-model-in-pipeline",
        "sklearn.not-fitted",
        SK + "from sklearn.pipeline import make_pipeline\n",
        "m = LinearRegression()\npipe = make_pipeline(m)\npipe.fit(X, y)\np = m.predict(X)\n",
        None,
    ),
    Case("features-count", "sklearn.features", SK, "p = fitted.predict(X2)\n", "ValueError"),
    Case("features-order", "sklearn.features", SK, "p = fitted.predict(Xr)\n", "ValueError"),
    Case("features-1d", "sklearn.features", SK, "p = fitted.predict(arr[0])\n", "ValueError"),
    Case(
        "features-in-cell",
        "sklearn.features",
        SK,
        "sc = StandardScaler()\nX = sc.fit_transform(X)\nZ = sc.transform(X2)\n",
        "ValueError",
        2,
    ),
    Case(
        "features-fine",
        "sklearn.features",
        SK,
        "p = fitted.predict(X)\nq = fitted.predict(arr)\nsc = StandardScaler()\nX2 = sc.fit_transform(X2)\n"
        "Z = sc.transform(X[['a', 'b']])\n",
        None,
    ),
    Case("fit-lengths", "sklearn.lengths", SK, "m = LinearRegression().fit(X, y_short)\n", "ValueError"),
    Case("split-lengths", "sklearn.lengths", SK, "a, b, c, d = train_test_split(X, y_short)\n", "ValueError"),
    Case(
        "split-empty", "sklearn.lengths", SK, "a, b = train_test_split(empty, test_size=0.2)\n", "ValueError"
    ),
    Case(
        "lengths-fine",
        "sklearn.lengths",
        SK,
        "a, b, c, d = train_test_split(X, y, test_size=0.2)\nm = LinearRegression().fit(X, y)\n"
        "s = StandardScaler().fit(X, y_short)\n",
        None,
    ),
    Case(
        "classifier-continuous",
        "sklearn.continuous-target",
        SK,
        "m = LogisticRegression()\nm.fit(X, yc)\n",
        "ValueError",
        1,
    ),
    Case(
        "classifier-fine",
        "sklearn.continuous-target",
        SK,
        "m = LogisticRegression()\nm.fit(X, yi)\nr = LinearRegression()\nr.fit(X, yc)\n",
        None,
    ),
    Case(
        "scaler-1d-text",
        "sklearn.input-values",
        SK,
        "sc = StandardScaler()\nX = sc.fit_transform(X)\nys = sc.fit_transform(ys)\n",
        "ValueError",
        2,
    ),
    Case("text-column", "sklearn.input-values", SK, "m = LogisticRegression()\nm.fit(Xs, y)\n", "ValueError"),
    Case("nan-column", "sklearn.input-values", SK, "m = LinearRegression()\nm.fit(Xn, y)\n", "ValueError"),
    # a 3-D array where a 2-D X is required (images not flattened), and the flattened near miss
    Case(
        "x-3d",
        "sklearn.input-values",
        SK,
        "n = len(images)\nm = LogisticRegression()\nm.fit(images, y)\n",
        "ValueError",
        2,
    ),
    Case(
        "x-3d-flattened",
        "sklearn.input-values",
        SK,
        "flat = images.reshape(len(images), -1)\nm = LogisticRegression().fit(flat, y)\n",
        None,
    ),
    Case(
        "inputs-fine",
        "sklearn.input-values",
        SK,
        "sc = StandardScaler()\nZ = sc.fit_transform(Xn)\nm = LogisticRegression().fit(X, ys)\n"
        "t = DecisionTreeClassifier().fit(Xn, y)\n",
        None,
    ),
    Case(
        "metric-continuous", "sklearn.metric-continuous", SK, "a = accuracy_score(y, proba)\n", "ValueError"
    ),
    Case(
        "metric-continuous-module",
        "sklearn.metric-continuous",
        SK,
        "f = metrics.f1_score(y_true=yc, y_pred=y)\n",
        "ValueError",
    ),
    Case(
        "metric-fine",
        "sklearn.metric-continuous",
        SK,
        "a = accuracy_score(y, yi)\nb = metrics.r2_score(yc, proba)\nc = accuracy_score(y, proba > 0.5)\n",
        None,
    ),
    Case(
        "penalty-solver",
        "sklearn.invalid-params",
        SK,
        "m = LogisticRegression(max_iter=1000, solver='liblinear', penalty='elasticnet')\nm.fit(X, y)\n",
        "ValueError",
        1,
    ),
    Case(
        "penalty-default-solver",
        "sklearn.invalid-params",
        SK,
        "m = LogisticRegression(penalty='l1')\nm.fit(X, y)\n",
        "ValueError",
    ),
    Case(
        "penalty-fine",
        "sklearn.invalid-params",
        SK,
        "m = LogisticRegression(solver='liblinear', penalty='l1')\nm.fit(X, y)\n"
        "n = LogisticRegression(solver='saga', penalty='l2', max_iter=10)\nn.fit(X, y)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sklearn_check(kernel, case: Case) -> None:
    verify(kernel, case)
