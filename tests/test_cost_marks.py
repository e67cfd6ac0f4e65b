"""The cost markers (tests/cost_marks.py): what the inference reads, and the guard of the unit subset.

Synthetic test modules are written beside nothing but read as if they were in tests/, so the rules are
tried on code whose cost is known: a seed in the test, one through a same-module helper, one through a
tests/ helper module, crane's CLI in-process, an argv string, a class method, and a pure test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cost_marks import (
    COSTS,
    CostGuardError,
    _strings,
    costs_of_definition,
    guarding,
    imported_libraries,
    program_cost,
)

pytestmark = pytest.mark.unit  # it names costly programs only as data (argvs, synthetic sources)

SOURCE = """
from tests.jail_util import jail_kernels
from tests.server_client import SERVER_COMMAND
from crane_lsp.cli import main

CONFIG = {"server_command": SERVER_COMMAND}


def _helper():
    return jail_kernels("root")


def test_pure():
    assert 1 + 1 == 2


def test_through_a_helper():
    _helper()


def test_through_a_constant():
    assert CONFIG


def test_the_cli_in_process():
    main(["check", "nb.ipynb"])


def test_an_editor(tmp_path):
    import subprocess
    subprocess.run(["nvim", "--headless"])


class TestGroup:
    def test_a_browser(self):
        from playwright.sync_api import sync_playwright
        sync_playwright()

    def test_plain(self):
        assert True
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("costs") / "test_synthetic.py"
    path.write_text(textwrap.dedent(SOURCE), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("qualname", "costs"),
    [
        ("test_pure", set()),
        ("test_through_a_helper", {"kernel"}),  # jail_util.jail_kernels -> start_test_kernel
        ("test_through_a_constant", {"server"}),
        ("test_the_cli_in_process", {"kernel"}),
        ("test_an_editor", {"editor"}),
        ("TestGroup.test_a_browser", {"browser"}),
        ("TestGroup.test_plain", set()),
    ],
)
def test_inferred_costs(module: Path, qualname: str, costs: set[str]) -> None:
    assert set(costs_of_definition(module, qualname)) == costs


def test_the_shared_kernel_fixture_costs_a_kernel() -> None:
    assert costs_of_definition(Path(__file__).parent / "conftest.py", "kernel") == {"kernel"}


def test_this_module_is_unit_and_every_cost_is_registered(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None
    assert not any(request.node.get_closest_marker(c) for c in COSTS)
    registered = {line.split(":")[0].strip() for line in request.config.getini("markers")}
    assert {"unit", *COSTS} <= registered


@pytest.mark.parametrize(
    ("argv", "cost"),
    [
        ([sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"], "kernel"),
        ([sys.executable, "-m", "crane_lsp.cli", "serve"], "server"),
        (["sh", "-c", 'exec "$@"', "sh", sys.executable, "-m", "crane_lsp.cli", "serve"], "server"),
        (["/usr/bin/chromium", "--headless"], "browser"),
        (["node", "cli.js", "run-driver"], "browser"),
        (["nvim", "--headless", "--clean"], "editor"),
        ([sys.executable, "-m", "llama_cpp.server", "--model", "m.gguf"], "llm_server"),
        ([sys.executable, "-m", "jupyter", "lab"], "kernel"),
        (["bash", "-n", ".ci/setup.d/50-code-server.sh"], None),
        ([sys.executable, "-c", "import crane_lsp"], None),
        ("git status", None),
    ],
)
def test_program_cost_from_argv(argv: list[str] | str, cost: str | None) -> None:
    assert program_cost(argv) == cost


def test_the_guard_stops_a_kernel_and_lets_a_cheap_program_run() -> None:
    with guarding("a unit test") as violations:
        with pytest.raises(CostGuardError, match="a unit test is marked `unit` but starts a kernel"):
            subprocess.Popen([sys.executable, "-m", "ipykernel_launcher", "--version"])
        done = subprocess.run(
            [sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True, check=True
        )
    assert done.stdout.strip() == "42"
    assert len(violations) == 1 and "ipykernel_launcher" in violations[0]


@pytest.mark.parametrize(
    ("code", "libraries"),
    [
        ("import torch, torch.nn as nn\nt = torch.ones(2)\n", {"torch"}),
        ("import numpy as np, pandas as pd, tensorflow as tf, keras\n", {"tensorflow", "keras"}),
        ("from sklearn.linear_model import LogisticRegression\n", {"sklearn"}),
        ("import polars as pl\nx = pl.DataFrame(\n", {"polars"}),  # a fragment: read line by line
        ("import numpy as np\nimport pandas as pd\n", set()),  # the core: never skipped
        ("s = 'import torch'\n", set()),  # text inside a string is not an import
    ],
)
def test_optional_libraries_a_code_string_imports(code: str, libraries: set[str]) -> None:
    assert imported_libraries(code) == libraries


def test_a_notebook_parameter_is_read_for_its_imports() -> None:
    code = "\n".join(_strings("torch_classifier/classifier.ipynb"))
    assert "torch" in imported_libraries(code)
