"""scikit-learn's fittedness protocol for an estimator the cell builds (``FixedThresholdClassifier(...)``).

scikit-learn does not decide "fitted" by the estimator alone: ``check_is_fitted`` asks a class's own
``__sklearn_is_fitted__`` first (a ``Pipeline`` asks its last step, a ``FrozenEstimator`` the estimator
it freezes), and meta-estimators may delegate to what they wrap (``FixedThresholdClassifier`` around a
prefit classifier predicts without ``fit``). A freshly built estimator is therefore certainly unfitted
only when its rule does not depend on what it wraps, or when everything it wraps is itself unfitted.

The kernel's twin, for estimators already in the kernel, is ``kernel/agent/probe/sum_ml._sk_fitted``; both
read the class lists of ``kernel/agent/probe/sk_protocol.py`` (stdlib, imported alone here).
"""

from __future__ import annotations

from crane_lsp.kernel.agent.probe.sk_protocol import (
    _SK_DELEGATE,
    _SK_INNER_PARAMS,
    _SK_OWN_FIT,
    _SK_STATELESS,
)

#: ``requires_fit`` False in scikit-learn: methods work without ``fit``.
STATELESS = _SK_STATELESS
#: Meta-estimators whose every method checks the meta-estimator itself first: unfitted, they raise
#: NotFittedError whatever they wrap.
OWN_FIT = _SK_OWN_FIT
#: Estimators whose fittedness is their inner estimators': ``__sklearn_is_fitted__`` delegating
#: (Pipeline, FeatureUnion, FrozenEstimator: the probe replays these hooks statically) or a
#: ``_check_is_fitted`` that tries the inner estimator first (the threshold classifiers).
DELEGATE = frozenset({"Pipeline", "FeatureUnion", "FrozenEstimator"}) | _SK_DELEGATE
#: Constructor parameters that hold the estimators a meta-estimator wraps.
INNER_PARAMS = frozenset(_SK_INNER_PARAMS)


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
