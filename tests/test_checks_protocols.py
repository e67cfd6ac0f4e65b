"""Certain by the runtime's own protocols: each rule tried with the real library in a real kernel.

scikit-learn decides "fitted" by ``check_is_fitted`` (``__sklearn_is_fitted__`` first, then attributes
ending in "_"), and meta-estimators delegate to what they wrap; a module serves attributes through a PEP
562 ``__getattr__``; a class through ``__getattr__`` or its metaclass. Where such a hook could answer and
the probe cannot run it, no certain finding. Every crash case really raises where the verdict says;
every near miss really runs clean.
"""

from __future__ import annotations

import asyncio

from check_util import assert_predicts, assert_silent_and_runs, facts_and_snapshot, predict, prepare, run_cell

from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings

SK = """
import warnings
warnings.filterwarnings('ignore')
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import FixedThresholdClassifier, GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.feature_selection import SelectFromModel
rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
y = (X[:, 0] > 0).astype(int)
clf = LogisticRegression().fit(X, y)
frozen = FixedThresholdClassifier(FrozenEstimator(clf), threshold=0.3)
bare = FixedThresholdClassifier(LogisticRegression(), threshold=0.3)
search = GridSearchCV(clf, {'C': [1.0]})

class AlwaysFitted(ClassifierMixin, BaseEstimator):
    '''Fitted by its own word: check_is_fitted asks __sklearn_is_fitted__, which the probe may not run.'''
    def fit(self, X, y=None):
        return self
    def predict(self, X):
        return X[:, 0] > 0
    def __sklearn_is_fitted__(self):
        return True

own = Pipeline([('m', AlwaysFitted())])
"""


def _verdict(kernel, setup: str, cell: str) -> Prediction:
    """The pipeline's verdict from a real snapshot (checks only: no dry run, no LLM)."""
    prepare(kernel, setup)
    _, snap = facts_and_snapshot(kernel, cell)
    return asyncio.run(Pipeline(Settings()).predict(cell, snapshot=snap, layers={"checks"})).prediction


# ------------------------------------------------------------------------------------------------
# scikit-learn: fittedness as check_is_fitted and the meta-estimators decide it
# ------------------------------------------------------------------------------------------------


def test_prefit_estimator_inside_a_meta_estimator_is_not_a_not_fitted_error(kernel) -> None:
    # FixedThresholdClassifier(FrozenEstimator(clf)) predicts without fit: its inner estimator is fitted
    assert_silent_and_runs(kernel, SK, "p = frozen.predict(X)\nq = frozen.predict_proba(X)\n")
    # the same, built in the cell
    cell = "m = FixedThresholdClassifier(FrozenEstimator(clf))\np = m.predict(X)\n"
    assert_silent_and_runs(kernel, SK, cell)


def test_unfitted_meta_estimator_is_still_caught(kernel) -> None:
    # nothing inside is fitted: the meta-estimator raises NotFittedError, certain
    found = assert_predicts(kernel, SK, "n = len(X)\np = bare.predict(X)\n", "NotFittedError", 1)
    assert found.check_id == "sklearn.not-fitted"
    assert _verdict(kernel, SK, "n = len(X)\np = bare.predict(X)\n").certainty == "certain"
    cell = "m = FixedThresholdClassifier(LogisticRegression())\np = m.predict(X)\n"
    assert_predicts(kernel, SK, cell, "NotFittedError", 1, check_id="sklearn.not-fitted")
    # a search checks itself first: a fitted estimator inside does not make it usable
    assert_predicts(kernel, SK, "p = search.predict(X)\n", "NotFittedError", 0, check_id="sklearn.not-fitted")


def test_a_class_that_says_it_is_fitted_is_believed(kernel) -> None:
    # Pipeline asks its last step; that step's __sklearn_is_fitted__ (user code, never run by the
    # probe) says True: no finding, and the pipeline really predicts
    prepare(kernel, SK)
    _, snap = facts_and_snapshot(kernel, "p = own.predict(X)\n")
    estimator = snap.variables["own"].estimator
    assert estimator is not None and estimator.fitted is None
    assert_silent_and_runs(kernel, SK, "p = own.predict(X)\n")


def test_meta_estimator_with_another_rule_gets_no_not_fitted_claim(kernel) -> None:
    # SelectFromModel around an unfitted estimator raises ValueError, not NotFittedError: no claim of
    # NotFittedError; around a fitted one it transforms without fit
    cell = "Z = SelectFromModel(LogisticRegression()).transform(X)\n"
    prepare(kernel, SK)
    assert [f for f in predict(kernel, cell) if f.exception == "NotFittedError"] == []
    assert run_cell(kernel, cell)[0] == "ValueError"
    assert_silent_and_runs(kernel, SK, "Z = SelectFromModel(clf).transform(X)\n")


