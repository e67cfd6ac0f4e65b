"""The wire contract (``kernel/agent/wire.py``): one list of kinds, keys and budgets, on both sides."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from conftest import TestKernel
from probe_util import snapshot_json
from pydantic import BaseModel, ValidationError

from crane_lsp import snapshot
from crane_lsp.kernel.agent import wire
from crane_lsp.kernel.agent.wire import Kind
from crane_lsp.settings import Settings


def _constants(cls: type) -> dict[str, str]:
    return {k: v for k, v in vars(cls).items() if k.isupper()}


def test_kind_constants_are_exactly_the_object_kinds() -> None:
    constants = _constants(wire.Kind)
    assert sorted(constants.values()) == sorted(typing.get_args(wire.ObjectKind))
    assert all(name.lower() == value for name, value in constants.items())


def test_value_kind_constants_are_exactly_the_value_kinds() -> None:
    constants = _constants(wire.Values)
    assert sorted(constants.values()) == sorted(typing.get_args(wire.ValueKind))


def test_default_budgets_are_the_named_constants() -> None:
    assert wire.DEFAULT_BUDGETS == {
        "max_columns": wire.MAX_COLUMNS,
        "max_list_items": wire.MAX_LIST_ITEMS,
        "sample_rows": wire.SAMPLE_ROWS,
        "object_budget_s": wire.OBJECT_BUDGET_S,
        "request_budget_s": wire.REQUEST_BUDGET_S,
        "torch_samples": wire.TORCH_SAMPLES,
    }
    assert set(wire.DEFAULT_BUDGETS) == set(wire.Budgets.__annotations__)


# ------------------------------------------------------------------------------------------------
# The client's models carry exactly the wire's keys
# ------------------------------------------------------------------------------------------------

PAIRS = [
    (snapshot.ValueStats, wire.ValueStatsWire),
    (snapshot.ColumnSummary, wire.ColumnWire),
    (snapshot.KerasIteratorInfo, wire.KerasIteratorWire),
    (snapshot.TorchDatasetInfo, wire.TorchDatasetWire),
    (snapshot.EstimatorInfo, wire.EstimatorWire),
    (snapshot.ModuleInfo, wire.ModuleWire),
    (snapshot.FrameInfo, wire.FrameWire),
    (snapshot.ParamInfo, wire.ParamWire),
    (snapshot.ObjectSummary, wire.ObjectWire),
    (snapshot.AttributeFact, wire.AttributeFactWire),
    (snapshot.Versions, wire.VersionsWire),
    (snapshot.Snapshot, wire.SnapshotWire),
    (snapshot.ProbeQuery, wire.QueryWire),
]


@pytest.mark.parametrize(("model", "shape"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_each_model_has_exactly_its_wire_keys(model: type[BaseModel], shape: type) -> None:
    assert set(model.model_fields) == set(typing.get_type_hints(shape))
    assert model.model_config.get("extra") == "forbid"


def test_a_misspelt_key_fails_validation() -> None:
    with pytest.raises(ValidationError, match="shpae"):
        snapshot.Snapshot.model_validate({"variables": {"x": {"kind": "int", "type": "int", "shpae": [1]}}})


def test_budget_defaults_come_from_the_wire() -> None:
    query = snapshot.ProbeQuery()
    assert {k: getattr(query, k) for k in wire.DEFAULT_BUDGETS} == wire.DEFAULT_BUDGETS
    settings = Settings()
    for key in ("max_columns", "sample_rows", "object_budget_s", "request_budget_s"):
        assert getattr(settings, key) == wire.DEFAULT_BUDGETS[key]  # type: ignore[literal-required]


# ------------------------------------------------------------------------------------------------
# Real probe output from a real kernel, every key checked against the wire
# ------------------------------------------------------------------------------------------------

STATE = """
import collections, functools, types
import numpy as np, pandas as pd
df = pd.DataFrame({'a': [1.5, None, 3.0], 'b': ['x', 'y', None], 'c': pd.Categorical(['p', 'q', 'p'])})
ser = pd.Series([1, 2, 3], name='s')
idx = pd.Index(['x', 'y'])
arr = np.arange(12.0).reshape(3, 4)
vec = np.arange(100) % 3
zero_d = np.float64(1.5)
d = {'k': 1}
lst = [1, 'two', 3.0]
tup = (1, 2)
st = frozenset({1})
s, b, i, f, t, n, c = 'text', b'raw', 3, 0.5, True, None, 1j
def fn(a, /, b=2, *args, c, **kw): return a
part = functools.partial(fn, 1)
class Thing:
    def method(self, x): return x
