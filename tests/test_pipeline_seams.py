"""The pipeline's seams: ``Run`` instead of side channels, one checks phase for both server paths,
typed command arguments, and a server that reads kernels through a Protocol (fakes where a real
kernel is not the point; every kernel test elsewhere keeps a real one)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from crane_lsp.analysis.parse import MAX_LINES
from crane_lsp.pipeline import Pipeline, Run
from crane_lsp.server.checkpass import run_checks_phase
from crane_lsp.server.command_args import AttachArgs, BadArguments, CellArgs, parse
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ColumnSummary, ObjectSummary, ProbeQuery, Snapshot
from tests.fake_kernels_server import NONE_HERE, REFUSED
from tests.server_client import SERVER_ENV, Notebook, end_session, has, start, wait_for, wait_status

FAKE_SERVER = [sys.executable, str(Path(__file__).with_name("fake_kernels_server.py"))]


class StateReader:
    """A kernel that answers every probe with one fixed state (the checks, not the probe, are tested)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snap = snapshot
        self.queries: list[ProbeQuery] = []

    async def snapshot(self, query: ProbeQuery, timeout: float | None = None) -> Snapshot:
        self.queries.append(query)
        return self.snap

    async def call(
        self, function: str, payload: dict[str, Any], timeout: float = 10.0, *, allow_busy: bool | None = None
    ) -> dict[str, Any]:
        raise AssertionError("the checks phase never calls the kernel beyond its probe")

    async def is_alive(self) -> bool:
        return True


def _frame_state() -> Snapshot:
    columns = [ColumnSummary(name=n, dtype="int64") for n in ("price", "rooms")]
    frame = ObjectSummary(kind="dataframe", type="pandas.core.frame.DataFrame", shape=[3, 2], columns=columns)
    return Snapshot(generation=4, variables={"df": frame})


async def _inline(fn: Any, *args: Any) -> Any:
    return fn(*args)


async def test_predict_returns_its_run_and_no_kernel_says_so() -> None:
    pipeline = Pipeline.from_settings(Settings())
    assert pipeline.dryrun is None and pipeline.llm is None  # no link: nothing to dry-run in
    broken = await pipeline.predict("x = (\n")
    assert isinstance(broken, Run) and broken.prediction.exception == "SyntaxError"
    assert broken.facts is not None and broken.facts.syntax_error and broken.snapshot is None
    alone = await pipeline.predict("df['prise']", layers={"checks"})
    assert not alone.prediction.crash and alone.snapshot is None
    assert "no kernel attached" in alone.prediction.notes


@pytest.mark.parametrize(
    ("cell", "certainty", "notes"),
    [
        ("x = 1\nprice = df['prise']\n", "certain", []),
        # an earlier line that may raise first: a Warning "if reached", on both paths alike
        ("total = df['rooms'].sum()\nprice = df['prise']\n", "predicted", ["line 1 may raise before line 2"]),
    ],
)
async def test_both_server_paths_run_the_same_checks_phase(
    cell: str, certainty: str, notes: list[str]
) -> None:
    reader = StateReader(_frame_state())
    pipeline = Pipeline.from_settings(Settings.model_validate({"dry_run": "off"}), reader)
    in_thread = await pipeline.predict(cell, executed=["df = make()"], layers={"checks"})
    in_worker = await run_checks_phase(_inline, pipeline, cell, ["df = make()"])
    assert in_thread.snapshot is reader.snap and in_worker.snapshot is reader.snap
    assert in_worker.facts is None  # the worker keeps the facts: nothing the size of the cell comes back
    found = in_thread.prediction
    assert (found.crash, found.exception, found.line, found.certainty) == (True, "KeyError", 1, certainty)
    assert [n[: len(w)] for n, w in zip(found.notes, notes, strict=True)] == notes
    ignore: dict[str, Any] = {"id": True, "source": {"latency_ms"}}
    assert in_worker.prediction.model_dump(exclude=ignore) == found.model_dump(exclude=ignore)
    assert reader.queries[0] == reader.queries[1]  # one probe query, built by the same step


