"""Shared fixtures: a REAL ipykernel started through jupyter_client, driven synchronously by tests.

The code under test talks to the same kernel through its own (async) client, found by the
connection file, exactly as it would talk to a user's kernel.

Every test is also marked by what it costs (``kernel``, ``server``, ``browser``, ``editor``, ``llm_server``,
else ``unit``), inferred from its code and fixtures by tests/cost_marks.py, so that ``pytest -m unit`` is a
loop of seconds (CONTRIBUTING.md, "Tests"); a ``unit`` test that starts one of those fails.
"""

from __future__ import annotations

import os
import queue
import tempfile
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from crane_lsp.kernel.transport_zmq import START_ATTEMPTS
from tests import hang_guard
from tests.cost_marks import COSTS, CostGuardError, guarding, install_guard, item_costs, missing_libraries
from tests.jupyterlab_util import logs_for_failure
from tests.ports import free_port
from tests.process_stacks import children_of, python_stacks

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CRANE_SHARED", REPO.parent / "shared"))


def pytest_configure(config: pytest.Config) -> None:
    install_guard()
    hangs = hang_guard.start_run()
    if hangs is not None:
        config.stash[_HANGS] = hangs
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # pytest-xdist (optional, CONTRIBUTING.md): each worker's kernels keep their own files
        os.environ["JUPYTER_RUNTIME_DIR"] = tempfile.mkdtemp(prefix=f"crane-test-{worker}-runtime-")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The stacks of every test that hung past its timeout (hang_guard), so a CI log says where."""
    folder = config.stash.get(_HANGS, None)
    if folder is None:
        return
    for report in hang_guard.hung_reports(folder):
        terminalreporter.write_sep("=", "a test hung: every thread's stack")
        terminalreporter.write_line(report)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_HANGS, None)
    if folder is not None:
        hang_guard.end_run(folder)


_HANGS = pytest.StashKey[Path]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by cost (tests/cost_marks.py): explicit cost markers are kept, inferred ones added.

    An explicit ``unit`` marker overrules the inference (a test that only names costly programs, as
    data); the guard still holds it to that. A test whose code strings import an optional library
    that is not installed (torch, polars, tensorflow, ...: cost_marks.OPTIONAL_LIBRARIES) is skipped,
    saying which, instead of failing in the kernel; with the libraries installed nothing changes.
    """
    for item in items:
        missing = missing_libraries(item)
        if missing:
            why = f"needs {', '.join(missing)}, not installed (pip install -e '.[test]' has it)"
            item.add_marker(pytest.mark.skip(reason=why))
        if item.get_closest_marker("unit") is not None:
            continue
        explicit = {c for c in COSTS if item.get_closest_marker(c) is not None}
        inferred = item_costs(item)
        for cost in sorted(inferred - explicit):
            item.add_marker(cost)
        if not explicit and not inferred and item.get_closest_marker("live") is None:
            item.add_marker("unit")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """A ``unit`` test runs under the guard: starting one of the COSTS (a kernel, ...) fails it. Every
    test that hangs past its timeout (teardown included) ends its worker with its stacks (hang_guard)."""
    hang_guard.arm(item)
    item.stash[_STARTED_AT] = time.monotonic()
    try:
        if item.get_closest_marker("unit") is None:
            yield
            return
        with guarding(item.nodeid) as violations:
            item.stash[_VIOLATIONS] = violations
            yield
    finally:
        hang_guard.disarm()


_VIOLATIONS = pytest.StashKey[list[str]]()
_STARTED_AT = pytest.StashKey[float]()


