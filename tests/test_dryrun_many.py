"""Several dry runs side by side (``dry_run_many``) in a REAL kernel: each verdict is the one a single
dry run gives, in the order asked; the kernel's state is untouched and no child outlives the call.

How many run at once depends on the machine (its idle CPUs and free memory), so the tests assert
what holds at any width: the verdicts, their order, the width's bounds, and that a width of one
gives the same verdicts in turn.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jail_util import JailKernel, children_of, jail_kernels, settles


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    yield from jail_kernels("root")


RUNS = [
    "many_total = sum(many_items)\nmany_items.append(4)\nmany_items[9]",  # IndexError, line 3
    "many_items.append(5)\nmany_copy = list(many_items)",  # completes
    "many_value = many_items[0]\nmany_missing + 1",  # NameError, line 2
    "import time\ntime.sleep(5)",  # over its budget
]


def _verdicts(results: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(r["outcome"], r.get("exception"), r.get("line")) for r in results]


def _no_children_left(jk: JailKernel) -> bool:
    return settles(lambda: not children_of(jk.pid), 5.0)


def test_runs_side_by_side_give_each_its_own_verdict(jk: JailKernel) -> None:
    jk.run("many_items = [1, 2, 3]")
    payload = {"runs": [{"source": s, "budget_s": 2.0} for s in RUNS], "width": 3}
    answer = jk.call("dry_run_many", payload, timeout=60)
    assert 1 <= answer["width"] <= 3, answer
    assert _verdicts(answer["runs"]) == [
        ("raised", "IndexError", 3),
        ("completed", None, None),
        ("raised", "NameError", 2),
        ("timeout", None, None),
    ], answer
    assert all(r["prepared"] is False for r in answer["runs"])
    assert jk.eval("many_items") == "[1, 2, 3]"  # every append happened in a copy
    assert _no_children_left(jk)


def test_one_place_gives_the_same_verdicts_in_turn(jk: JailKernel) -> None:
    payload = {"runs": [{"source": s, "budget_s": 2.0} for s in RUNS[:3]], "width": 1}
    answer = jk.call("dry_run_many", payload, timeout=60)
    assert answer["width"] == 1
    assert _verdicts(answer["runs"]) == [
        ("raised", "IndexError", 3),
        ("completed", None, None),
        ("raised", "NameError", 2),
    ], answer
    assert _no_children_left(jk)


def test_a_cell_that_cannot_start_needs_no_child(jk: JailKernel) -> None:
    payload = {"runs": [{"source": "def broken(:\n    pass"}, {"source": "1 / 0"}], "width": 2}
    answer = jk.call("dry_run_many", payload, timeout=60)
    assert answer["runs"][0]["exception"] == "SyntaxError" and "child_pid" not in answer["runs"][0]
    assert answer["runs"][1]["exception"] == "ZeroDivisionError"
