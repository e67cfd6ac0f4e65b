"""scikit-learn checks: unfitted estimators, feature count/name mismatches, X/y length mismatches,
classifiers fitted on a continuous target, inputs an estimator rejects (1-D, strings, NaN) and invalid
solver/penalty pairs.

Estimators come from the kernel (``EstimatorInfo``) or are built in the cell (``StandardScaler()``) and
followed through ``fit`` / ``fit_transform`` calls. Only ``sklearn.*`` classes are judged, and meta
estimators (pipelines, column transformers, searches) are left alone where their rules differ.
"""

from __future__ import annotations

import ast
import math

from crane_lsp.analysis.kinds import SEQUENCES, SK_INPUT, SK_TARGET, Kind
from crane_lsp.analysis.sklearn_fitted import STATELESS as _STATELESS
from crane_lsp.analysis.values import Est, Val, frame_columns, has_star, literal, parse_expr
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

#: Estimators whose methods work without fit (``requires_fit`` tag False in scikit-learn 1.x).
STATELESS = _STATELESS
#: Meta estimators whose input rules depend on what they wrap.
META_MODULES = (
    "sklearn.pipeline",
    "sklearn.compose",
    "sklearn.model_selection",
    "sklearn.multiclass",
    "sklearn.multioutput",
    "sklearn.ensemble._stacking",
    "sklearn.ensemble._voting",
    "sklearn.feature_selection._from_model",
    "sklearn.feature_selection._rfe",
)
USE_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score")
FIT_METHODS = ("fit", "fit_transform", "fit_predict")
_CLASSIFIERS = frozenset(
    {
        "LogisticRegression",
        "LogisticRegressionCV",
        "SVC",
        "LinearSVC",
        "NuSVC",
        "GaussianNB",
        "MultinomialNB",
        "BernoulliNB",
        "ComplementNB",
        "CategoricalNB",
        "Perceptron",
        "LinearDiscriminantAnalysis",
        "QuadraticDiscriminantAnalysis",
        "NearestCentroid",
    }
)
_REGRESSORS = frozenset(
    {
        "LinearRegression",
        "Ridge",
        "RidgeCV",
        "Lasso",
        "LassoCV",
        "ElasticNet",
        "ElasticNetCV",
        "SVR",
        "LinearSVR",
        "NuSVR",
        "BayesianRidge",
        "ARDRegression",
        "Lars",
        "LassoLars",
        "OrthogonalMatchingPursuit",
        "PoissonRegressor",
        "GammaRegressor",
        "TweedieRegressor",
        "HuberRegressor",
        "QuantileRegressor",
        "TheilSenRegressor",
        "RANSACRegressor",
    }
)
#: Estimators that convert X to float and so reject strings (and 1-D X).
NUMERIC_X = (
    _CLASSIFIERS
    | _REGRESSORS
    | frozenset(
        {
            "StandardScaler",
            "MinMaxScaler",
            "MaxAbsScaler",
            "RobustScaler",
            "PCA",
            "KMeans",
            "MiniBatchKMeans",
            "DBSCAN",
            "PolynomialFeatures",
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "DecisionTreeClassifier",
            "DecisionTreeRegressor",
            "RandomForestClassifier",
            "RandomForestRegressor",
            "ExtraTreesClassifier",
            "ExtraTreesRegressor",
            "GradientBoostingClassifier",
            "GradientBoostingRegressor",
            "AdaBoostClassifier",
            "AdaBoostRegressor",
            "TruncatedSVD",
            "QuantileTransformer",
            "PowerTransformer",
            "SGDClassifier",
            "SGDRegressor",
            "RidgeClassifier",
            "MLPClassifier",
            "MLPRegressor",
        }
    )
)
#: Estimators that reject NaN in X (scalers and trees pass NaN through or support it).
REJECTS_NAN = (
    _CLASSIFIERS
    | _REGRESSORS
    | frozenset(
        {
            "PCA",
            "KMeans",
            "MiniBatchKMeans",
            "DBSCAN",
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "GradientBoostingClassifier",
            "GradientBoostingRegressor",
            "AdaBoostClassifier",
            "AdaBoostRegressor",
            "TruncatedSVD",
            "SGDClassifier",
            "SGDRegressor",
            "RidgeClassifier",
            "MLPClassifier",
            "MLPRegressor",
            "PolynomialFeatures",
        }
    )
) - {"NearestCentroid"}


def is_classifier(cls: str) -> bool:
    return cls in _CLASSIFIERS or (
        cls.endswith("Classifier") and not cls.startswith(("Dummy", "Voting", "Stacking"))
    )


def is_supervised(cls: str) -> bool:
    return (
        is_classifier(cls)
        or cls in _REGRESSORS
        or (cls.endswith("Regressor") and not cls.startswith(("Dummy", "Voting", "Stacking")))
    )


