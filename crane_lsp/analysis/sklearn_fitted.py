"""scikit-learn's fittedness protocol for an estimator the cell builds (``FixedThresholdClassifier(...)``).

scikit-learn does not decide "fitted" by the estimator alone: ``check_is_fitted`` asks a class's own
``__sklearn_is_fitted__`` first (a ``Pipeline`` asks its last step, a ``FrozenEstimator`` the estimator
it freezes), and meta-estimators may delegate to what they wrap (``FixedThresholdClassifier`` around a
prefit classifier predicts without ``fit``). A freshly built estimator is therefore certainly unfitted
only when its rule does not depend on what it wraps, or when everything it wraps is itself unfitted.

The kernel's twin, for estimators already in the kernel, is ``kernel/agent/sum_ml._sk_fitted``; its
class lists are these (``tests/test_checks_protocols.py`` keeps them equal). Each list was tried for real
on scikit-learn 1.9 (every prediction method of each class, unfitted, around a fitted and an unfitted
estimator).
"""

from __future__ import annotations

#: ``requires_fit`` False in scikit-learn: methods work without ``fit``.
STATELESS = frozenset(
    {
        "AdditiveChi2Sampler",
        "Binarizer",
        "FeatureHasher",
        "FunctionTransformer",
        "GaussianProcessRegressor",
        "HashingVectorizer",
        "Normalizer",
        "PatchExtractor",
    }
)

#: Meta-estimators whose every method checks the meta-estimator itself first: unfitted, they raise
#: NotFittedError whatever they wrap.
OWN_FIT = frozenset(
    {
        "GridSearchCV",
        "RandomizedSearchCV",
        "HalvingGridSearchCV",
        "HalvingRandomSearchCV",
        "VotingClassifier",
        "VotingRegressor",
        "BaggingClassifier",
        "BaggingRegressor",
        "AdaBoostClassifier",
        "AdaBoostRegressor",
        "OneVsRestClassifier",
        "OneVsOneClassifier",
        "OutputCodeClassifier",
        "MultiOutputClassifier",
        "MultiOutputRegressor",
        "ClassifierChain",
        "RegressorChain",
        "CalibratedClassifierCV",
        "RFE",
        "SequentialFeatureSelector",
        "TransformedTargetRegressor",
        "ColumnTransformer",
    }
)

#: Estimators whose fittedness is their inner estimators': ``__sklearn_is_fitted__`` delegating
#: (Pipeline, FeatureUnion, FrozenEstimator) or a ``_check_is_fitted`` that tries the inner estimator
#: first (the threshold classifiers). Unfitted inside, they raise NotFittedError; fitted, they may run.
DELEGATE = frozenset(
    {"Pipeline", "FeatureUnion", "FrozenEstimator", "FixedThresholdClassifier", "TunedThresholdClassifierCV"}
)

#: Constructor parameters that hold the estimators a meta-estimator wraps.
INNER_PARAMS = frozenset(
    {
        "estimator",
        "base_estimator",
        "estimators",
        "steps",
        "transformers",
        "transformer_list",
        "final_estimator",
        "regressor",
        "classifier",
        "transformer",
    }
)


def built_fitted(cls: str, inner: list[bool | None]) -> bool | None:
    """Whether a scikit-learn ``cls`` the cell just built is fitted: False (certainly not), or None.

    ``inner``: the fittedness of each value among its arguments that is or may be an estimator (True for
    a stateless one, None for an unknown value). A new estimator has no fitted attributes of its own, so
    only what it wraps can make it usable."""
    if not inner or cls in OWN_FIT:
        return False
    if cls in DELEGATE and all(state is False for state in inner):
        return False
    return None