# ------------------------------------------------------------------------------------------------
# Attributes: PEP 562 module __getattr__, class __getattr__, metaclass hooks
# ------------------------------------------------------------------------------------------------

MODULES = """
import types
lazy = types.ModuleType('lazy')
def _served(name):
    if name == 'answer':
        return 42
    raise AttributeError(name)
lazy.__getattr__ = _served
plain = types.ModuleType('plain')
plain.x = 1
"""


def test_matplotlib_version_served_by_its_module_getattr(kernel) -> None:
    assert_silent_and_runs(kernel, "import matplotlib", "v = matplotlib.__version__\n")


def test_a_trusted_module_hook_that_does_not_mention_the_name_is_a_warning(kernel) -> None:
    # matplotlib's hook was not run: its miss is a Warning, never certain; the cell really raises there
    cell = "v = matplotlib.__versoin__\n"
    verdict = _verdict(kernel, "import matplotlib", cell)
    assert (verdict.crash, verdict.certainty, verdict.exception) == (True, "predicted", "AttributeError")
    assert any("__getattr__" in note for note in verdict.notes), verdict.notes
    prepare(kernel, "import matplotlib")
    assert run_cell(kernel, cell) == ("AttributeError", 0)
    # numpy's hook is replayed exactly: its removed alias stays certain
    assert _verdict(kernel, "import numpy as np", "f = np.float\n").certainty == "certain"


def test_user_module_with_pep562_getattr(kernel) -> None:
    assert_silent_and_runs(kernel, MODULES, "v = lazy.answer\n")
    assert_predicts(kernel, MODULES, "v = plain.x\nw = plain.answer\n", "AttributeError", 1)


CLASSES = """
class Proxy:
    def __init__(self, data):
        self._data = data
    def __getattr__(self, name):
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

class Meta(type):
    def __getattribute__(cls, name):
        if name == 'magic':
            return 7
        return super().__getattribute__(name)

class Magic(metaclass=Meta):
    pass

class Plain:
    pass

proxy = Proxy({'alpha': 1})
thing = Plain()
"""


def test_class_getattr_and_metaclass_hooks_serve_names(kernel) -> None:
    assert_silent_and_runs(kernel, CLASSES, "a = proxy.alpha\nm = Magic.magic\n")
    assert_predicts(kernel, CLASSES, "a = proxy.alpha\nb = thing.alpha\n", "AttributeError", 1)
    assert_predicts(kernel, CLASSES, "c = Plain.magic\n", "AttributeError", 0)


# ------------------------------------------------------------------------------------------------
# torch: Module.__call__ runs forward pre-hooks before the first layer sees the input
# ------------------------------------------------------------------------------------------------

TORCH = """
import torch
lin = torch.nn.Linear(4, 2)
hooked = torch.nn.Linear(4, 2)
hooked.register_forward_pre_hook(lambda module, args: (args[0][:, :4],))
x = torch.zeros(3, 6)
"""


def test_a_forward_pre_hook_may_change_the_input_width(kernel) -> None:
    assert_silent_and_runs(kernel, TORCH, "y = hooked(x)\n")
    assert_predicts(kernel, TORCH, "y = lin(x)\n", "RuntimeError", 0, check_id="torch.linear-input")


# ------------------------------------------------------------------------------------------------
# Keras: fit runs the data through train_step / compute_loss / call, which a user model may override
# ------------------------------------------------------------------------------------------------

KERAS = """
import numpy as np, keras
class Sliced(keras.Model):
    def train_step(self, data):
        x, y = data
        return super().train_step((x, y[:, :2]))
inp = keras.Input((4,))
out = keras.layers.Dense(2, activation='softmax')(inp)
sliced = Sliced(inp, out)
sliced.compile(loss='categorical_crossentropy', optimizer='sgd')
plain = keras.Model(inp, out)
plain.compile(loss='categorical_crossentropy', optimizer='sgd')
X = np.zeros((8, 4), dtype='float32')
Y = np.eye(3, dtype='float32')[np.arange(8) % 3]
"""


def test_a_user_train_step_may_reshape_the_targets(kernel) -> None:
    # the override slices the 3-class targets to the model's 2 outputs: it trains
    assert_silent_and_runs(kernel, KERAS, "h = sliced.fit(X, Y, epochs=1, verbose=0)\n")
    # Keras' own train_step compares them as they are: ValueError, certain
    cell = "h = plain.fit(X, Y, epochs=1, verbose=0)\n"
    assert_predicts(kernel, KERAS, cell, "ValueError", 0, check_id="keras.units-classes")
