"""Each candidate family on a real crash in a real kernel: the dry run observes the crash (or a check
proves it), ``offer_fixes`` proposes the family's repair, the jail verifies it runs clean, and the
verified edit really runs in the kernel afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.fixes import offer_fixes
from crane_lsp.fixes.edit import apply
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

pytestmark = pytest.mark.timeout(240)

SETUP = """
import numpy as np
import pandas as pd
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import seaborn as sns
from sklearn.linear_model import LinearRegression, LogisticRegression
fam_df = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3], 'size': ['46.0', '2.0', '7.0']})
fam_img = np.zeros((3, 8, 8))
fam_cube = np.zeros((4, 2, 2))
fam_model = LinearRegression()
fam_cat = pd.Categorical(['a', 'b', 'a'])
fam_labels = np.array([[0], [1]])
fam_names = ['a', 'b']
fam_X, fam_y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 1, 0, 1])
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
fam_wide = pd.DataFrame({'a': [1, 2], 'b': [3, 4], 'c': [0, 1]})
fam_narrow = fam_wide[['a', 'c']]
fam_fitted = LinearRegression().fit(fam_wide[['a', 'b']], fam_wide['c'])
fam_gone = fam_df.drop(columns=['units'])
fam_gone_cols = ['region', 'size']
class FamGen:  # a generator the cell builds before calling it
    def flow(self, path, target_size=(8, 8)):
        return path, target_size