thing = Thing()
gen = (x for x in range(3))
mod = types
"""
NAMES = ["df", "ser", "idx", "arr", "vec", "zero_d", "d", "lst", "tup", "st", "s", "b", "i", "f", "t", "n"]
NAMES += ["c", "fn", "part", "Thing", "thing", "gen", "mod", "np", "pd", "undefined_name"]
QUERY = {
    "names": NAMES,
    "chains": ["np.float", "df.append", "thing.method", "np.linalg.norm", "df.a"],
    "subscripts": ["df['a']", "d['k']"],
    "index_labels": {"df": [0, 7]},
    "paths": ["/nonexistent/crane"],
    "modules": ["json", "not_a_module_crane"],
}

_SHAPES = {
    "stats": wire.ValueStatsWire,
    "iterator": wire.KerasIteratorWire,
    "dataset": wire.TorchDatasetWire,
    "estimator": wire.EstimatorWire,
    "nn": wire.ModuleWire,
    "frame": wire.FrameWire,
}


def _unknown_keys(data: dict[str, Any], shape: type, where: str) -> list[str]:
    """Keys of ``data`` (recursively) that the wire's ``TypedDict`` does not name."""
    keys = typing.get_type_hints(shape)
    out = [f"{where}.{k}" for k in data if k not in keys]
    for key, value in data.items():
        if key in _SHAPES and isinstance(value, dict):
            out += _unknown_keys(value, _SHAPES[key], f"{where}.{key}")
        elif key == "columns" and isinstance(value, list):
            out += [u for col in value for u in _unknown_keys(col, wire.ColumnWire, f"{where}.columns")]
        elif key == "params" and isinstance(value, list):
            out += [u for p in value for u in _unknown_keys(p, wire.ParamWire, f"{where}.params")]
    return out


def test_real_probe_output_has_only_wire_keys_and_validates_strictly(kernel: TestKernel) -> None:
    kernel.run(STATE)
    raw = snapshot_json(kernel, QUERY)
    assert raw["ok"] is True, raw.get("errors")
    unknown = _unknown_keys(raw, wire.SnapshotWire, "snapshot")
    for name, summary in raw["variables"].items():
        unknown += _unknown_keys(summary, wire.ObjectWire, f"variables[{name}]")
    for chain, fact in raw["attributes"].items():
        unknown += _unknown_keys(fact, wire.AttributeFactWire, f"attributes[{chain}]")
    assert unknown == []
    snap = snapshot.Snapshot.model_validate(raw)  # extra="forbid": any stray key would fail here too
    kinds = {name: v.kind for name, v in snap.variables.items()}
    assert kinds["df"] == Kind.DATAFRAME and kinds["ser"] == Kind.SERIES and kinds["gen"] == Kind.GENERATOR
    assert kinds["part"] == Kind.FUNCTION and kinds["Thing"] == Kind.CLASS and kinds["mod"] == Kind.MODULE
    assert set(kinds.values()) <= set(typing.get_args(wire.ObjectKind))
    assert "undefined_name" in snap.undefined
    assert snap.attributes["np.float"].exists is False


CELL_FUNCTIONS = """import pandas as pd
frame = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})
COLS = ['a', 'b']
def prep(d, k=1):
    out = d[COLS]
    return out.head(k)
def outer():
    x = 1
    def inner():
        return x
    return inner
inner = outer()
"""


def test_a_cell_function_carries_its_source_and_its_globals_are_summarised(kernel: TestKernel) -> None:
    kernel.run(CELL_FUNCTIONS)
    raw = snapshot_json(kernel, {"names": ["prep", "inner", "len"]})
    unknown = [u for name, s in raw["variables"].items() for u in _unknown_keys(s, wire.ObjectWire, name)]
    assert unknown == []
    snap = snapshot.Snapshot.model_validate(raw)
    prep = snap.variables["prep"]
    assert prep.source is not None and prep.source.startswith("def prep(d, k=1):")
    assert prep.source.rstrip().endswith("return out.head(k)") and prep.source_line == 4
    assert "COLS" in (prep.free_globals or [])
    # the names it reads came along, though the query never named them
    assert snap.variables["COLS"].values == ["a", "b"]
    assert snap.variables["inner"].source is None and snap.variables["inner"].source_note == "closure"