@pytest.hookimpl(trylast=True)
def pytest_exception_interact() -> None:
    """A failed test (a timeout among them) still has a hard end for its teardown (hang_guard)."""
    hang_guard.rearm()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A guarded start fails the test even where the code under test swallowed the CostGuardError.
    A failed test that used a Jupyter server shows the end of its log (crane-lsp's lines are there)."""
    outcome = yield
    report = outcome.get_result()
    violations = item.stash.get(_VIOLATIONS, [])
    if violations and report.passed and call.when == "call":
        report.outcome = "failed"
        report.longrepr = f"{CostGuardError.__name__}: " + "; ".join(violations)
    if report.failed and (logs := logs_for_failure(item.stash.get(_STARTED_AT, 0.0))):
        report.sections.append((f"Jupyter server logs ({call.when})", logs))


class CellError(RuntimeError):
    def __init__(self, ename: str, evalue: str) -> None:
        super().__init__(f"{ename}: {evalue}")
        self.ename = ename
        self.evalue = evalue


@dataclass
class TestKernel:
    """A real kernel plus a blocking client, for setting up state and checking what really happens."""

    __test__ = False  # not a test class, despite the name

    manager: KernelManager
    client: BlockingKernelClient

    @property
    def connection_file(self) -> str:
        return str(self.manager.connection_file)

    def run(self, code: str, *, timeout: float = 120, allow_error: bool = False) -> dict[str, Any]:
        """Execute ``code`` as a user cell; raise CellError on an exception unless ``allow_error``."""
        content = self.interact(code, timeout=timeout, output_hook=lambda msg: None)["content"]
        if content["status"] == "error" and not allow_error:
            raise CellError(content["ename"], content["evalue"])
        return content

    def interact(
        self, code: str, *, timeout: float, output_hook: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """``execute_interactive``'s reply; a timeout says what the kernel process was doing then."""
        try:
            return self.client.execute_interactive(code, timeout=timeout, output_hook=output_hook)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc} ({timeout:g} s); {self.doing()}") from exc

    def eval(self, expr: str, *, timeout: float = 60) -> Any:
        """Value of ``expr`` in the user namespace (via user_expressions, leaving no trace)."""
        msg_id = self.client.execute("", silent=True, store_history=False, user_expressions={"v": expr})
        reply = self._reply(msg_id, timeout)
        value = reply["content"]["user_expressions"]["v"]
        if value["status"] != "ok":
            raise CellError(value["ename"], value["evalue"])
        return value["data"]["text/plain"]

    def _reply(self, msg_id: str, timeout: float) -> dict[str, Any]:
        while True:
            try:
                msg = self.client.get_shell_msg(timeout=timeout)
            except queue.Empty as exc:
                raise TimeoutError(f"kernel did not reply in {timeout:g} s; {self.doing()}") from exc
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def doing(self) -> str:
        """What the kernel process is doing, for a timeout's message: alive or not, and each
        thread's state and kernel wait channel (a hung kernel and a busy one read differently)."""
        if not self.manager.is_alive():
            process = getattr(self.manager.provisioner, "process", None)
            code = process.poll() if process is not None else None  # negative: the signal that ended it
            return f"the kernel process is dead (exit status {code})"
        pid = getattr(self.manager.provisioner, "pid", None)
        tasks = Path(f"/proc/{pid}/task")
        if pid is None or not tasks.is_dir():
            return "the kernel process is alive"
        threads = []
        for task in sorted(tasks.iterdir()):
            try:
                stat = (task / "stat").read_text()
                wchan = (task / "wchan").read_text() or "-"
            except OSError:
                continue
            name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
            threads.append(f"{name}:{state}:{wchan}")
        doing = f"alive, threads {', '.join(threads)}; children {children_of(pid) or 'none'}"
        return doing + python_stacks(pid)

    def reset(self) -> None:
        self.run("%reset -f")


def start_ready_kernel(
    cwd: str | Path | None = None, *, connection_file: str | None = None, timeout: float = 120
) -> tuple[KernelManager, BlockingKernelClient]:
    """A started kernel and its client, ready; started again on new ports when its process ends first.

    jupyter_client picks free ports from the ephemeral range and the kernel binds them a moment later;
    in CI an outgoing connection took one in between, and the kernel exited with "Address already in
    use". The tests' kernels take their ports from below that range (``tests.ports``), and start again
    should one still be taken.
    """
    where = {"connection_file": connection_file} if connection_file else {}
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    for attempt in range(1, START_ATTEMPTS + 1):
        ports = {f"{name}_port": free_port() for name in ("shell", "iopub", "stdin", "control", "hb")}
        km = KernelManager(kernel_name="python3", cache_ports=False, **ports, **where)
        km.start_kernel(cwd=str(cwd) if cwd else None, env=env)
        kc = km.blocking_client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=timeout)
        except BaseException:
            died = not km.is_alive()
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            if not died or attempt == START_ATTEMPTS:
                raise
            continue
        return km, kc
    raise AssertionError("unreachable")


def start_test_kernel(cwd: str | Path | None = None) -> TestKernel:
    return TestKernel(*start_ready_kernel(cwd))


def stop_test_kernel(k: TestKernel) -> None:
    k.client.stop_channels()
    k.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestKernel]:
    """One real kernel per test module (starting one costs about a second)."""
    k = start_test_kernel(tmp_path_factory.mktemp("kernel-cwd"))
    yield k
    stop_test_kernel(k)


@pytest.fixture
def fresh_kernel(tmp_path: Path) -> Iterator[TestKernel]:
    """A kernel of the test's own, for tests that restart, kill or busy it."""
    k = start_test_kernel(tmp_path)
    yield k
    stop_test_kernel(k)
