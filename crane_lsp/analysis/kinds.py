"""The one vocabulary of kinds the client compares: a value's kind, a proof's kind, an operation's, a scope's.

Every kind is a ``Literal`` type (so mypy rejects a misspelt one wherever a field or a table is typed
with it) and a class of named constants (so code compares ``v.kind == Kind.DATAFRAME``, never a bare
string: a renamed or misspelt kind is a name error). ``tests/test_kinds.py`` keeps each class and its
``Literal`` the same, and walks ``checks/`` and ``analysis/`` to fail on any ``.kind`` compared to a
string literal.

A value's kind (``ValKind``) is the probe's ``ObjectKind`` (``kernel/agent/wire.py``, what a kernel
object is) or one of the walk's own kinds for what the cell builds or what the probe's kind does not
tell apart (``WalkKind``). The reachability proof (``analysis/reach.py``) adds a few of its own
(``ProofKind``).
"""

from __future__ import annotations

from typing import Final, Literal

from crane_lsp.kernel.agent import wire
from crane_lsp.kernel.agent.wire import ObjectKind

#: Kinds the walk gives values that no probe kind describes exactly.
WalkKind = Literal[
    "categorical",  # ``pd.Categorical(...)`` the cell builds
    "list_literal",  # a list or tuple display of the cell (its items in ``Val.value`` when literal)
    "module_attr",  # ``np.linalg``: an attribute of a module, by its dotted name (``Val.qualname``)
    "derived",  # a new object of unknown kind from a library method that always makes one
    "ndarray_subclass",  # np.matrix, masked arrays: an ndarray with its own rules
    "tensor_subclass",  # a torch.Tensor subclass other than Parameter
]
#: What ``Val.kind`` may be.
ValKind = Literal[ObjectKind, WalkKind]

#: Kinds only the reachability proof uses: what an expression evaluates to without raising.
ProofOnlyKind = Literal[
    "literal",  # a display of proven items, ``range(n)``, ``df.shape``: sized and iterable
    "other_safe",  # a value of no kind the proof needs (``type(x)``, a loop variable)
    "builtin",  # a builtin function the user has not shadowed
    "scalar_array",  # an ndarray or tensor of no dimension (or unknown shape): ``len`` raises
]
#: What ``reach._Proof.kind`` answers.
ProofKind = Literal[ObjectKind, ProofOnlyKind]

#: What ``facts.Operation.kind`` may be.
OperationKind = Literal["binop", "iter", "unpack"]
#: What a scope of the cell's scan is (``syntax._Scope.kind``).
ScopeKind = Literal["module", "function", "class", "comprehension"]


class Kind(wire.Kind):
    """``ValKind`` and ``ProofKind`` values by name: the probe's ``wire.Kind`` and the client's own."""

    CATEGORICAL: Final = "categorical"
    LIST_LITERAL: Final = "list_literal"
    MODULE_ATTR: Final = "module_attr"
    DERIVED: Final = "derived"
    NDARRAY_SUBCLASS: Final = "ndarray_subclass"
    TENSOR_SUBCLASS: Final = "tensor_subclass"
    LITERAL: Final = "literal"
    OTHER_SAFE: Final = "other_safe"
    BUILTIN: Final = "builtin"
    SCALAR_ARRAY: Final = "scalar_array"


class Op:
    """``OperationKind`` values by name."""

    BINOP: Final = "binop"
    ITER: Final = "iter"
    UNPACK: Final = "unpack"


class ScopeKinds:
    """``ScopeKind`` values by name."""

    MODULE: Final = "module"
    FUNCTION: Final = "function"
    CLASS: Final = "class"
    COMPREHENSION: Final = "comprehension"


# ------------------------------------------------------------------------------------------------
# Groups of value kinds, named for what the checks mean by them
# ------------------------------------------------------------------------------------------------

#: numpy arrays and torch tensors: the array checks' operands.
ARRAY_LIKE: Final[frozenset[ValKind]] = frozenset({Kind.NDARRAY, Kind.TENSOR})
#: pandas' DataFrame and Series.
PANDAS: Final[frozenset[ValKind]] = frozenset({Kind.DATAFRAME, Kind.SERIES})
#: What scikit-learn takes as X (2-D, or 1-D for a Series): its shape is its samples and features.
SK_INPUT: Final[frozenset[ValKind]] = frozenset({Kind.DATAFRAME, Kind.SERIES, Kind.NDARRAY})
#: What scikit-learn takes as y: a Series or an array.
SK_TARGET: Final[frozenset[ValKind]] = frozenset({Kind.SERIES, Kind.NDARRAY})
#: Sequences whose length is known from the probe (``Val.length``) or the cell's display.
SEQUENCES: Final[frozenset[ValKind]] = frozenset({Kind.LIST, Kind.TUPLE, Kind.LIST_LITERAL})
#: What a ``def`` or a ``class`` binds, and what the probe calls a callable's kind.
CALLABLES: Final[frozenset[ValKind]] = frozenset({Kind.FUNCTION, Kind.CLASS})
#: A module, or an attribute of one by its dotted name.
MODULE_LIKE: Final[frozenset[ValKind]] = frozenset({Kind.MODULE, Kind.MODULE_ATTR})

_CONSTANT_KINDS: Final[dict[type, ObjectKind]] = {
    type(None): Kind.NONE,
    bool: Kind.BOOL,
    int: Kind.INT,
    float: Kind.FLOAT,
    complex: Kind.COMPLEX,
    str: Kind.STR,
    bytes: Kind.BYTES,
    list: Kind.LIST,
    tuple: Kind.TUPLE,
    dict: Kind.DICT,
    set: Kind.SET,
}


def constant_kind(value: object) -> ObjectKind:
    """The kind of a Python literal's value, as the probe would call it (``other`` for ``...``)."""
    return _CONSTANT_KINDS.get(type(value), Kind.OTHER)
