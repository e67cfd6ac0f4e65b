"""The one table of what calls do to the state: pure, mutating, or running code the analysis cannot see.

The cell scan (``analysis.scan``), the checks' walk (``analysis.walk``), the check runner
and the dry-run screen all decide "may this call change a value (or run hidden code)?" from these
sets, so that they cannot disagree. Writing/network calls (files, shell, sockets) stay with the dry
run's screen and the scan's file tracking, which act on them differently.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Top-level packages whose functions never change the arguments they are given (numpy's in-place
#: exceptions are in ``MUTATING_LIB_FUNCS``).
PURE_LIBRARIES = _words(
    """
    numpy pandas sklearn scipy matplotlib seaborn torch tensorflow keras statsmodels xgboost lightgbm
    catboost math json os re builtins
    """
)
#: Library functions that DO change an argument in place (``np.random.shuffle(a)``).
MUTATING_LIB_FUNCS = _words("shuffle copyto put place fill_diagonal putmask")
#: Builtins that never change their arguments and call no code but the arguments' own dunders.
PURE_BUILTINS = _words(
    """
    print len sum min max range list tuple sorted repr str int float bool abs round type isinstance
    display enumerate zip set dict any all format id hash frozenset issubclass reversed hasattr
    callable divmod pow ord chr bin hex oct complex bytes bytearray slice ascii dir memoryview object
    property staticmethod classmethod
    """
)
#: Pure builtins whose result holds no reference to their arguments (``print(X.shape)``, ``len(X)``): an
#: argument read through them does not escape, so the walk keeps knowing what the cell bound it to.
NON_RETAINING_BUILTINS = _words(
    "print len repr str int float bool abs round isinstance issubclass hasattr callable id hash format ascii"
)
#: Builtins that call code handed to them (``map(f, xs)``): pure for the cell's names in the scan's
#: reading, but not proof for the checks' walk, which cannot see what the callee does.
HIGHER_ORDER_BUILTINS = _words("map filter iter getattr help super")
#: Calls that run code given as data: nothing after them can be vouched for.
DYNAMIC_CODE_CALLS = _words("exec eval compile __import__")
#: Calls that expose or replace the namespace itself.
NAMESPACE_CALLS = _words("globals locals vars execfile runfile")
#: Methods that change their receiver in place.
MUTATING_METHODS = _words(
    """
    append extend insert pop remove clear update setdefault sort reverse popitem add discard
    difference_update intersection_update symmetric_difference_update fit fit_transform partial_fit
    fit_predict fit_generator compile set_params load_state_dict load_weights to cuda cpu train
    eval zero_grad step backward requires_grad_ set_index reset_index rename fillna dropna drop
    drop_duplicates sort_values sort_index replace interpolate where mask clip set_axis resize put
    fill itemset setflags shuffle seed send throw close __setitem__ __delitem__ __setattr__
    add_module register_buffer register_parameter apply_ map_ build set_weights reset_states
    flow_from_directory flow_from_dataframe next __next__ on_epoch_end reset
    """
)
#: pandas methods in ``MUTATING_METHODS`` that change the receiver only with ``inplace=True``.
PANDAS_INPLACE_ONLY = _words(
    """
    set_index reset_index rename fillna dropna drop drop_duplicates sort_values sort_index replace
    interpolate where mask clip set_axis
    """
)


def pure_library(module: str, name: str) -> bool:
    """``module.name(...)`` leaves its arguments as they were."""
    return module.split(".")[0] in PURE_LIBRARIES and name not in MUTATING_LIB_FUNCS
