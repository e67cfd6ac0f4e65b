"""scikit-learn's fittedness protocol as class-name lists: STANDARD LIBRARY ONLY, constants only.

Joined before ``sum_ml.py`` (the probe replays ``check_is_fitted`` for estimators in the kernel) and
imported alone by the client (``analysis/sklearn_fitted.py``, for estimators a cell builds), so both
sides read one copy. Each list was tried for real on scikit-learn 1.9: every prediction method of each
class, unfitted, around a fitted and an unfitted inner estimator.
"""

#: ``requires_fit`` False: ``check_is_fitted`` passes without fit.
_SK_STATELESS = frozenset(
    [
        "AdditiveChi2Sampler",
        "Binarizer",
        "FeatureHasher",
        "FunctionTransformer",
        "GaussianProcessRegressor",
        "HashingVectorizer",
        "Normalizer",
        "PatchExtractor",
    ]
)
#: Meta-estimators whose every method checks the meta-estimator itself first: inner estimators fitted or
#: not, an unfitted one raises NotFittedError (each tried for real, scikit-learn 1.9).
_SK_OWN_FIT = frozenset(
    [
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
    ]
)
#: Meta-estimators usable unfitted when what they wrap is fitted (``_check_is_fitted`` of
#: ``BaseThresholdClassifier`` tries the inner estimator first), NotFittedError when it is not.
_SK_DELEGATE = frozenset(("FixedThresholdClassifier", "TunedThresholdClassifierCV"))
#: Constructor parameters that hold the estimators a meta-estimator wraps.
_SK_INNER_PARAMS = (
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
)
