"""``crane-lsp inspect`` end to end: real notebook on disk, real fresh kernel, real probe, real output."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from crane_lsp import cli
from crane_lsp.snapshot import Snapshot
from tests.conftest import TestKernel
from tests.ports import free_port

CELLS = [
    "import pandas as pd\nimport numpy as np",
    "df = pd.read_csv('data.csv')",
    "raise ValueError('setup went wrong')",
    "from sklearn.linear_model import LogisticRegression\n"
    "model = LogisticRegression().fit(df[['a', 'b']], df['y'])",
    "pred = model.predict(df[['a', 'b', 'c']])\nprint(secret_name)",
]


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    rows = ["a,b,c,y,name"] + [f"{i},{i * 2},{i % 3},{i % 2},alice-private-{i}" for i in range(12)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A notebook")]
    for i, src in enumerate(CELLS):
        cell = nbformat.v4.new_code_cell(src)
        cell.execution_count = i + 1 if i < len(CELLS) - 1 else None
        nb.cells.append(cell)
    path = tmp_path / "analysis.ipynb"
    nbformat.write(nb, path)
    return path


def test_inspect_last_cell_table_and_prompt(
    notebook: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "220")
    assert cli.main(["inspect", str(notebook)]) == 0
    out, err = capsys.readouterr()
    assert "target: code cell 5" in out
    assert "what the kernel holds for this cell" in out
    assert "sklearn.linear_model._logistic.LogisticRegression" in out
    assert "n_features_in_ 2" in out  # the fitted model, as the prompt carries it
    assert "not defined in the kernel: secret_name" in out
    assert "prompt text" in out and "alice-private" in out
    # the failing setup cell is reported, and replay went on (model exists)
    assert "code cell 3 [In 3] raised ValueError on line 1: setup went wrong" in err


def test_inspect_json_for_a_chosen_cell(notebook: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli.main(["inspect", str(notebook), "--cell", "4", "--json", "--max-columns", "2", "--privacy"]) == 0
    )
    out, _ = capsys.readouterr()
    snap = Snapshot.model_validate(json.loads(out))
    df = snap.variables["df"]
    assert df.kind == "dataframe" and df.shape == [12, 5]
    assert [c.name for c in df.columns or []] == ["a", "b", "c", "y", "name"]
    assert "model" not in snap.variables  # cell 4 defines it; only what it reads is probed
    assert "alice-private" not in out  # privacy: no example values


def test_inspect_existing_kernel(
    kernel: TestKernel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel.run("import numpy as np\nlive_arr = np.ones((4, 7), dtype='float32')")
    script = tmp_path / "live.py"
    script.write_text("# %%\nimport numpy as np\n# %%\nlive_arr.sum(axis=2)\n")
    assert cli.main(["inspect", str(script), "--existing", kernel.connection_file, "--json"]) == 0
    snap = Snapshot.model_validate(json.loads(capsys.readouterr().out))
    assert snap.variables["live_arr"].shape == [4, 7]
    assert snap.variables["live_arr"].dtype == "float32"


def test_inspect_clear_errors(tmp_path: Path, notebook: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["inspect", str(tmp_path / "missing.ipynb")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.ipynb").write_text("{ this is not json")
    assert cli.main(["inspect", str(tmp_path / "bad.ipynb")]) == 2
    assert "not a readable Jupyter notebook" in capsys.readouterr().err
    assert cli.main(["inspect", str(notebook), "--cell", "99"]) == 2
    assert "cell 99 does not exist" in capsys.readouterr().err
    dead = tmp_path / "kernel-dead.json"
    ports = {f"{n}_port": free_port() for n in ("shell", "iopub", "stdin", "control", "hb")}
    dead.write_text(json.dumps({**ports, "ip": "127.0.0.1", "key": "k", "transport": "tcp"}))
    assert cli.main(["inspect", str(notebook), "--existing", str(dead)]) == 2
    assert "not running" in capsys.readouterr().err


def test_sanitize_keeps_lines() -> None:
    from crane_lsp.kernel.replay import sanitize

    src = "!pip install -q foo\nx = 1\n    %pip install bar\n!ls data\nif x:\n    !wget http://e/x.csv"
    out = sanitize(src).split("\n")
    assert len(out) == 6
    assert out[0].startswith("pass") and out[2].startswith("    pass") and out[5].startswith("    pass")
    assert out[1] == "x = 1" and out[3] == "!ls data"


async def test_replay_follows_execution_counts(tmp_path: Path) -> None:
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.kernel.replay import ReplayProgress, replay, start_and_replay
    from crane_lsp.notebook import Cell, Notebook
    from crane_lsp.snapshot import ProbeQuery

    cells = [
        Cell("a = 1", execution_count=1),
        Cell("a = a * 10", execution_count=3),
        Cell("b = a + 1", execution_count=2),  # ran before the cell above it: b == 2, not 11
        Cell("!pip install nothing-at-all\nc = open('here.txt').read()", execution_count=5),
        Cell("d = 1 / 0", execution_count=4),
        Cell("print(a, b, c)"),
    ]
    (tmp_path / "here.txt").write_text("cwd ok")
    nb = Notebook(cells=cells, path=tmp_path / "nb.ipynb")
    seen: list[ReplayProgress] = []
    link, report = await start_and_replay(nb, 5, on_progress=seen.append)
    try:
        assert report.order == [0, 2, 1, 4, 3]
        assert [r.index for r in report.runs] == [0, 2, 1, 4, 3]
        assert [f.index for f in report.failures] == [4] and not report.stopped_early
        assert report.failures[0].describe_failure() == (
            "code cell 5 [In 4] raised ZeroDivisionError on line 1: division by zero"
        )
        assert [(p.done, p.result is not None) for p in seen][:2] == [(0, False), (1, True)] and len(
            seen
        ) == 10
        snap = await link.snapshot(ProbeQuery(names=["a", "b", "c"]))
        assert snap.variables["a"].value == "10" and snap.variables["b"].value == "2"
        assert snap.variables["c"].value is not None and "cwd ok" in snap.variables["c"].value
        fresh = await KernelLink.start(tmp_path, quiet=True)
        try:
            stopped = await replay(fresh, nb, 5, stop_on_error=True)
            assert stopped.stopped_early and [r.index for r in stopped.runs] == [0, 2, 1, 4]
        finally:
            await fresh.close()
    finally:
        await link.close()


def test_inspect_reads_every_line_of_a_long_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 6,000-line cell is read whole: a name its last line reads is probed (here: undefined), and no note
    says the reading stopped."""
    nb = nbformat.v4.new_notebook()
    body = "".join(f"x{i} = x{i - 1} + 1\n" for i in range(1, 5999)) + "y = late_undefined_name + x5998\n"
    nb.cells = [nbformat.v4.new_code_cell("x0 = 1"), nbformat.v4.new_code_cell(body)]
    path = tmp_path / "long.ipynb"
    nbformat.write(nb, path)
    assert cli.main(["inspect", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "late_undefined_name" in out
    assert "stop at line" not in err and "stop at line" not in out