@pytest.mark.parametrize("bug", ["", "price = df['prise']\n"])
async def test_a_long_cell_read_in_part_by_the_server_whole_by_predict(bug: str) -> None:
    """A cell past ``MAX_LINES``: the server's first read finds a crash before the cut and says where the
    checks stopped (the typo after the cut is its second read's); ``predict`` (the terminal doors) reads
    every line, so it reports the first crash wherever it is."""
    filler = "".join(f"x{i} = df['rooms'].sum() + {i}\n" for i in range(MAX_LINES + 99))
    cell = bug + filler + "late = df['prise']\n"
    settings = Settings.model_validate({"dry_run": "off"})
    pipeline = Pipeline.from_settings(settings, StateReader(_frame_state()))
    in_thread = await pipeline.predict(cell, layers={"checks"})
    in_worker = await run_checks_phase(_inline, pipeline, cell, [])
    total = len(cell.splitlines())
    found = in_worker.prediction
    assert found.crash == bool(bug) and (found.line == 0 if bug else found.line is None)
    assert f"the built-in checks stop at line {MAX_LINES + 1} of this {total}-line cell" in found.notes[0]
    whole = in_thread.prediction
    assert (whole.crash, whole.exception, whole.line) == (True, "KeyError", 0 if bug else total - 1)
    assert not any("stop at line" in note for note in whole.notes)


def test_one_pipeline_for_every_door() -> None:
    """``from_settings`` decides the dry run from the settings alone: on a kernel unless turned off."""
    from crane_lsp.dryrun import DryRunner

    reader = StateReader(_frame_state())
    assert isinstance(Pipeline.from_settings(Settings(), reader).dryrun, DryRunner)
    assert Pipeline.from_settings(Settings.model_validate({"dry_run": "off"}), reader).dryrun is None
    assert Pipeline.from_settings(Settings(), None).dryrun is None  # nothing to fork without a kernel


def test_command_arguments_in_both_forms() -> None:
    by_key = parse(CellArgs, ("file:///w/nb.ipynb", "cell-key", "prediction-id"))
    assert (by_key.uri, by_key.cell, by_key.line) == ("file:///w/nb.ipynb", "cell-key", 0)
    by_line = parse(CellArgs, [{"uri": "file:///w/s.py", "line": 7, "newerField": 1}])
    assert (by_line.uri, by_line.line, by_line.cell) == ("file:///w/s.py", 7, None)
    with pytest.raises(BadArguments, match="line"):
        parse(CellArgs, [{"uri": "file:///w/s.py", "line": "seven"}])
    attach = parse(AttachArgs, [{"notebookUri": "file:///w/nb.ipynb", "connectionFile": "/k.json"}])
    assert (attach.notebook_uri, attach.connection_file) == ("file:///w/nb.ipynb", "/k.json")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=FAKE_SERVER, server_env=SERVER_ENV))
async def client(lsp_client: LanguageClient) -> Any:
    lsp_client.statuses = await start(lsp_client, {"debounce": 50})  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


@pytest.mark.timeout(60)
async def test_a_server_without_kernels_checks_and_says_why(client: LanguageClient) -> None:
    nb = Notebook(client, [("import pandas as pd", 1), ("df['prise']", None), ("x = (", None)])
    nb.open()
    await wait_for(client, nb.cell_uris[2], has("SyntaxError"))  # the checks that need no kernel ran
    status = await wait_status(client.statuses, lambda s: s["notebookUri"] == nb.uri)  # type: ignore[attr-defined]
    assert status["kernel"] == "none" and status["message"] == NONE_HERE  # the fake's own words

    async def command(name: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
        return await asyncio.wait_for(client.workspace_execute_command_async(params), 20)

    rechecked = await command("crane.recheckCell", nb.cell_uris[1])
    assert rechecked["checked"] and not rechecked["prediction"]["crash"]
    assert "no kernel attached" in rechecked["prediction"]["notes"]  # never a silent "no crash found"
    verdict = await command("crane.cellVerdict", {"uri": nb.uri, "cell": nb.cell_uris[2]})
    assert verdict["exception"] == "SyntaxError" and verdict["blockRun"]

    bad = await command("crane.recheckCell", {"uri": nb.uri, "line": "two"})
    assert not bad["checked"] and "line" in bad["error"]
    refused = await command(
        "crane.attachKernel", {"notebookUri": nb.uri, "connectionFile": "/tmp/kernel-x.json"}
    )
    assert refused == {"attached": False, "error": f"{REFUSED} kernel-x.json"}
    missing = await command("crane.attachKernel", {"notebookUri": nb.uri})
    assert not missing["attached"] and "connectionFile" in missing["error"]
