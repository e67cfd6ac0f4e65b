"""An observed crash that explains itself: the facts at the failing line, in a REAL kernel.

Each test sets the state up in a real ipykernel, dry-runs a crashing cell through the real link and
pipeline, and asserts what the user reads: the one-line cause (the message), the raw message beneath
it (the diagnosis), the evidence rows (the values the failing line read, the function and loop it was
in, where each was bound) and the origins (the executed cell that made each operand), and that
privacy mode keeps values out of all of it.
"""

from __future__ import annotations

import json

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

SETUP = [
    "import numpy as np\nimport pandas as pd",
    "ff_X = np.ones((75, 4))",
    "def ff_optimize(X, w):\n    b = 0.5\n    z = np.dot(X, w) + b\n    return z",
    "ff_a = np.ones(68)\nff_b = np.ones(272)",
    "ff_titanic = pd.DataFrame({'Cabin': ['C85', None], 'Age': [22.0, 38.0], 'Ticket': ['A/5', 'PC']})",
    "ff_labels = [np.array([1]), np.array([0]), np.array([1])]",
    "ff_secret = 'hunter2-private'\n"
    "ff_people = pd.DataFrame({'name': ['Ann Example', 'Bob'], 'age': [41, 42]})",
]


@pytest.fixture(scope="module")
def state(kernel: TestKernel) -> TestKernel:
    for cell in SETUP:
        kernel.run(cell)
    return kernel


async def _observe(kernel: TestKernel, cell: str, *, privacy: bool = False) -> Prediction:
    settings = Settings(dry_run="on", privacy=privacy)
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
        prediction = (await pipeline.predict(cell, executed=SETUP, layers={"dryrun"})).prediction
    assert prediction.certainty == "observed", prediction
    return prediction


def _rows(p: Prediction) -> dict[str, str]:
    return {e.fact: e.value for e in p.evidence}


async def test_shape_mismatch_inside_a_function_from_an_earlier_cell(state: TestKernel) -> None:
    cell = "ff_w = np.zeros((1, 4))\nout = ff_optimize(ff_X, ff_w)"
    p = await _observe(state, cell)
    assert p.exception == "ValueError" and p.line == 1
    assert p.message == (
        "ValueError: cannot multiply shapes (75, 4) (`X`) and (1, 4) (`w`): inner dimensions differ; "
        "`w` is a row where a column was meant (`w.T` is (4, 1))"
    )
    assert "shapes (75,4) and (1,4) not aligned" in p.diagnosis  # the raw message stays beneath
    rows = _rows(p)
    assert rows["raised inside"].startswith("ff_optimize() from cell [")
    assert rows["raised inside"].endswith("line 3: z = np.dot(X, w) + b")
    assert rows["w in ff_optimize()"] == "ndarray (1, 4) float64; an argument of ff_optimize()"
    assert rows["X in ff_optimize()"] == "ndarray (75, 4) float64; an argument of ff_optimize()"
    assert rows["ff_w"] == "ndarray (1, 4) float64; assigned on line 1"
    # origins in editor coordinates: the function's cell (its def line), then the operand from a cell
    origins = {o.variable: (o.cell, o.line) for o in p.origin}
    assert origins["ff_optimize"] == (2, 0)
    assert origins["ff_X"] == (1, 0)
    assert "ff_w" not in origins  # bound in the target cell itself: its evidence row says where


async def test_broadcast_mismatch_names_both_operands_and_their_cells(state: TestKernel) -> None:
    p = await _observe(state, "total = 1\nff_c = ff_a + ff_b * total")
    assert p.message == ("ValueError: shapes (68,) (`ff_a`) and (272,) (`ff_b`) cannot be broadcast together")
    assert "operands could not be broadcast together" in p.diagnosis
    assert _rows(p)["ff_a"] == "ndarray (68,) float64"
    assert {o.variable: o.cell for o in p.origin} == {"ff_a": 3, "ff_b": 3}


async def test_label_dropped_twice_in_a_loop_shows_the_iteration(state: TestKernel) -> None:
    cell = "df = ff_titanic.copy()\nfor i in range(2):\n    df = df.drop(columns=['Cabin'])"
    p = await _observe(state, cell)
    assert p.exception == "KeyError" and p.line == 2
    assert p.message == (
        "KeyError: `df` no longer has 'Cabin' in iteration 2 of the loop on line 2: "
        "line 3 removed it in an earlier iteration"
    )
    rows = _rows(p)
    assert rows["loop"] == "iteration 2 of 2 of for i in range(2) (line 2)"
    assert rows["i"] == "int 1"
    assert rows["df"].startswith("DataFrame (2, 2); columns Age, Ticket")
    assert "not found in axis" in p.diagnosis


