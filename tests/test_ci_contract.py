"""CI runs what the README says: the README's test command is read from README.md by .ci/run itself,
the packages and setup hooks it installs are where the README and the team expect them, and the
shipped benchmark data is found without a checkout of shared data beside the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".ci"))

import readme_command  # noqa: E402


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    install, test = readme_command.quick_start_commands(_readme())
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # .ci/run takes the command from README.md (never a copy of it) and runs it as one shell command
    assert 'test_command="$(python3 .ci/readme_command.py test)"' in run
    assert 'bash -c "$test_command"' in run
    out = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "readme_command.py"), "test"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == test
    assert "python3 -m pytest" in test and "pip install" in test
    assert "crane-lsp check examples/" in install


def test_ci_fails_on_no_tests_and_propagates_exit_codes() -> None:
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert run.splitlines()[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in run
    assert "rc == 5" in run and 'exit "$rc"' in run
    assert 'python3 -m venv "$ci_tmp/venv"' in run and "mktemp -d" in run


def test_ci_hooks_exist_and_apt_packages_parse() -> None:
    lines = (REPO / ".ci" / "apt-packages").read_text(encoding="utf-8").splitlines()
    packages = [line.split("#", 1)[0].strip() for line in lines]
    packages = [p for p in packages if p]
    assert {"chromium", "neovim", "libkrb5-dev"} <= set(packages)
    assert all(" " not in p for p in packages)
    assert (REPO / ".ci" / "setup.d").is_dir()
    subprocess.run(["bash", "-n", str(REPO / ".ci" / "run")], check=True)
    for script in sorted((REPO / ".ci" / "setup.d").glob("*.sh")):
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_readme_names_the_shipped_data_not_a_folder_outside_the_project() -> None:
    from crane_lsp.bench.data import resolve_cases, shipped

    text = _readme()
    assert "bench ../shared" not in text
    assert "crane-lsp bench junobench --provider recorded:gpt-5 --setting both" in text
    assert (shipped("junobench") / "labels.csv").is_file()
    assert len(list(shipped("junoreplay").glob("*/buggy.ipynb"))) >= 29
    assert (shipped("junobench") / "README.md").is_file() and (shipped("junoreplay") / "README.md").is_file()
    assert resolve_cases("junobench") == shipped("junobench")


def test_shipped_data_is_package_data() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/junobench/**/*"' in pyproject and '"data/junoreplay/**/*"' in pyproject


def test_bench_names_resolve_from_any_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "crane_lsp.cli", "bench", "junobench", "--provider", "recorded:gpt-5",
         "--setting", "both", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "0.7613" in proc.stdout and "0.8063" in proc.stdout  # the paper's gpt-5 -RT / +RT accuracy
