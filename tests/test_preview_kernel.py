"""Try a cell in the sandbox (issue 37, ``crane_lsp.preview``) in a REAL kernel: the dry run's jailed
copy runs the cell with ``preview`` on and answers what it printed, its last value and what it
changed; the kernel's own namespace (its fingerprints) and execution count are the same afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from crane_lsp.dryrun.outcome import PreviewChange, PreviewFacts, PreviewValue
from crane_lsp.kernel.agent import dryrun_wire as wire
from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.probe_install import install_code
from crane_lsp.preview import Preview, payload, phrase, preview
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

pytestmark = pytest.mark.timeout(60)

SETTINGS = Settings.model_validate({"dryRunBudget": 2.0, "dryRunRecheckBudget": 2.0})
PRINTS = "__import__('sys').modules['_crane_probe']._ufp_all(get_ipython().user_ns, get_ipython())"
SETUP = (
    "import numpy as np, pandas as pd\n"
    "pv_df = pd.DataFrame({'a': [1.0, 2.0, 3.0], 'b': [4.0, 5.0, 8.0]})\n"
    "pv_items = [1, 2, 3]\npv_tmp = 1\nX_train = np.zeros((800, 3))"
)


@pytest.fixture
async def link(kernel: TestKernel) -> AsyncIterator[KernelLink]:
    kernel.run(install_code())  # the fingerprints below read the probe's module
    kernel.run(SETUP)
    connected = await KernelLink.connect(kernel.connection_file)
    yield connected
    await connected.close()


def _state(kernel: TestKernel) -> tuple[Any, str]:
    """The kernel's user namespace as fingerprints, and its execution count (both must not move)."""
    return kernel.eval(PRINTS), kernel.eval("get_ipython().execution_count")


async def _preview(kernel: TestKernel, link: KernelLink, source: str) -> Preview:
    before = _state(kernel)
    answer = await preview(link, source, SETTINGS)
    assert _state(kernel) == before, "the preview changed the kernel"
    return answer


async def test_a_cell_that_adds_a_column_says_so(kernel: TestKernel, link: KernelLink) -> None:
    answer = await _preview(kernel, link, "pv_df['ratio'] = pv_df.a / pv_df.b\nX_train = X_train[:640]")
    assert answer.verdict == "ran clean" and answer.outcome == "completed", answer
    rows = {row.name: row.change for row in answer.diff}
    assert rows == {
        "pv_df": "adds column `ratio` to `pv_df`",
        "X_train": "rebinds `X_train` (800 → 640 rows)",
    }
    assert kernel.eval("list(pv_df.columns)") == "['a', 'b']"


async def test_what_it_prints_displays_and_its_last_value(kernel: TestKernel, link: KernelLink) -> None:
    source = "print('rows:', len(pv_df))\ndisplay('shown')\npv_model = 3\ndel pv_tmp\n"
    source += "pv_items.append(4)\npv_df.a.sum()"
    answer = await _preview(kernel, link, source)
    assert answer.stdout == "rows: 3\n'shown'\n", answer
    assert answer.result == "np.float64(6.0)" or answer.result == "6.0", answer.result
    assert [row.change for row in answer.diff] == [
        "creates `pv_model`",
        "deletes `pv_tmp`",
        "changes `pv_items` in place (3 → 4 items)",
    ]
    quiet = await _preview(kernel, link, "pv_df.a.sum();")
    assert quiet.result is None and quiet.diff == [], "a ';' shows no value, as in IPython"


async def test_a_crashing_cell_gives_its_verdict_and_the_changes_before_the_raise(
    kernel: TestKernel, link: KernelLink
) -> None:
    source = "pv_items.append(9)\npv_df.pop('a')\nprint('before')\npv_x = {}['missing']\nprint('never')"
    answer = await _preview(kernel, link, source)
    assert answer.outcome == "raised" and answer.exception == "KeyError" and answer.line == 4, answer
    assert answer.verdict == "raised KeyError at line 4: 'missing'"
    assert answer.stdout == "before\n"
    assert [row.change for row in answer.diff] == [
        "drops column `a` from `pv_df`",
        "changes `pv_items` in place (3 → 4 items)",
    ]