def _plain(est: Est) -> bool:
    return est.module.startswith("sklearn.") and not est.module.startswith(META_MODULES)


def _est_call(w: CellWalk, node: ast.AST) -> tuple[ast.Call, Val, Est, str] | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or has_star(node):
        return None
    base = w.ev(node.func.value)
    if base is None or base.est is None or not base.est.module.startswith("sklearn."):
        return None
    return node, base, base.est, node.func.attr


def _n_samples(v: Val) -> int | None:
    if v.kind in (Kind.DATAFRAME, Kind.SERIES, Kind.NDARRAY, Kind.TENSOR) and v.shape:
        return v.shape[0]
    if v.kind in SEQUENCES:
        return v.length
    return None


# ------------------------------------------------------------------------------------------------


@step("sklearn.not-fitted", on=(ast.Call,))
def _not_fitted(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``predict``/``transform``/``score`` on an estimator that was never fitted."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _est_call(w, node)
        if got is None:
            continue
        call, base, est, method = got
        if method in USE_METHODS and est.fitted is False and est.cls not in STATELESS:
            if base.summary is not None and base.summary.estimator and base.summary.estimator.steps:
                final = base.summary.estimator.final_step
                if final is None or final in STATELESS:
                    continue
            where = "in this cell" if not est.from_kernel else "in the kernel"
            return finding_at(
                w,
                "sklearn.not-fitted",
                "NotFittedError",
                call,
                f"{base.text} ({est.cls}) is not fitted {where}; call fit before {method}",
                [(f"{base.text} fitted", "False")],
                [base],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("sklearn.features", on=(ast.Call,))
def _features(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A feature count or feature names that differ from what the estimator was fitted on."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _est_call(w, node)
        if got is None:
            continue
        call, base, est, method = got
        if method not in USE_METHODS or not est.fitted or not _plain(est) or not call.args:
            continue
        if est.cls == "IsotonicRegression" or est.n_features is None:
            continue
        x = w.ev(call.args[0])
        if x is None or x.shape is None or x.kind not in (Kind.DATAFRAME, Kind.NDARRAY):
            continue
        ev = [(f"{base.text}.n_features_in_", str(est.n_features)), (f"{x.text}.shape", str(tuple(x.shape)))]
        if len(x.shape) == 1:
            return finding_at(
                w,
                "sklearn.features",
                "ValueError",
                call.args[0],
                f"{base.text}.{method} expects a 2-D X; {x.text} is 1-D",
                ev,
                [base, x],
            )
        if len(x.shape) != 2 or x.shape[1] is None:
            continue
        if x.shape[1] != est.n_features:
            return finding_at(
                w,
                "sklearn.features",
                "ValueError",
                call.args[0],
                f"{x.text} has {x.shape[1]} features, but {base.text} was fitted on {est.n_features}",
                ev,
                [base, x],
            )
        if (
            x.kind == Kind.DATAFRAME
            and est.feature_names is not None
            and x.labels is not None
            and all(isinstance(c, str) for c in x.labels)
            and tuple(x.labels) != est.feature_names
        ):
            diff = [c for c in x.labels if c not in est.feature_names][:5] or ["(same names, another order)"]
            return finding_at(
                w,
                "sklearn.features",
                "ValueError",
                call.args[0],
                f"the columns of {x.text} differ from the feature names {base.text} was fitted on: {diff}",
                ev,
                [base, x],
            )
    return []


# ------------------------------------------------------------------------------------------------


#: ``sklearn.model_selection`` functions of ``(estimator, X, y)`` that need len(X) == len(y).
_CV_FUNCS = frozenset({"cross_val_score", "cross_validate", "cross_val_predict", "learning_curve"})
#: ``sklearn.metrics`` functions whose first two arguments must have equal lengths.
_PAIR_METRICS = frozenset(
    {
        "accuracy_score", "f1_score", "precision_score", "recall_score",
        "confusion_matrix", "classification_report", "mean_squared_error", "mean_absolute_error",
        "r2_score", "balanced_accuracy_score", "matthews_corrcoef", "cohen_kappa_score",
        "median_absolute_error", "explained_variance_score",
    }
)  # fmt: skip


@step("sklearn.lengths", on=(ast.Call,))
def _lengths(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``fit(X, y)`` / ``train_test_split`` on arrays of different lengths, or on no samples at all."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not isinstance(node, ast.Call) or has_star(node):
            continue
        pair: list[ast.expr] = []
        what = ""
        lib = w.lib_func(node.func)
        if lib is not None and lib[0].startswith("sklearn.model_selection") and lib[1] == "train_test_split":
            pair, what = list(node.args), "train_test_split"
        elif lib is not None and lib[0].startswith("sklearn.model_selection") and lib[1] in _CV_FUNCS:
            pair, what = list(node.args[1:3]), lib[1]  # (estimator, X, y)
            if len(pair) < 2:
                continue
        elif lib is not None and lib[0].startswith("sklearn.metrics") and lib[1] in _PAIR_METRICS:
            pair, what = list(node.args[:2]), lib[1]
            if len(pair) < 2:
                continue
        else:
            got = _est_call(w, node)
            if got is not None and got[3] == "fit" and _plain(got[2]) and is_supervised(got[2].cls):
                pair, what = list(node.args[:2]), f"{got[1].text}.fit"
        if not pair:
            continue
        vals = [w.ev(a) for a in pair]
        known = [(v, _n_samples(v)) for v in vals if v is not None]
        if len(known) != len(vals) or any(n is None for _, n in known):
            continue
        sizes = [n for _, n in known]
        ev = [(f"len({v.text})", str(n)) for v, n in known]
        if what == "train_test_split" and sizes and sizes[0] == 0:
            return finding_at(
                w,
                "sklearn.lengths",
                "ValueError",
                node,
                f"train_test_split of {known[0][0].text}, which has 0 samples",
                ev,
                [v for v, _ in known],
            )
        if len(set(sizes)) > 1:
            return finding_at(
                w,
                "sklearn.lengths",
                "ValueError",
                node,
                f"{what}: inconsistent numbers of samples " + ", ".join(f"{v.text}={n}" for v, n in known),
                ev,
                [v for v, _ in known],
            )
    return []


# ------------------------------------------------------------------------------------------------


def _non_integral(v: float | str | None) -> bool:
    return isinstance(v, float) and math.isfinite(v) and not v.is_integer()


def _continuous_evidence(y: Val) -> str | None:
    st = y.stats
    if st is None or not y.dtype or not y.dtype.startswith("float"):
        return None
    for name, value in (("min", st.min), ("max", st.max)):
        if _non_integral(value):
            return f"{name} {value}"
    for ex in st.examples or []:
        ok, v = literal(parse_expr(ex))
        if ok and _non_integral(v):
            return f"value {v}"
    return None


@step("sklearn.continuous-target", on=(ast.Call,))
def _continuous(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A classifier fitted on float labels that are not whole numbers."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _est_call(w, node)
        if got is None:
            continue
        call, base, est, method = got
        if method != "fit" or len(call.args) < 2 or not _plain(est) or not is_classifier(est.cls):
            continue
        y = w.ev(call.args[1])
        if y is None or y.kind not in SK_TARGET or y.shape is None or len(y.shape) != 1:
            continue
        proof = _continuous_evidence(y)
        if proof:
            return finding_at(
                w,
                "sklearn.continuous-target",
                "ValueError",
                call.args[1],
                f"{est.cls} is a classifier but {y.text} is a continuous target ({proof})",
                [(f"{y.text}.dtype", y.dtype or ""), (f"{y.text} holds", proof)],
                [base, y],
            )
    return []


# ------------------------------------------------------------------------------------------------


def _bad_values(x: Val, nan_matters: bool) -> tuple[str, str] | None:
    """(what, example) when the probe saw a string float() rejects, or a NaN where NaN matters."""
    stats = []
    cols = frame_columns(x) if x.kind == Kind.DATAFRAME else None
    if x.kind == Kind.DATAFRAME and (cols or (x.summary is not None and x.summary.columns)):
        # every column when known (a selection or drop keeps the kernel frame's); else those the probe listed
        shown = cols if cols else (x.summary.columns if x.summary is not None else None) or ()
        stats = [(c.name, c.stats) for c in shown if c.stats is not None]
    elif x.stats is not None:
        stats = [(x.text, x.stats)]
    for col, st in stats:
        if st is None:
            continue
        bad = [b for b in st.non_numeric_examples or [] if b.startswith(("'", '"'))]
        if bad:
            return f"column {col!r} holds text", bad[0]
    if nan_matters:
        for col, st in stats:
            if st is not None and st.has_nan:
                return f"column {col!r} holds NaN", str(st.nan_count or "> 0")
    return None


@step("sklearn.input-values", on=(ast.Call,))
def _inputs(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """1-D or 3-D X, text, or NaN given to estimators that need a numeric 2-D X without missing values."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _est_call(w, node)
        if got is None:
            continue
        call, base, est, method = got
        if method not in (*FIT_METHODS, *USE_METHODS) or not call.args or est.cls not in NUMERIC_X:
            continue
        if method in USE_METHODS and not est.fitted:
            continue  # the not-fitted check speaks for that
        x = w.ev(call.args[0])
        if x is None or x.shape is None or x.kind not in SK_INPUT:
            continue
        if len(x.shape) == 1:
            return finding_at(
                w,
                "sklearn.input-values",
                "ValueError",
                call.args[0],
                f"{est.cls}.{method} expects a 2-D X; {x.text} is 1-D (shape {tuple(x.shape)})",
                [(f"{x.text}.shape", str(tuple(x.shape)))],
                [base, x],
            )
        if len(x.shape) >= 3 and x.kind == Kind.NDARRAY:
            return finding_at(
                w,
                "sklearn.input-values",
                "ValueError",
                call.args[0],
                f"{est.cls}.{method} expects a 2-D X; {x.text} has {len(x.shape)} dimensions "
                f"(shape {tuple(x.shape)}): reshape it to (n_samples, n_features) first",
                [(f"{x.text}.shape", str(tuple(x.shape)))],
                [base, x],
            )
        bad = _bad_values(x, est.cls in REJECTS_NAN)
        if bad:
            return finding_at(
                w,
                "sklearn.input-values",
                "ValueError",
                call.args[0],
                f"{est.cls}.{method} needs numbers, but {x.text}: {bad[0]} (e.g. {bad[1]})",
                [(f"{x.text} {bad[0]}", bad[1])],
                [base, x],
            )
    return []


# ------------------------------------------------------------------------------------------------

_L2_ONLY = ("lbfgs", "newton-cg", "newton-cholesky", "sag")


def _param(est: Est, val: Val, name: str) -> tuple[bool, object]:
    if name in est.params:
        return True, est.params[name]
    if est.from_kernel and val.summary is not None and val.summary.estimator and val.summary.estimator.params:
        text = val.summary.estimator.params.get(name)
        if text is not None:
            return literal(parse_expr(text))
    return False, None


def _logreg_problem(est: Est, val: Val) -> str | None:
    if est.cls != "LogisticRegression":
        return None
    has_p, penalty = _param(est, val, "penalty")
    has_s, solver = _param(est, val, "solver")
    if not est.from_kernel and not has_s:
        has_s, solver = True, "lbfgs"  # the default solver since scikit-learn 0.22
    if not (has_p and has_s and isinstance(penalty, str) and isinstance(solver, str)):
        return None
    if solver in _L2_ONLY and penalty in ("l1", "elasticnet"):
        return f"solver {solver!r} supports only the 'l2' penalty or None, not {penalty!r}"
    if solver == "liblinear" and penalty == "elasticnet":
        return "only the 'saga' solver supports the 'elasticnet' penalty, not 'liblinear'"
    return None


@step("sklearn.invalid-params", on=(ast.Call,))
def _params(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Constructor parameters scikit-learn rejects at fit (LogisticRegression penalty/solver pairs)."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _est_call(w, node)
        if got is None:
            continue
        call, base, est, method = got
        if method not in FIT_METHODS:
            continue
        problem = _logreg_problem(est, base)
        if problem:
            return finding_at(
                w,
                "sklearn.invalid-params",
                "ValueError",
                call,
                f"{base.text}.{method}: LogisticRegression {problem}",
                [(f"{base.text} penalty/solver", problem)],
                [base],
            )
    return []


# ------------------------------------------------------------------------------------------------

#: Metrics that call ``type_of_target`` and refuse continuous targets.
CLASSIFICATION_METRICS = frozenset(
    {
        "accuracy_score",
        "balanced_accuracy_score",
        "f1_score",
        "fbeta_score",
        "precision_score",
        "recall_score",
        "precision_recall_fscore_support",
        "confusion_matrix",
        "classification_report",
        "jaccard_score",
        "cohen_kappa_score",
        "matthews_corrcoef",
        "hamming_loss",
        "zero_one_loss",
        "multilabel_confusion_matrix",
    }
)


@step("sklearn.metric-continuous", on=(ast.Call,))
def _metric(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A classification metric given continuous predictions or targets (e.g. probabilities, regressions)."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not isinstance(node, ast.Call) or has_star(node):
            continue
        lib = w.lib_func(node.func)
        if lib is None or not lib[0].startswith("sklearn.metrics") or lib[1] not in CLASSIFICATION_METRICS:
            continue
        by_kw = {kw.arg: kw.value for kw in node.keywords if kw.arg in ("y_true", "y_pred")}
        args = [*node.args[:2], *by_kw.values()]
        for arg in args:
            y = w.ev(arg)
            if y is None or y.kind not in SK_TARGET or y.shape is None or len(y.shape) > 2:
                continue
            proof = _continuous_evidence(y)
            if proof:
                return finding_at(
                    w,
                    "sklearn.metric-continuous",
                    "ValueError",
                    arg,
                    f"{lib[1]} is a classification metric but {y.text} holds continuous values ({proof})",
                    [(f"{y.text}.dtype", y.dtype or ""), (f"{y.text} holds", proof)],
                    [y],
                )
    return []
