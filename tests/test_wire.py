"""The wire contract (``kernel/agent/wire.py``): one list of kinds, keys and budgets, on both sides."""

from __future__ import annotations

import typing

from crane_lsp.kernel.agent import wire


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