async def test_label_listed_twice_for_a_loop_says_so(state: TestKernel) -> None:
    loop = "for col in ['Cabin', 'Age', 'Cabin']:\n    df.drop(columns=[col], inplace=True)"
    cell = "df = ff_titanic.copy()\n" + loop
    p = await _observe(state, cell)
    assert p.message == (
        "KeyError: 'Cabin' occurs 2 times in `['Cabin', 'Age', 'Cabin']` (items 1 and 3): the loop on line 2 "
        "removes it once, then looks for it again (iteration 3)"
    )
    assert "at item 1, 3 of its 3" in _rows(p)["loop"]


async def test_an_array_where_a_scalar_was_expected(state: TestKernel) -> None:
    cell = "counts = {}\nfor i in range(len(ff_labels)):\n    counts[ff_labels[i]] = 1"
    p = await _observe(state, cell)
    assert p.exception == "TypeError" and p.line == 2
    assert p.message == (
        "TypeError: `ff_labels[i]` is an array of shape (1,) where a single number is expected "
        "(each item of `ff_labels` is an array)"
    )
    rows = _rows(p)
    assert rows["loop"] == "iteration 1 of 3 of for i in range(len(ff_labels)) (line 2)"
    assert rows["ff_labels[i]"] == "ndarray (1,) int64"
    assert rows["counts"].startswith("dict of 0; assigned on line 1")
    assert {o.variable for o in p.origin} == {"ff_labels"}


async def test_privacy_keeps_values_out_of_everything_the_user_and_the_llm_read(state: TestKernel) -> None:
    cell = "n = ff_secret + len(ff_people['name'])"
    shown = await _observe(state, cell, privacy=False)
    assert _rows(shown)["ff_secret"] == "str 'hunter2-private'"  # without privacy the value is a fact
    private = await _observe(state, cell, privacy=True)
    assert _rows(private)["ff_secret"] == "str of 15 characters"
    everything = json.dumps(private.model_dump())
    for value in ("hunter2", "Ann Example"):
        assert value not in everything
    assert "name" in _rows(private)["ff_people"]  # structure (column names) stays


LIBRARY_SETUP = (
    "from sklearn.linear_model import LinearRegression\n"
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "lib_x1 = np.arange(10.0)\nlib_y = np.arange(10.0)\nlib_X2 = np.ones((10, 2))\nlib_y8 = np.ones(8)\n"
    "lib_fitted = LinearRegression().fit(np.ones((5, 3)), np.arange(5.0))\nlib_X3 = np.ones((4, 2))\n"
    "lib_people = pd.DataFrame({'age': [1.0, 2.0], 'smoker': ['No', 'Yes']})\n"
    "lib_names = ['cat', 'dog']\n"
    "from sklearn.model_selection import train_test_split\n"
    "lib_adv = np.zeros((3, 224, 224))\nlib_ragged = [[1, 2], [3]]\n"
    "lib_left = pd.DataFrame({'key': ['1', '2'], 'a': [1, 2]})\n"
    "lib_right = pd.DataFrame({'key': [1, 2], 'b': [3, 4]})\n"
    "def lib_scale(x, factor=2):\n    return x * factor"
)


@pytest.mark.parametrize(
    ("cell", "sentence"),
    [
        (
            "LinearRegression().fit(lib_x1, lib_y)",
            "ValueError: a 2-D X (samples x features) is expected; `lib_x1` is 1-D (shape (10,)): "
            "`lib_x1.reshape(-1, 1)` makes it one column",
        ),
        (
            "LinearRegression().fit(lib_X2, lib_y8)",
            "ValueError: inconsistent numbers of samples: `lib_X2` has 10, `lib_y8` has 8",
        ),
        (
            "lib_fitted.predict(lib_X3)",
            "ValueError: `lib_X3` has 2 features (shape (4, 2)), but `lib_fitted` was fitted on 3",
        ),
        (
            "LinearRegression().fit(lib_people, [1, 2])",
            "ValueError: `lib_people` holds text such as 'No' in column(s) 'smoker': numbers are needed "
            "(encode or convert them first)",
        ),
        (
            "fig, ax = plt.subplots()\nax.set_xticks([0, 1, 2])\nax.set_xticklabels(lib_names)",
            "ValueError: `lib_names` gives 2 labels for 3 tick positions: one label per tick is needed "
            "(e.g. one per class)",
        ),
        ("lib_scale(3, fctor=4)", "TypeError: lib_scale() has no parameter 'fctor'; did you mean 'factor'?"),
        (
            "plt.imshow(lib_adv)",
            "TypeError: `lib_adv` has shape (3, 224, 224): imshow needs (M, N), (M, N, 3) or (M, N, 4); "
            "the channels come first (`lib_adv.transpose(1, 2, 0)` puts them last)",
        ),
        (
            "clean = lib_people.dropna(inplace=True)\nclean.head()",
            "AttributeError: `clean` is None, which has no attribute 'head' (assigned on line 1)",
        ),
        (
            "few = lib_people[lib_people['age'] > 5]\ntrain_test_split(few, test_size=0.2)",
            "ValueError: `few` is empty (shape (0, 2)): there are no samples to work on (assigned on line 1)",
        ),
        (
            "lib_left.merge(lib_right, on='key')",
            "ValueError: `lib_left`['key'] is {text_dtype} but `lib_right`['key'] is int64: "
            "the keys must have one dtype",
        ),
        (
            "np.array(lib_ragged)",
            "ValueError: `lib_ragged` is a list of 2 items (list) whose shapes differ: "
            "NumPy cannot make one array of them",
        ),
    ],
    ids=[
        "1d-X",
        "samples",
        "features",
        "text",
        "ticks",
        "keyword",
        "image",
        "none",
        "empty",
        "merge",
        "ragged",
    ],
)
async def test_library_errors_get_a_cause_naming_the_operands(
    state: TestKernel, cell: str, sentence: str
) -> None:
    if state.eval("'lib_names' in globals()") != "True":
        state.run(LIBRARY_SETUP)
    p = await _observe(state, cell)
    text_dtype = state.eval("str(lib_left['key'].dtype)").strip("'")  # object, or str on pandas 3
    assert p.message == sentence.replace("{text_dtype}", text_dtype)


