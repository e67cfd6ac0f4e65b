"""The data flow that decides a shortened run's verdict (``kernel/agent/shorten/shorten_flow.py``): what the
failing line reads that the shortening changed, through the cell's own statements. Pure functions
of the cell's text and the run's facts: no kernel needed (the same rules in a real kernel:
``test_slow_cells_dependence.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from crane_lsp.kernel.agent.shorten.shorten_flow import _shf_dependence


def _kinds(cell: str, line: int, **shortened: Any) -> dict[str, list[str]]:
    found = _shf_dependence(cell, line, shortened)
    assert found is not None
    return dict(found["names"])


SAMPLED = {"rows": [{"what": "df", "kept": 263, "of": 200_000}]}


def test_a_value_derived_from_sampled_data_is_sampled_and_an_unrelated_one_is_not() -> None:
    cell = "X = df.drop(columns=['y']).to_numpy()\nw = np.ones((3, 2))\nout = X @ w\nother = w.T @ w\n"
    assert _kinds(cell, 3, **SAMPLED) == {"X": ["sampled"]}
    assert _kinds(cell, 4, **SAMPLED) == {}


def test_a_method_call_changes_its_object_and_a_call_what_it_is_handed() -> None:
    cell = "model.fit(df[['a']], y)\npred = model.predict(test)\nnp.random.shuffle(arr)\n"
    assert _kinds(cell, 2, **SAMPLED) == {"model": ["sampled"]}
    assert _kinds("scaler.fit(df)\nX2 = scaler.transform(test)\n", 2, **SAMPLED) == {"scaler": ["sampled"]}


def test_functions_are_followed_into_the_globals_they_read() -> None:
    cell = "def total():\n    return df.a.sum()\nv = total() / 0\n"
    assert _kinds(cell, 3, **SAMPLED) == {"total": ["sampled"]}
    kernel_fn = "v = helper(3)\n"  # defined in an earlier cell: the run lists the globals it reads
    assert _kinds(kernel_fn, 1, **SAMPLED) == {}
    assert _kinds(kernel_fn, 1, calls={"helper": ["df"]}, **SAMPLED) == {"df": ["sampled"]}


@pytest.mark.parametrize(
    ("body", "carried"),
    [
        ("    acc = acc + step(t)\n", "acc"),
        ("    xs.append(xs[t - 1] + 1)\n", "xs"),
        ("    x[t] = x[t - 1] * 2\n", "x"),
        ("    best = max(best, score(t))\n", "best"),
    ],
)
def test_what_a_cut_loop_builds_on_is_carried(body: str, carried: str) -> None:
    cell = f"for t in range(1, n):\n{body}v = {carried}[0] / 0\n"
    assert _kinds(cell, 3, loops={"1": [2, 1000]}) == {carried: ["carried"]}


def test_what_a_cut_loop_binds_afresh_holds_the_last_iterations_value() -> None:
    cell = "for t in range(n):\n    loss = compute(t)\n    loss.backward()\nv = loss.item() / 0\n"
    assert _kinds(cell, 4, loops={"1": [2, 1000]}) == {"loss": ["loop"]}
    inside = "for t in range(n):\n    acc = acc + t\n    bad = data[t]\n"
    assert _kinds(inside, 3, loops={"1": [2, 1000]}) == {}  # t is the loop's own: its last value is real


def test_a_comprehensions_own_names_are_not_the_cells() -> None:
    cell = "for i in range(n):\n    s = sum(k * k for k in range(9))\nv = k / 0\n"
    assert _kinds(cell, 3, loops={"1": [2, 1000]}) == {}


def test_a_lowered_parameter_changes_what_its_line_binds() -> None:
    cell = "history = model.fit(X, y, epochs=30)\nv = history.history['loss'][20]\n"
    params = {"params": [{"what": "epochs on line 1", "param": "epochs", "kept": 1, "of": 30}]}
    assert _kinds(cell, 2, **params) == {"history": ["param"]}


def test_a_cell_that_does_not_parse_is_left_to_the_fallback() -> None:
    assert _shf_dependence("def broken(:\n", 1, SAMPLED) is None


def test_calling_into_a_module_changes_no_module() -> None:
    body = "    w = np.linalg.svd(np.random.rand(4, 4))[1].sum()\n    step += 1\n"
    cell = "step = 0\nwhile step < steps:\n" + body + "w.sizee\n"
    loops = {"loops": {"2": [2, 0]}}
    assert _kinds(cell, 5, **loops) == {"w": ["carried", "loop"]}  # without the kernel's facts
    assert _kinds(cell, 5, modules=["np"], **loops) == {"w": ["loop"]}  # np is a module: w is fresh
