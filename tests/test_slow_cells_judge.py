"""The rules that turn two shortened runs into a verdict (``crane_lsp.dryrun.shortened.judge``), on the
answers the kernel gives: a crash is reported only when both samples raise alike and its kind
cannot hinge on the sample; everything else is no verdict, with the reason. (The same rules on real
slow cells in a real kernel: ``test_slow_cells.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

from crane_lsp.dryrun.shortened import ShortenedRuns, judge

CELL = "for i in range(n):\n    acc = step(i)\nresult = combine(df, acc)\n"


def _run(rows: int, exception: str | None, message: str, **facts: Any) -> dict[str, Any]:
    outcome = "raised" if exception else "completed"
    shortened = {"rows": [{"what": "df", "kept": rows, "of": 200_000}], "sizes": [rows], **facts}
    return {"outcome": outcome, "exception": exception, "message": message, "line": 3, "shortened": shortened}


def _judge(first: dict[str, Any], second: dict[str, Any] | None = None) -> Any:
    runs = [first] if second is None else [first, second]
    return judge(ShortenedRuns.model_validate({"runs": runs}), "3 s", CELL)


@pytest.mark.parametrize(
    ("exception", "message_for"),
    [
        ("AttributeError", lambda r: "'DataFrame' object has no attribute 'plott'"),
        ("TypeError", lambda r: "unsupported operand type(s) for +: 'int' and 'str'"),
        ("NameError", lambda r: "name 'never_bound' is not defined"),
        ("ModuleNotFoundError", lambda r: "No module named 'nope'"),
        ("ValueError", lambda r: "X has 5 features, but KMeans is expecting 8 features as input."),
        ("RuntimeError", lambda r: "mat1 and mat2 shapes cannot be multiplied (32x10 and 12x5)"),
        ("ValueError", lambda r: f"operands could not be broadcast together with shapes ({r},5) ({r},4)"),
        ("IndexError", lambda r: "index 9 is out of bounds for axis 1 with size 8"),
    ],
)
def test_a_crash_that_cannot_hinge_on_the_sample_is_observed(exception: str, message_for: Any) -> None:
    prediction = _judge(_run(263, exception, message_for(263)), _run(391, exception, message_for(391)))
    assert prediction.crash and prediction.certainty == "observed" and prediction.exception == exception
    assert prediction.line == 2 and "in a shortened run: 263 of 200,000 rows (df)" in prediction.message
    assert prediction.evidence[0].value == "263 of 200,000 rows (df)"


def test_a_key_error_on_a_label_missing_from_the_full_data_is_observed() -> None:
    facts = {"failure": {"key_type": "str", "key": "'regoin'", "key_in_full": False}}
    first, second = _run(263, "KeyError", "'regoin'", **facts), _run(391, "KeyError", "'regoin'", **facts)
    assert _judge(first, second).crash


@pytest.mark.parametrize(
    ("exception", "message_for", "failure", "why"),
    [
        ("KeyError", lambda r: "'2020-01-15'", {"key_type": "str", "key_in_full": True}, "row label, a date"),
        ("KeyError", lambda r: "25001", {"key_type": "int", "key_in_full": False}, "row label, a date"),
        ("IndexError", lambda r: "single positional indexer is out-of-bounds", {}, "beyond the sample"),
        (
            "IndexError",
            lambda r: f"index 300 is out of bounds for axis 0 with size {r}",
            {},
            "beyond the sample",
        ),
        ("NameError", lambda r: "name 'acc' is not defined", {}, "binds that name itself"),
        ("AttributeError", lambda r: "'NoneType' object has no attribute 'fit'", {}, "None"),
        ("ValueError", lambda r: "perplexity must be less than n_samples", {}, "sizes, classes or counts"),
        (
            "ValueError",
            lambda r: "n_samples=500 should be >= n_clusters=600.",
            {},
            "sizes, classes or counts",
        ),
        ("ValueError", lambda r: "This solver needs samples of at least 2 classes", {}, "sizes, classes"),
        ("ValueError", lambda r: f"shapes ({r},) (200000,) not aligned", {}, "full-size object"),
        ("ValueError", lambda r: f"Length mismatch: expected {r} items", {}, "sizes, classes or counts"),
        ("ZeroDivisionError", lambda r: "division by zero", {}, "may hinge on the data"),
        ("StopIteration", lambda r: "", {}, "may hinge on the data"),
    ],
)
def test_a_crash_that_may_come_from_the_shortening_is_no_verdict(
    exception: str, message_for: Any, failure: dict[str, Any], why: str
) -> None:
    first = _run(263, exception, message_for(263), failure=failure)
    second = _run(391, exception, message_for(391), failure=failure)
    prediction = _judge(first, second)
    assert not prediction.crash
    assert prediction.message.startswith("no verdict: a shortened run raised") and why in prediction.message


def test_a_parameter_the_run_lowered_is_no_verdict() -> None:
    params = {"params": [{"what": "tsne.max_iter", "param": "max_iter", "kept": 100, "of": 1000}]}
    message = "The 'max_iter' parameter of TSNE must be an int in the range [250, inf)."
    prediction = _judge(
        _run(263, "ValueError", message, **params), _run(391, "ValueError", message, **params)
    )
    assert not prediction.crash and "lowered" in prediction.message


def test_samples_that_disagree_or_a_lone_crash_are_no_verdict() -> None:
    reshape = "cannot reshape array of size {} into shape (1000,newaxis)"
    differ = _judge(
        _run(263, "ValueError", reshape.format(500)), _run(391, "ValueError", reshape.format(782))
    )
    assert not differ.crash and "a second sample raised differently" in differ.message
    lone = _judge(_run(263, "ValueError", "x"), _run(391, None, ""))
    assert not lone.crash and "hinges on the sample" in lone.message
    unconfirmed = _judge(_run(263, "AttributeError", "'X' object has no attribute 'y'"))
    assert not unconfirmed.crash and "no time to confirm" in unconfirmed.message


def test_a_clean_shortened_run_is_never_ran_clean_and_a_timeout_keeps_its_headline() -> None:
    clean = _judge(_run(263, None, ""))
    assert not clean.crash and clean.message == "no crash seen in a shortened run (263 of 200,000 rows (df))"
    assert any("no promise" in n for n in clean.notes)
    stuck = judge(ShortenedRuns.model_validate({"runs": [{"outcome": "timeout"}]}), "3 s", CELL)
    assert stuck.message == "no verdict: the dry run did not finish in 3 s"
    assert "shortened run 1 (nothing shortened): timeout" in stuck.notes
    none = judge(ShortenedRuns(), "3 s", CELL)
    assert none.message == "no verdict: the dry run did not finish in 3 s"


def test_batches_elements_and_while_loops_are_described_as_such() -> None:
    facts = {
        "rows": [
            {"what": "ds", "kept": 4, "of": 3125, "unit": "batches"},
            {"what": "data['train']", "kept": 263, "of": 300_000},
        ],
        "loops": {"2": [2, 0]},
        "params": [{"what": "epochs on line 1", "param": "epochs", "kept": 1, "of": 30}],
    }
    run = {"outcome": "completed", "shortened": facts}
    said = judge(ShortenedRuns.model_validate({"runs": [run]}), "3 s", CELL).message
    assert said == (
        "no crash seen in a shortened run (the first 4 of 3,125 batches (ds); 263 of 300,000 rows "
        "(data['train']); the first 2 iterations of the while loop on line 2; "
        "epochs on line 1: 1 instead of 30)"
    )


def test_keras_argument_listing_does_not_make_a_shape_error_about_classes() -> None:
    message = (
        "Exception encountered when calling Sequential.call().\n\n\x1b[1mInput 0 of layer 'dense' is "
        "incompatible with the layer: expected axis -1 of input shape to have value 8, but received input "
        "with shape (3, 7)\x1b[0m\n\nArguments received by Sequential.call():\n  • training=False\n"
        "  • kwargs=<class 'inspect._empty'>"
    )
    said = _judge(_run(263, "ValueError", message), _run(391, "ValueError", message))
    assert said.crash and said.certainty == "observed"


def test_a_tensorflow_shape_error_is_observed() -> None:
    def message(rows: int) -> str:
        return f"Matrix size-incompatible: In[0]: [{rows},8], In[1]: [7,4] [Op:MatMul] name: "

    said = _judge(
        _run(263, "InvalidArgumentError", message(263)), _run(391, "InvalidArgumentError", message(391))
    )
    assert said.crash and said.exception == "InvalidArgumentError"


def test_slow_cells_skip_only_the_same_text_at_no_longer_budget() -> None:
    from crane_lsp.dryrun.shortened import SlowCells

    slow = SlowCells()
    cell = "x = fit(big)\nx.plott()\n"
    assert slow.forecast(cell, 3.0) == {}
    slow.learn(cell, 3.0, "timeout", None)
    assert slow.forecast(cell, 3.0) == {
        "skip_full": "its full dry run did not finish in 3 s before",
        "after_s": 0.0,
    }
    assert slow.forecast(cell, 30.0) == {}  # a Re-check's longer budget always runs it whole
    assert slow.forecast("x = fit(big)\nx.plot()\n", 3.0) == {
        "after_s": 0.0
    }  # same start: early, not skipped
    assert slow.forecast("y = 1\n", 3.0) == {}
    slow.learn(cell, 3.0, "completed", None)  # its full run answered: forgotten
    assert slow.forecast(cell, 3.0) == {}
    one_line = SlowCells()
    one_line.learn("km = KMeans(n_init=500).fit(X)", 3.0, "timeout", None)
    assert one_line.forecast("km = KMeans(n_init=500).fit(X)\nprint(km)", 3.0) == {}  # no stem to share


def test_a_skipped_full_run_says_so() -> None:
    runs = ShortenedRuns.model_validate(
        {
            "runs": [{"outcome": "completed", "shortened": {}}],
            "skipped_full": "its full dry run did not finish",
        }
    )
    said = judge(runs, "3 s", CELL)
    assert said.notes[0] == "full dry run: not run: its full dry run did not finish"
    stuck = judge(
        ShortenedRuns.model_validate({"skipped_full": "its full dry run did not finish"}), "3 s", CELL
    )
    assert stuck.message == "no verdict: the full dry run was not run (its full dry run did not finish)"


def test_the_kernels_own_timings_predict_an_overrun() -> None:
    from crane_lsp.dryrun.shortened import SlowCells

    ran = {"model.fit(X, y, epochs=50)\nmodel.predict(X_test)\n": 82.4, "df.head()": 0.01}
    slow = SlowCells()
    cell = "model.fit(X, y, epochs=50)\nmodel.predict(X_test)\n"
    assert slow.forecast(cell, 3.0, ran) == {"skip_full": "it ran 82 s in the kernel before", "after_s": 0.0}
    assert slow.forecast(cell, 120.0, ran) == {}
    assert slow.forecast("model.fit(X, y, epochs=50)\nmodel.evaluate(X_test)\n", 3.0, ran) == {"after_s": 0.0}
    assert slow.forecast("df.head()", 3.0, ran) == {}


# -- issue 32: decided by what the shortening changed, not by the exception's class ------------------

LOOP_CELL = "for i in range(n):\n    acc = step(i)\nv = other[300]\n"
CARRY_CELL = "for t in range(1, n):\n    xs.append(xs[t - 1])\nv = xs[-1] / 0\n"


def _loop_run(exception: str, message: str, kept: int, **facts: Any) -> dict[str, Any]:
    shortened = {"loops": {"1": [kept, 50_000]}, **facts}
    return {
        "outcome": "raised",
        "exception": exception,
        "message": message,
        "line": 3,
        "shortened": shortened,
    }


def test_a_failing_line_that_reads_nothing_shortened_is_the_full_runs_crash() -> None:
    message = "index 300 is out of bounds for axis 0 with size 200"
    runs = [_loop_run("IndexError", message, 2), _loop_run("IndexError", message, 3)]
    prediction = judge(ShortenedRuns.model_validate({"runs": runs}), "3 s", LOOP_CELL)
    assert prediction.crash and prediction.exception == "IndexError" and prediction.line == 2
    assert any("reads nothing the shortening changed" in n for n in prediction.notes)


def test_a_failing_line_that_reads_what_a_cut_loop_carried_is_no_verdict() -> None:
    runs = [_loop_run("ZeroDivisionError", "float division by zero", k) for k in (2, 3)]
    prediction = judge(ShortenedRuns.model_validate({"runs": runs}), "3 s", CARRY_CELL)
    assert not prediction.crash and "`xs`, built up by a loop cut short" in prediction.message


@pytest.mark.parametrize(
    ("status", "crash"),
    [(("fails", "fails"), True), (("passes", "passes"), False), (("fails", "passes"), False)],
)
def test_a_sampled_operand_is_decided_by_the_full_size_rerun(status: tuple[str, str], crash: bool) -> None:
    message = "index 300 is out of bounds for axis 0 with size {}"
    first = _run(263, "IndexError", message.format(263), extrapolated={"status": status[0], "why": "x"})
    second = _run(391, "IndexError", message.format(391), extrapolated={"status": status[1], "why": "x"})
    prediction = _judge(first, second)
    assert prediction.crash is crash, prediction.message
    if not crash:
        assert "would not fail" in prediction.message


def test_numbers_that_scale_with_the_sample_are_masked_others_are_not() -> None:
    torch = "mat1 and mat2 shapes cannot be multiplied ({}x10 and 12x5)"
    alike = _judge(
        _run(263, "RuntimeError", torch.format(263 // 32)), _run(391, "RuntimeError", torch.format(391 // 32))
    )
    assert alike.crash and alike.exception == "RuntimeError", alike.message
    differ = _judge(_run(263, "RuntimeError", torch.format(8)), _run(391, "RuntimeError", torch.format(9)))
    assert not differ.crash and "raised differently" in differ.message


def test_a_name_error_is_decided_by_the_name_alone() -> None:
    """The failing value is the name: a line that also reads what a cut loop filled in still fails on a
    name bound nowhere in the cell (the pairwise-distance case), not on one the loop binds."""
    cell = "for i in range(n):\n    D[i, i] = 1.0\nscore = D.max() / scale\n"
    loops = {"loops": {"1": [2, 5000]}}
    crash = [_loop_run("NameError", "name 'scale' is not defined", 2, **loops)] * 2
    assert judge(ShortenedRuns.model_validate({"runs": crash}), "3 s", cell).crash
    bound = cell.replace("score =", "if n > 9000:\n    scale = 2\nscore =")
    unset = [{**crash[0], "line": 5}] * 2
    prediction = judge(ShortenedRuns.model_validate({"runs": unset}), "3 s", bound)
    assert not prediction.crash and "binds that name itself" in prediction.message
