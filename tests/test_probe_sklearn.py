"""The probe on scikit-learn objects in a real kernel: estimators, pipelines, LabelEncoder."""

from __future__ import annotations

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

SETUP = """
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression, LinearRegression
from sklearn.preprocessing import StandardScaler, LabelEncoder
from sklearn.pipeline import Pipeline
from sklearn.base import BaseEstimator
X = pd.DataFrame({'a': [0.0, 1.0, 2.0, 3.0], 'b': [1.0, 0.0, 1.0, 0.0], 'c': [5.0, 6.0, 7.0, 8.0]})
y = np.array(['no', 'yes', 'no', 'yes'])
clf = LogisticRegression(C=0.5).fit(X, y)
unfitted = LinearRegression()
reg = LinearRegression().fit(X.values, np.c_[X['a'], X['c']])
pipe = Pipeline([('scale', StandardScaler()), ('model', LogisticRegression())]).fit(X, y)
raw_pipe = Pipeline([('scale', StandardScaler()), ('model', LogisticRegression())])
le = LabelEncoder().fit(['cat', 'dog', 'cat'])
class MyEst(BaseEstimator):
    def __init__(self, k=3):
        self.k = k
    @property
    def boom(self):
        raise RuntimeError('boom')
    def get_params(self, deep=True):
        raise RuntimeError('never call me')
mine = MyEst()
"""


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    install_probe(kernel)
    return kernel


def test_fitted_classifier(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["clf", "unfitted", "reg"]}).variables
    e = v["clf"].estimator
    assert v["clf"].kind == "estimator"
    assert v["clf"].type == "sklearn.linear_model._logistic.LogisticRegression"
    assert e and e.fitted is True and e.n_features_in == 3 and e.feature_names_in == ["a", "b", "c"]
    assert e.classes == ["'no'", "'yes'"] and e.params and e.params["C"] == "0.5"
    u = v["unfitted"].estimator
    assert u and u.fitted is False and u.n_features_in is None
    r = v["reg"].estimator
    assert r and r.fitted and r.n_features_in == 3 and r.feature_names_in is None


def test_pipelines(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["pipe", "raw_pipe"]}).variables
    p = v["pipe"].estimator
    assert p and p.steps == ["scale: StandardScaler", "model: LogisticRegression"]
    assert p.final_step == "LogisticRegression" and p.fitted is True
    assert p.n_features_in == 3 and p.classes == ["'no'", "'yes'"]
    raw = v["raw_pipe"].estimator
    assert raw and raw.fitted is False and raw.n_features_in is None


def test_label_encoder_and_user_estimator(k: TestKernel) -> None:
    snap = snapshot(k, {"names": ["le", "mine"], "chains": ["clf.coef_", "le.classes_", "mine.boom"]})
    le = snap.variables["le"].estimator
    assert le and le.fitted and le.classes == ["'cat'", "'dog'"]
    mine = snap.variables["mine"]
    assert mine.kind == "estimator" and mine.estimator and mine.estimator.fitted is False
    assert mine.estimator.params is None and mine.error is None  # its get_params was never called
    coef = snap.variables["clf.coef_"]
    assert coef.kind == "ndarray" and coef.shape == [1, 3]
    assert snap.variables["le.classes_"].shape == [2]
    assert snap.attributes["mine.boom"].exists is True and "mine.boom" not in snap.variables