async def test_the_llm_is_told_the_facts_with_the_observed_exception(
    state: TestKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crane_lsp.llm.predictor import LLMPredictor
    from tests.fake_llm_servers import Answer, FakeLLMServer, crash_answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeLLMServer() as server:
        server.push(Answer(crash_answer(line=2, exception="ValueError", reasoning="w should be a column")))
        settings = Settings.model_validate(
            {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.openai_url, "dry_run": "on"}
        )
        async with await KernelLink.connect(state.connection_file) as link:
            pipeline = Pipeline(
                settings, link=link, llm=LLMPredictor(settings), dryrun=DryRunner(link, settings)
            )
            cell = "ff_w = np.zeros((1, 4))\nout = ff_optimize(ff_X, ff_w)"
            prediction = (await pipeline.predict(cell, executed=SETUP, layers={"dryrun", "llm"})).prediction
        sent = json.dumps(server.requests[-1].json)
    assert prediction.certainty == "observed" and prediction.exception == "ValueError"
    assert "w should be a column" in prediction.diagnosis
    assert "cannot multiply shapes (75, 4) (`X`) and (1, 4) (`w`)" in sent  # the cause
    assert "shapes (75,4) and (1,4) not aligned" in sent  # the raw message it came from
    assert "w in ff_optimize() = ndarray (1, 4) float64" in sent  # the facts
    assert "sandboxed copy of the kernel: the crash was observed" in sent


async def test_a_column_read_by_label_is_a_fact_of_its_own(state: TestKernel) -> None:
    """``df['col']`` is read (one existing column of pandas' own frame): the cause names the column."""
    state.run("ff_games = pd.DataFrame({'released': ['2001-05-01', None], 'name': ['a', 'b']})")
    p = await _observe(
        state, "years = ff_games['released'].apply(lambda x: str(x).split('-')[0]).astype('int')"
    )
    assert p.exception == "ValueError"
    assert p.message.startswith("ValueError: `ff_games['released']` holds text such as 'nan' (dtype ")
    assert p.message.endswith("NaN: 1): numbers are needed (convert it first)")
    assert _rows(p)["ff_games['released']"].startswith("Series (2,) ")


async def test_a_child_prepared_ahead_reports_the_facts_too(state: TestKernel) -> None:
    """The dry run usually finds a child forked and jailed while the user typed: same facts."""
    settings = Settings(dry_run="on")
    async with await KernelLink.connect(state.connection_file) as link:
        runner = DryRunner(link, settings)
        ready = await runner.prepare()
        assert ready is not None and ready.outcome == "prepared", ready
        outcome = await runner.run_outcome("total = 1\nff_c = ff_a + ff_b * total")
    assert outcome.prepared is True and outcome.outcome == "raised", outcome
    assert outcome.facts is not None
    read = [(v.name, v.summary.shape, v.assigned) for v in outcome.facts.values]
    assert read == [("ff_a", [68], None), ("ff_b", [272], None), ("total", None, 1)]


async def test_a_keyerror_worded_as_a_sentence_names_no_label(state: TestKernel) -> None:
    """pandas words some KeyErrors as sentences ("Label(s) [1] do not exist"): not a key the line looks
    up, so no "has no column 'Label(s) ...'" (the replay corpus showed it); the raw message stays."""
    p = await _observe(state, "ff_summary = ff_titanic.agg({1: 'sum'})")
    assert p.exception == "KeyError" and "do not exist" in p.raw_message, p
    assert "has no column" not in p.message and p.cause == "", p.message
    typo = await _observe(state, "ff_cabins = ff_titanic['Cabni'].dropna()")
    assert "`ff_titanic` has no column 'Cabni'" in typo.message, typo.message  # a key on the line: named