async def test_a_cell_that_runs_too_long_has_no_verdict_and_says_why(
    kernel: TestKernel, link: KernelLink
) -> None:
    answer = await _preview(kernel, link, "print('start')\nwhile True:\n    pass")
    assert answer.outcome == "timeout" and answer.verdict == "no verdict: did not finish in 2 s", answer
    assert (
        answer.diff == []
        and answer.note == "the sandboxed copy was stopped before it answered: no output and no diff"
    )


async def test_magics_top_level_await_and_stdin_as_the_kernel_runs_them(
    kernel: TestKernel, link: KernelLink
) -> None:
    """A cell IPython transforms (a blank first line, a magic) or awaits keeps its value and lines; a
    cell that waits for a person is stopped, with what it printed before."""
    magic = await _preview(kernel, link, "\n%time pv_y = 2\npv_y")
    assert magic.result == "2" and "Wall time" in magic.stdout, magic
    assert [row.change for row in magic.diff] == ["creates `pv_y`"]
    awaited = await _preview(kernel, link, "import asyncio\nawait asyncio.sleep(0)\npv_items[0] + 4")
    assert awaited.verdict == "ran clean" and awaited.result == "5", awaited
    broken = await _preview(kernel, link, "print('a')\npv_z = (1,")
    assert broken.outcome == "raised" and broken.exception == "SyntaxError", broken
    assert broken.note == "the cell did not start (it does not compile): nothing ran", broken
    asks = await _preview(kernel, link, "print('name?')\npv_name = input()")
    assert asks.outcome == "blocked" and asks.verdict.startswith("no verdict: the sandbox stopped it"), asks
    assert asks.stdout == "name?\n" and asks.diff == [], asks


async def test_a_prepared_child_previews_too(kernel: TestKernel, link: KernelLink) -> None:
    """The child forked while the user types gets the preview option with the cell (dryrun_warm.py)."""
    prepared = await link.call("dry_run_prepare", {"memory_mb": SETTINGS.dry_run_memory_mb}, timeout=10)
    assert prepared["outcome"] == "prepared", prepared
    before = _state(kernel)
    raw = await link.call("dry_run", payload("pv_items.append(1)\npv_items", SETTINGS), timeout=20)
    await asyncio.sleep(0)
    assert raw["prepared"] is True and raw["preview"]["result"] == "[1, 2, 3, 1]", raw
    assert raw["preview"]["changes"][0]["change"] == "mutated"
    assert _state(kernel) == before


PAIRS = [
    (PreviewFacts, wire.PreviewWire),
    (PreviewChange, wire.PreviewChangeWire),
    (PreviewValue, wire.PreviewValueWire),
]


@pytest.mark.parametrize(("model", "shape"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_each_preview_model_has_exactly_its_wire_keys(model: type, shape: type) -> None:
    assert set(model.model_fields) == set(shape.__annotations__)  # type: ignore[attr-defined]
    assert model.model_config.get("extra") == "forbid"  # type: ignore[attr-defined]


def test_changes_in_words() -> None:
    frame, array = "pandas.DataFrame", "numpy.ndarray"
    ab = {"type": frame, "shape": [5, 2], "columns": ["a", "b"]}
    cases = [
        (("rebound", {"type": "list", "len": 3}, {"type": array, "shape": [3]}),
         "rebinds `v` (list → ndarray)"),
        (("rebound", ab, {"type": frame, "shape": [5, 3], "columns": ["a", "b", "c"]}),
         "rebinds `v` (adds column `c`)"),
        (("mutated", ab, {"type": frame, "shape": [4, 2], "columns": ["a", "c"]}),
         "adds column `c` to `v` and drops column `b` (5 → 4 rows)"),
        (("mutated", {"type": array, "shape": [4, 2]}, {"type": array, "shape": [4, 2]}),
         "changes `v` in place"),
        (("mutated", {"type": array, "shape": [4, 2]}, {"type": array, "shape": [4, 3]}),
         "changes `v` in place (4x2 → 4x3)"),
        (("mutated", {"type": "str", "len": 2}, {"type": "str", "len": 5}),
         "changes `v` in place (2 → 5 characters)"),
    ]  # fmt: skip
    for (kind, before, after), words in cases:
        change = PreviewChange.model_validate({"name": "v", "change": kind, "before": before, "after": after})
        assert phrase(change) == words