class FamLayer:  # a library that takes **kwargs and words an unknown keyword its own way
    def __init__(self, units, activation=None, **kwargs):
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments passed to FamLayer: {kwargs}")
"""

CASES = {
    "features-from-frame": (  # the operand sliced the fitted features away: select them from its frame
        "fam_pred = fam_fitted.predict(fam_wide.iloc[:, 1:])",
        "Select the features fam_fitted was fitted on from fam_wide",
        "fam_wide[fam_fitted.feature_names_in_]",
    ),
    "aggregation": ("fam_total = fam_df.groupby('region')['units'].avg()", "Use 'mean'", "mean()"),
    "dropped-already": (
        "fam_small = fam_df.drop(columns=['units'])\nfam_small.drop(columns=['units'], inplace=True)",
        'Drop with errors="ignore" (the label is already gone)',
        'errors="ignore"',
    ),
    "one-column": (
        "fam_model.fit(fam_df['units'], fam_df['units'])",
        "Select one column as a frame (fam_df[['units']])",
        "fam_df[['units']]",
    ),
    "flattened": (  # images fed to an estimator: one row each, the other axes as columns
        "fam_flat = LinearRegression().fit(fam_cube, fam_y)",
        "Flatten fam_cube to rows (fam_cube.reshape(len(fam_cube), -1))",
        "fam_cube.reshape(len(fam_cube), -1)",
    ),
    "channels-last": (
        "fam_shown = plt.imshow(fam_img)",
        "Move the channels last (fam_img.transpose(1, 2, 0))",
        "fam_img.transpose(1, 2, 0)",
    ),
    "int-of-text": (
        "fam_sizes = fam_df['size'].astype('int')",
        "Convert through float (fam_df['size'].astype(float).astype(int))",
        "astype(float).astype(int)",
    ),
    "accessor": (
        "fam_renamed = fam_cat.cat.rename_categories(['x', 'y'])",
        "Call it on fam_cat directly (no .cat)",
        "fam_cat.rename_categories",
    ),
    "single-number": (
        "for fam_i in range(2):\n    fam_title = fam_names[fam_labels[fam_i]]",
        "Take the one number (fam_labels[fam_i].item())",
        "fam_labels[fam_i].item()",
    ),
    "solver": (
        "fam_lr = LogisticRegression(penalty='elasticnet', solver='liblinear')\nfam_lr.fit(fam_X, fam_y)",
        "Use the 'saga' solver (the one with elasticnet)",
        "LogisticRegression(penalty='elasticnet', solver='saga', l1_ratio=0.5)",
    ),
    "keyword": (
        "fam_ax = sns.barplot(fam_df['region'], fam_df['units'])",
        "Pass x, y by keyword",
        "x=fam_df",
    ),
    # Python's binding rule: the third positional lands on ``s``, also passed by keyword
    "argument-twice": (
        "fam_pts = plt.scatter(fam_X[:, 0], fam_y, fam_X[:, 0], s=20)",
        "Drop the argument fam_X[:, 0]",
        "plt.scatter(fam_X[:, 0], fam_y, s=20)",
    ),
    # the same repair on each line that repeats the construct: one line alone only gets further
    "every-line": (
        "fam_a = fam_df['size'].astype('int')\nfam_b = fam_df['size'].astype('int') + 1",
        "Convert through float (fam_df['size'].astype(float).astype(int)) (also on line 2)",
        "fam_b = fam_df['size'].astype(float).astype(int) + 1",
    ),
    # a label meant as another once case, spaces and brackets are set aside, at each of its uses
    "near-label": (
        "fam_u = fam_df['Units (count)'].sum() / fam_df['Units (count)'].max()",
        "Use 'units'",
        "fam_df['units'].sum() / fam_df['units'].max()",
    ),
    # the callee takes **kwargs and the error comes from deeper down, naming no parameter: the
    # callee's own signature, read by the probe, has the near one
    "keyword-from-signature": (
        "fam_days = pd.date_range('2024-01-01', period=3)",
        "Use 'periods'",
        "pd.date_range('2024-01-01', periods=3)",
    ),
    # a compiled function whose wrapper gives no bound params: its signature's text names them
    "keyword-of-a-compiled-function": (
        "fam_noise = np.random.normal(0.0, 1.0, sizes=3)",
        "Use 'size'",
        "np.random.normal(0.0, 1.0, size=3)",
    ),
    # a list selection names no column in its error ("['unitz'] not in index"): the frame the
    # kernel holds has the near one
    "column-in-a-list": (
        "fam_pipe = make_pipeline(StandardScaler(), LinearRegression())\n"
        "fam_pipe.fit(fam_wide[['aa', 'b']], fam_wide['c'])",
        "Use 'a'",
        "fam_pipe.fit(fam_wide[['a', 'b']], fam_wide['c'])",
    ),
    # the callee is an object the same cell builds: the probe cannot see it, the crashed copy can
    "keyword-of-an-object-the-cell-builds": (
        "fam_gen = FamGen()\nfam_flow = fam_gen.flow('x', target_sizes=(4, 4))",
        "Use 'target_size'",
        "fam_gen.flow('x', target_size=(4, 4))",
    ),
    "keyword-in-the-librarys-words": (
        "fam_layer = FamLayer(4, activations='relu')",
        "Use 'activation'",
        "FamLayer(4, activation='relu')",
    ),
    # plot() takes **kwargs and hands them to the Line2D it makes, whose set() rejects the word: the
    # artist's setters name the property meant
    "keyword-an-artist-takes": (
        "fam_lines = plt.plot([1, 2], [3, 4], labels='a')",
        "Use 'label'",
        "plt.plot([1, 2], [3, 4], label='a')",
    ),
    # a method of a call's result: the error names DataFrame.sort_values, a class of fam_df
    "keyword-of-a-method-of-a-result": (
        "fam_sorted = fam_df.groupby('region').get_group('n').sort_values(bys='units')",
        "Use 'by'",
        "sort_values(by='units')",
    ),
    # subplots() hands the word on to figure() and Figure: figure() names the parameter meant
    "keyword-handed-on-through-kwargs": (
        "fam_fig, fam_ax = plt.subplots(figsizes=(4, 3))",
        "Use 'figsize'",
        "plt.subplots(figsize=(4, 3))",
    ),
    # set_params(**params) takes any word; scikit-learn's error lists the ones it takes
    "keyword-the-library-lists": (
        "fam_est = LinearRegression().set_params(fit_intercepts=False)",
        "Use 'fit_intercept'",
        "set_params(fit_intercept=False)",
    ),
    # the callee is an item of a list (no static chain): the method's own frame holds the word
    "keyword-of-a-subscripted-callee": (
        "fam_fig, fam_axes = plt.subplots(1, 2)\nfam_bars = fam_axes[0].hist([1, 2, 2], bin=2)",
        "Use 'bins'",
        "fam_axes[0].hist([1, 2, 2], bins=2)",
    ),
    # a loop's keys come from one frame, the frame it looks them up in was built from another
    "keys-from-another-frame": (
        "fam_keys = fam_wide.columns.values\n"
        "fam_part = fam_narrow.loc[fam_narrow['c'] == 0]\n"
        "for fam_f in fam_keys:\n"
        "    fam_top = fam_part[fam_f].max()",
        "Take fam_part from fam_wide (the frame the keys come from)",
        "fam_part = fam_wide.loc[fam_wide['c'] == 0]",
    ),
    # two labels for three classes, given where the display was built: the library's own labels
    "one-label-per-tick": (
        "fam_cm = ConfusionMatrixDisplay(confusion_matrix=np.eye(3, dtype=int), display_labels=[0, 1])\n"
        "fam_drawn = fam_cm.plot()",
        "Let the library label the ticks (display_labels=None)",
        "display_labels=None)",
    ),
    # a cell run twice: the drop gets further once it tolerates the gone label, then the list's
    # remove of that label fails; the pair of changes runs clean
    "pair-of-changes": (
        "fam_gone.drop(columns='units', inplace=True)\nfam_gone_cols.remove('units')",
        "Drop with errors=\"ignore\" (the label is already gone), then remove 'units' only where present, "
        "as the drop",
        "if 'units' in fam_gone_cols: fam_gone_cols.remove('units')",
    ),
}


@pytest.fixture(scope="module")
def prepared(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    return kernel


@pytest.mark.parametrize("family", sorted(CASES))
async def test_family_fix_is_verified_and_really_runs(prepared: TestKernel, family: str) -> None:
    cell, title, piece = CASES[family]
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)
    async with await KernelLink.connect(prepared.connection_file) as link:
        runner = DryRunner(link, settings)
        prediction = (await Pipeline(settings, link=link, dryrun=runner).predict(cell)).prediction
        assert prediction.crash, prediction
        fixed = await offer_fixes(runner, cell, prediction, limit=6)
    assert fixed.fix is not None and fixed.fix.verified(), (fixed.notes, [f.title for f in fixed.fixes])
    assert fixed.fix.title == title and piece in (fixed.fix.new_text or "")
    edited = apply(cell, fixed.fix)
    assert edited is not None
    assert prepared.run(edited, allow_error=True)["status"] == "ok"  # verified: it really runs


async def test_a_fix_of_a_cell_that_saves_is_verified_without_writing(
    prepared: TestKernel, tmp_path: Path
) -> None:
    """``np.savetxt`` of a 5-D array opens its file before it checks the array: the crash and the
    fix's clean run both go through a write, which the copy keeps in its memory. Only the real run
    of the applied fix writes the file."""
    target = tmp_path / "images.txt"
    prepared.run("fam_images = np.zeros((1, 2, 2, 2, 3))")
    cell = f"np.savetxt({str(target)!r}, fam_images, delimiter=',', fmt='%d')"
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)
    async with await KernelLink.connect(prepared.connection_file) as link:
        runner = DryRunner(link, settings)
        prediction = (await Pipeline(settings, link=link, dryrun=runner).predict(cell)).prediction
        assert prediction.crash and prediction.exception == "ValueError", prediction
        fixed = await offer_fixes(runner, cell, prediction, limit=6)
    assert fixed.fix is not None and fixed.fix.verified(), (fixed.notes, [f.title for f in fixed.fixes])
    assert "fam_images.reshape(len(fam_images), -1)" in (fixed.fix.new_text or "")
    assert not target.exists()
    edited = apply(cell, fixed.fix)
    assert edited is not None and prepared.run(edited, allow_error=True)["status"] == "ok"
    assert len(target.read_text().splitlines()) == 1  # one row of 24 numbers


async def test_the_next_cell_that_reads_what_the_fix_binds_runs_after_it(prepared: TestKernel) -> None:
    """The fixed target and the first cell below that reads its names, dry-run together: a clean run
    says so in the fix's notes; a crash there makes the fix gets-further, never verified."""
    cell = "fam_sz = fam_df['size'].astype('int')"
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)
    async with await KernelLink.connect(prepared.connection_file) as link:
        runner = DryRunner(link, settings)
        prediction = (await Pipeline(settings, link=link, dryrun=runner).predict(cell)).prediction
        assert prediction.crash, prediction
        clean = ["print('unrelated')", "fam_sz_total = fam_sz.sum()"]
        fixed = await offer_fixes(runner, cell, prediction, limit=6, later=clean)
        assert fixed.fix is not None and fixed.fix.verified(), fixed.notes
        assert fixed.fix.verification is not None
        expected = "the cell 2 below (it reads fam_sz) also runs clean after it, in the same copy"
        assert expected in fixed.fix.verification.notes, fixed.fix.verification.notes
        crashing = ["fam_sz_first = fam_sz.str[0]"]  # numbers have no .str: the fix leaves numbers
        fixed = await offer_fixes(runner, cell, prediction, limit=6, later=crashing)
    assert fixed.fix is not None and fixed.fix.verification is not None
    assert fixed.fix.verification.outcome == "gets-further", fixed.fix.verification
    note = fixed.fix.verification.notes[0]
    then = "the fixed cell runs clean; then the cell below (it reads fam_sz) raises AttributeError"
    assert note.startswith(then), note
    assert "fam_sz_first" not in prepared.eval("sorted(globals())"), "the dry runs changed nothing"


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        # the callee is an object the same cell builds: the crashed copy reads its signature
        (
            "fam_gen2 = FamGen()\nfam_flow2 = fam_gen2.flow('x', target_sizes=(4, 4))",
            "fam_gen2.flow() has no parameter 'target_sizes'; did you mean 'target_size'?",
        ),
        # handed on through **kwargs: the object that rejected the word names the property by its setters
        (
            "fam_fig3, fam_axes3 = plt.subplots(1, 2)\nfam_bars3 = fam_axes3[0].hist([1, 2, 2], bin=2)",
            "fam_axes3[0].hist() hands 'bin' on to Rectangle, which does not take it; did you mean 'bins'?",
        ),
        (
            "fam_fig4 = plt.figure()\nfam_line4 = plt.plot([1, 2], colour='red')",
            "plt.plot() hands 'colour' on to Line2D, which does not take it; did you mean 'color'?",
        ),
    ],
)
async def test_the_verdict_names_the_parameter_a_keyword_meant(
    prepared: TestKernel, cell: str, said: str
) -> None:
    """The crashed copy reads what the callee takes, and where a keyword was handed on, what the
    object that rejected it takes (the traceback records the path); no code of either runs. The
    squiggle's words say which was meant, before any fix is tried."""
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (
            await Pipeline(settings, link=link, dryrun=DryRunner(link, settings)).predict(cell)
        ).prediction
    assert prediction.crash and prediction.line == 1, prediction
    assert said in prediction.message, prediction.message


async def test_a_method_named_set_something_is_no_property(prepared: TestKernel) -> None:
    """``set_output(self, *, transform)`` is a method, not the setter of a property ``output``: a
    keyword near it is not offered as one (scikit-learn's error lists the parameters it has)."""
    cell = "fam_scaler2 = StandardScaler().set_params(outputs=1)"
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (
            await Pipeline(settings, link=link, dryrun=DryRunner(link, settings)).predict(cell)
        ).prediction
    assert prediction.crash and prediction.exception == "ValueError", prediction
    assert "did you mean 'output'" not in prediction.message, prediction.message
