"""A scikit-learn ``Pipeline`` given an X its first step rejects: 1-D, text, or another number of columns.

``pipe.predict(X)`` runs ``transform`` of each step but the last on X, starting with the first real step
(``None`` and ``'passthrough'`` skipped). scikit-learn's estimators validate X there against what ``fit`` saw
(``validate_data(reset=False)``): ``ValueError: Expected 2D array, got 1D array instead`` for a 1-D X, and
``X has 3 features, but StandardScaler is expecting 4 features as input`` (or the feature-names mismatch,
also a ValueError) for another width. The plain-estimator case is ``sklearn.features``; meta estimators are
left out there because their rules depend on the steps.

Certain only when: the object is ``sklearn.pipeline.Pipeline`` (``make_pipeline`` builds one) from the kernel,
its final step fitted and known to have the method (``Pipeline`` offers ``predict``/``transform``/... only
when its final step does: else AttributeError comes first), the probe read the first real step's
``n_features_in_``, and that step's class is one whose ``transform``/``predict`` validates X that way
(``sklearn.NUMERIC_X``: scalers, PCA, linear models, trees...). ``pipe.fit(X, y)`` with a 1-D X or a text
column (the probe saw a string ``float()`` rejects) raises the same way in the first step's ``fit``, fitted
before or not, once every step but the last is a known transformer (``fit`` checks that first: TypeError).
A ``ColumnTransformer`` or ``FunctionTransformer`` first is not judged (a DataFrame may carry extra columns
there; ``validate=False`` checks nothing).
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.kinds import SK_INPUT, Kind
from crane_lsp.analysis.values import has_star
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step
from crane_lsp.checks.sklearn import NUMERIC_X, _bad_values, is_supervised

CHECK = "sklearn.pipeline-features"
_SKIP_STEPS = ("str", "NoneType")  # 'passthrough' and None: the step does nothing
#: ``Pipeline`` offers a method only when its final step has it (``available_if``: else AttributeError, not
#: the ValueError), so each method is judged only for final steps known to have it.
_PROBA = frozenset(
    {
        "LogisticRegression", "RandomForestClassifier", "ExtraTreesClassifier", "DecisionTreeClassifier",
        "GradientBoostingClassifier", "KNeighborsClassifier", "GaussianNB", "MultinomialNB", "BernoulliNB",
        "MLPClassifier", "HistGradientBoostingClassifier",
    }
)  # fmt: skip
_TRANSFORM = frozenset(
    {
        "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "PCA", "TruncatedSVD",
        "PolynomialFeatures", "QuantileTransformer", "PowerTransformer",
    }
)  # fmt: skip
METHODS = ("predict", "score", "predict_proba", "transform", "fit")


def _final_has(method: str, final: str | None) -> bool:
    if final is None:
        return False
    if method == "fit":
        return True
    if method in ("predict", "score"):
        return is_supervised(final)
    return final in (_PROBA if method == "predict_proba" else _TRANSFORM)


def _first_step(steps: list[str]) -> str | None:
    """The class name of the first step that runs (``"scaler: StandardScaler"`` -> ``StandardScaler``)."""
    for entry in steps:
        cls = entry.rpartition(": ")[2]
        if cls not in _SKIP_STEPS:
            return cls
    return None


def _valid_steps(steps: list[str]) -> bool:
    """Every step but the last is a transformer scikit-learn accepts there (or ``'passthrough'``/None)."""
    return all(
        e.rpartition(": ")[2] in _TRANSFORM or e.rpartition(": ")[2] in _SKIP_STEPS for e in steps[:-1]
    )


@step(CHECK, on=(ast.Call,), words=METHODS)
def _pipeline_features(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``pipe.predict(X)`` with X 1-D, holding text, or of another width than the pipeline's first step was
    fitted on; ``pipe.fit(X, y)`` with X 1-D or holding text."""
    for node, method in w.method_calls(stmt, *METHODS):
        if not node.args or has_star(node):
            continue
        pipe = w.ev(method.value)
        if pipe is None or pipe.est is None or pipe.summary is None or pipe.summary.estimator is None:
            continue
        est, info = pipe.est, pipe.summary.estimator
        if est.module != "sklearn.pipeline" or est.cls != "Pipeline" or not est.from_kernel:
            continue
        fit = method.attr == "fit"
        if not info.steps or not _final_has(method.attr, info.final_step):
            continue
        if fit and not _valid_steps(info.steps):
            continue  # ``fit`` first checks that every step but the last can transform (TypeError)
        if not fit and (info.fitted is not True or info.n_features_in is None):
            continue
        first = _first_step(info.steps)
        if first is None or first not in NUMERIC_X:
            continue
        x = w.ev(node.args[0])
        if x is None or x.shape is None or x.kind not in SK_INPUT:
            continue
        evidence = [(f"{pipe.text} first step", first), (f"{x.text}.shape", str(tuple(x.shape)))]
        if info.n_features_in is not None:
            evidence.append((f"{first}.n_features_in_", str(info.n_features_in)))
        bad = _bad_values(x, False) if x.kind != Kind.NDARRAY else None
        if bad is not None:
            message = (
                f"{pipe.text}.{method.attr}: its first step {first} needs numbers, but {x.text}: {bad[0]}"
            )
            evidence.append((f"{x.text} {bad[0]}", bad[1]))
        elif len(x.shape) == 1:
            message = f"{pipe.text}.{method.attr} expects a 2-D X; {x.text} is 1-D (shape {tuple(x.shape)})"
        elif not fit and len(x.shape) == 2 and x.shape[1] is not None and x.shape[1] != info.n_features_in:
            message = (
                f"{x.text} has {x.shape[1]} features, but {pipe.text}'s first step {first} "
                f"was fitted on {info.n_features_in}"
            )
        else:
            continue
        return finding_at(w, CHECK, "ValueError", node.args[0], message, evidence, [pipe, x])
    return []
