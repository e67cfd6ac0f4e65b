"""Meta-test: every registered check id has a crash case that really raises on the predicted line and a
near miss that really runs clean with the check silent, both run here in a real kernel.

The cases come from the per-library tables (``tests/test_checks_*.py``, ``Case.check``) and, for the
Python-level checks, from ``test_checks_python.CASES`` through ``PYTHON_CHECK_OF`` below.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from crane_lsp.checks.runner import load_checks
from tests.lib_checks_util import Case, verify

CASE_MODULES = (
    "tests.test_checks_aggregations",
    "tests.test_checks_agg_forms",
    "tests.test_checks_arrays",
    "tests.test_checks_built_methods",
    "tests.test_checks_generalised",
    "tests.test_checks_inputs",
    "tests.test_checks_keras",
    "tests.test_checks_pandas",
    "tests.test_checks_plotting",
    "tests.test_checks_sklearn",
    "tests.test_checks_loops",
    "tests.test_checks_order",
    "tests.test_frames_checks",
    "tests.test_user_functions",
)

#: ``test_checks_python.CASES`` name -> the check that case is about.
PYTHON_CHECK_OF = {
    "name-undefined": "python.undefined-name",
    "np-float": "python.missing-attribute",
    "module-missing": "python.missing-module",
    "too-many-args": "python.call-signature",
    "int-call": "python.not-callable",
    "read-csv-missing": "python.missing-file",
    "dict-key": "python.missing-key",
    "iterate-none": "python.iterate",
    "none-plus-int": "python.operator-type",
    "syntax": "python.syntax",
}


def _module_cases(name: str) -> list[Case]:
    try:
        module = importlib.import_module(name)
    except pytest.skip.Exception:  # a library the module needs (polars, dask) is not installed
        return []
    out: list[Case] = []
    for value in vars(module).values():
        if isinstance(value, list):
            out.extend(c for c in value if isinstance(c, Case))
    return out


def all_cases() -> list[Case]:
    cases = [c for name in CASE_MODULES for c in _module_cases(name)]
    python: Any = importlib.import_module("tests.test_checks_python")
    for name, check_id in PYTHON_CHECK_OF.items():
        c = python.CASES[name]
        cases.append(Case(f"{name}-crash", check_id, c.setup, c.cell, c.exception, c.line))
        cases.append(Case(f"{name}-near", check_id, c.near_setup, c.near_cell, None))
    return cases


CASES = all_cases()
REGISTERED = sorted(load_checks())


def _pick(check_id: str, crash: bool) -> Case | None:
    return next((c for c in CASES if c.check == check_id and (c.exception is not None) == crash), None)


def test_every_registered_check_has_a_crash_case_and_a_near_miss() -> None:
    missing = [(cid, kind) for cid in REGISTERED for kind in (True, False) if _pick(cid, kind) is None]
    assert missing == [], f"checks without a crash case (True) or a near miss (False): {missing}"


@pytest.mark.parametrize("check_id", REGISTERED)
def test_registered_check_crash_and_near_miss_really_run(kernel, check_id: str) -> None:
    crash, near = _pick(check_id, True), _pick(check_id, False)
    if crash is None or near is None:
        pytest.fail(f"{check_id} has no crash case or no near miss")
    verify(kernel, crash)
    verify(kernel, near)


def test_every_check_module_is_loaded_without_a_list_to_edit() -> None:
    """A new module in crane_lsp/checks/ registers its checks with no other edit (found on disk)."""
    from pathlib import Path

    import crane_lsp.checks
    from crane_lsp.checks.runner import CHECK_MODULES

    on_disk = {
        f"crane_lsp.checks.{p.stem}"
        for p in Path(crane_lsp.checks.__file__).parent.glob("*.py")
        if p.stem not in ("__init__", "registry", "runner")
    }
    assert set(CHECK_MODULES) == on_disk and len(CHECK_MODULES) == len(on_disk)
