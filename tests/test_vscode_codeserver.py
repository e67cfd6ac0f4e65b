"""crane in a real VS Code, as a user sees it: code-server (VS Code 1.139 in the browser) in headless
Debian chromium, driven by Playwright.

The crane ``.vsix`` (``npm run package``) is installed with ``code-server --install-extension`` into a
private user-data and extensions folder. A real ipykernel runs outside VS Code (jupyter_client, its
connection file in a temporary folder, not in Jupyter's runtime dir); the User settings give crane its
interpreter (``crane.server.pythonPath``) and that kernel (``crane.connectionFile``). No Jupyter
extension is installed, so VS Code's built-in notebook editor cannot run cells: the state comes from
the external kernel, where the test ran the setup code. code-server is a *remote* window, where
VS Code ignores machine-scoped settings from the User settings: the squiggle only appears when the
extension's settings apply there.

One code-server, one page, in order: notebook squiggle, hover and Quick Fix menu (page load ->
squiggle is printed), the fix clearing it (edit -> cleared is printed) and a new bug bringing it
back, "crane: Re-check cell" from the command palette, the ``# %%`` script, "crane: Attach kernel from
connection file…" with VS Code's file dialog, the status-bar item, and the server's exit once its
window is closed. ``-s`` shows the delays; they are also written to ``vscode-timings.json`` in the
test's temporary folder. Screenshot: vscode.png (docs/img with CRANE_UPDATE_SCREENSHOTS=1).

Needs ``code-server`` (``.ci/setup.d/50-code-server.sh``), chromium and Playwright; without them the
test is skipped, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser_util import CHROMIUM, CHROMIUM_ARGS, screenshot_dir
from tests.conftest import start_ready_kernel
from tests.jupyterlab_util import KERNEL_READY_S
from tests.ports import free_port

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
CLIENT = REPO / "vscode-client"
VSIX = CLIENT / "crane-lsp-0.1.0.vsix"
SCREENSHOTS = screenshot_dir()
#: seconds code-server keeps a closed window's extension host for a reconnect (default: 3 hours)
GRACE_S = 5
#: where a timed-out wait leaves its screenshot (default: the test's temporary folder)
ARTIFACTS = os.environ.get("CRANE_VSCODE_ARTIFACTS")
SETUP = "import pandas as pd\ndf = pd.DataFrame({'price': [1.5, 2.0], 'qty': [3, 4]})"
BUGGY = "total = df['prise'].sum()"
FIXED = "total = df['price'].sum()"
NEW_BUG = "total = df['tax'].sum()"
SCRIPT = "# %%\nimport pandas as pd\n\n# %%\nrows = len(df)\nprint(df['weight'].max())\n"
USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": True,
    "telemetry.telemetryLevel": "off",
    "security.workspace.trust.enabled": False,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "remote.autoForwardPorts": False,
    "crane.debounce": 200,
    "crane.runGuard": True,
}


#: the text under each visible squiggle: its box over the (monospaced) text of the line it is on
SQUIGGLES_JS = r"""() => {
  const shown = (e) => e.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
  const out = [];
  for (const mark of document.querySelectorAll('.squiggly-error')) {
    const b = mark.getBoundingClientRect();
    if (!b.width || !shown(mark)) continue;
    const middle = b.top + b.height / 2;
    for (const line of document.querySelectorAll('.view-line')) {
      const span = line.firstElementChild;
      if (!span || !shown(line)) continue;
      const t = span.getBoundingClientRect();
      if (!t.width || middle < t.top || middle > t.bottom) continue;
      const text = line.textContent.replace(/\u00a0/g, ' ');
      const char = t.width / Math.max(text.length, 1);
      const start = Math.round((b.left - t.left) / char);
      out.push(text.slice(start, start + Math.round(b.width / char)));
    }
  }
  return out;
}"""


def unavailable(why: str) -> None:
    """Skip on a developer machine without the tools; in CI the tools are part of the job."""
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI installs it: .ci/setup.d/50-code-server.sh, .ci/apt-packages)")
    pytest.skip(why)


def code_server() -> str:
    found = os.environ.get("CRANE_CODE_SERVER") or shutil.which("code-server")
    if not found:
        unavailable("code-server is not installed")
    return str(found)


def build_vsix() -> Path:
    """The packaged extension; built again when a source file is newer (the README's command builds it)."""
    sources = [CLIENT / "package.json", *CLIENT.joinpath("src").glob("*.ts")]
    if not VSIX.exists() or VSIX.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        if not (CLIENT / "node_modules").exists():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True)
        subprocess.run(["npm", "run", "package"], cwd=CLIENT, check=True, capture_output=True)
    return VSIX


def write_notebook(path: Path) -> None:
    """The setup cell shows as run (count 1), as after running it; the target cell has not run."""
    cell = {"cell_type": "code", "metadata": {}, "outputs": []}
    cells = [
        {**cell, "id": "setup", "execution_count": 1, "source": SETUP},
        {**cell, "id": "target", "execution_count": None, "source": BUGGY},
    ]
    meta = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))


def crane_servers(root_pid: int) -> list[Any]:
    """The crane servers started under code-server (its extension hosts' children)."""
    import psutil

    try:
        children = psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for proc in children:
        try:
            cmdline = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "crane_lsp.cli" in cmdline and "serve" in cmdline:
            found.append(proc)
    return found


def extension_host_ready(user_data: Path) -> bool:
    """The remote extension host has started (a notebook opened earlier would show as JSON text)."""
    return any(
        "Eager extensions activated" in log.read_text(errors="replace")
        for log in user_data.glob("logs/*/exthost*/remoteexthost.log")
    )


def alive(proc: Any) -> bool:
    import psutil

    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@dataclass
class Kernel:
    manager: Any
    client: Any

    @property
    def connection_file(self) -> str:
        return str(self.manager.connection_file)

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def run(self, code: str, *, silent: bool = False) -> None:
        if silent:  # no execution count, no execute_input: no editor or language server sees it ran
            msg_id = self.client.execute(code, silent=True, store_history=False)
            while True:
                reply = self.client.get_shell_msg(timeout=60)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        else:
            reply = self.client.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]


@dataclass
class Workbench:
    """The page, and the gestures the test needs."""

    page: Any
    server: subprocess.Popen[bytes]
    folder: Path
    started: float  # time.monotonic() just before the page was requested
    timings: dict[str, float] = field(default_factory=dict)

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float = 60.0) -> float:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.page.screenshot(path=str(ARTIFACTS or self.folder.parent) + "/timeout.png")
                raise AssertionError(
                    f"timed out after {timeout:g} s waiting for {what}; crane: {self.status()!r}"
                )
            time.sleep(0.02)
        return time.monotonic()

    def squiggles(self) -> list[str]:
        """Texts under the visible error squiggles (of the editor shown: a notebook's cells, or a
        file), read in one go in the page so that a squiggle going away cannot race the reading."""
        return list(self.page.evaluate(SQUIGGLES_JS))

    def problems(self) -> str:
        """The status bar's Problems count, e.g. "Errors: 1" or "No Problems"."""
        return str(self.page.locator("[id='status.problems']").get_attribute("aria-label") or "")

    def status(self) -> str:
        item = self.page.locator("[id='crane-lsp.crane-lsp.crane.status']")
        return str(item.get_attribute("aria-label") or "") if item.count() else ""

    def open_file(self, name: str, ready: str) -> None:
        """Opens ``name`` from the Explorer and waits for its editor (selector ``ready``)."""
        self.page.locator(".explorer-folders-view .monaco-list-row", has_text=name).first.click()
        self.page.locator(".tabs-container .tab.active", has_text=name).wait_for(timeout=30_000)
        self.page.locator(f"{ready}:visible").first.wait_for(timeout=60_000)

    def cell_editor(self, index: int) -> Any:
        return self.page.locator(".notebookOverlay .cell-editor-container .monaco-editor:visible").nth(index)

    def edit_cell(self, index: int, before: str, old: str, new: str) -> float:
        """In cell ``index`` (one line, text ``before``), type ``new`` over the first ``old``, as a
        user would: the squiggle's range survives an edit inside it, so it stays until the server
        sends new diagnostics. Returns the time of the last keystroke."""
        self.cell_editor(index).locator(".view-lines").click()
        keys = self.page.keyboard
        keys.press("Home")
        keys.press("Home")  # the first Home may stop at the indentation
        for _ in range(before.index(old)):
            keys.press("ArrowRight")
        for _ in range(len(old)):
            keys.press("Shift+ArrowRight")
        keys.type(new, delay=10)
        typed = time.monotonic()
        expected = before.replace(old, new, 1)
        self.wait(lambda: self.cell_text(index) == expected, f"cell {index} to read {expected!r}", timeout=10)
        return typed

    def cell_text(self, index: int) -> str:
        return str(self.cell_editor(index).locator(".view-lines").inner_text()).replace("\u00a0", " ").strip()

    def palette(self, command: str) -> None:
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=10_000)
        box.fill(f">{command}")
        self.page.locator(".quick-input-list .monaco-list-row", has_text=command).first.click()

    def hover_text(self) -> str:
        box = self.page.locator(".squiggly-error:visible").first.bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2  # the text the squiggle is under
        self.page.mouse.move(x - 2, y)
        self.page.mouse.move(x, y)
        hover = self.page.locator(".monaco-hover:visible").first
        self.wait(lambda: hover.count() and "crane" in str(hover.inner_text()), "crane's hover", timeout=15)
        return str(hover.inner_text())

    def quick_fixes(self) -> list[str]:
        """The Quick Fix menu (Ctrl+.) at the first squiggle: its entries, then closes it. On a loaded
        machine the first Ctrl+. may find no actions yet (VS Code then shows none and never asks
        again): the gesture is repeated, as a user would, until crane's entries show."""
        menu = self.page.locator(".action-widget:visible")

        def opened() -> bool:
            # a squiggle is briefly absent while the server publishes the cell again (with its
            # verified fixes): asked again, not failed
            squiggle = self.page.locator(".squiggly-error:visible")
            box = squiggle.first.bounding_box() if squiggle.count() else None
            if box is None:
                time.sleep(0.2)
                return False
            self.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            self.page.keyboard.press("Control+Period")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if menu.count() and "crane" in str(menu.inner_text()):
                    return True
                time.sleep(0.1)
            self.page.keyboard.press("Escape")
            return False

        self.wait(opened, "crane's code actions", timeout=30)
        entries = [str(t).strip() for t in menu.locator(".action-label, .title").all_inner_texts()]
        if not entries:
            entries = [line.strip() for line in str(menu.inner_text()).splitlines()]
        self.page.keyboard.press("Escape")
        menu.wait_for(state="hidden", timeout=10_000)
        return entries

    def pick_file(self, title: str, path: Path) -> None:
        """Answers the open dialog titled ``title``: in a remote window VS Code's own, a quick input
        that starts at the folder it was given and takes a typed path."""
        dialog = self.page.locator(".quick-input-widget:visible", has_text=title)
        dialog.wait_for(timeout=15_000)
        box = dialog.locator("input").first
        self.wait(lambda: box.input_value().endswith("/"), "the dialog to show its folder", timeout=15)

        def typed() -> bool:  # the dialog may set its folder again once it has listed it
            box.fill(str(path))
            self.page.wait_for_timeout(500)
            return bool(box.input_value() == str(path))

        self.wait(typed, "the typed path to stay in the dialog", timeout=20)
        self.page.keyboard.press("Enter")
        dialog.wait_for(state="hidden", timeout=15_000)


def start_kernel(folder: Path, setup: str) -> Kernel:
    # a ceiling: a cold first start is slow
    manager, client = start_ready_kernel(
        folder, connection_file=str(folder / f"kernel-{folder.name}.json"), timeout=KERNEL_READY_S
    )
    k = Kernel(manager, client)
    try:
        k.run(setup)
    except BaseException:
        k.stop()
        raise
    return k


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """The kernel of crane.connectionFile, outside VS Code and outside Jupyter's runtime dir."""
    k = start_kernel(tmp_path_factory.mktemp("kernel-setting"), SETUP)
    yield k
    k.stop()


def start_code_server(
    binary: str, base: Path, settings: dict[str, Any]
) -> tuple[subprocess.Popen[bytes], int]:
    """code-server with the .vsix installed, private folders, User settings, on a free local port."""
    user_data, extensions, folder, runtime = (
        base / n for n in ("user-data", "extensions", "work", "runtime")
    )
    for d in (user_data / "User", extensions, folder, runtime):
        d.mkdir(parents=True)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)}  # discovery finds no kernel there
    dirs = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    (base / "config.yaml").write_text("")  # else code-server writes ~/.config/code-server/config.yaml
    installed = subprocess.run(
        [binary, "--config", str(base / "config.yaml"), *dirs, "--install-extension", str(build_vsix())],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert installed.returncode == 0 and "successfully installed" in installed.stdout, installed
    (user_data / "User" / "settings.json").write_text(json.dumps({**USER_SETTINGS, **settings}, indent=2))
    write_notebook(folder / "analysis.ipynb")
    (folder / "report.py").write_text(SCRIPT)
    port = free_port()
    with (base / "code-server.log").open("wb") as log:
        server = subprocess.Popen(
            [
                binary,
                "--config",
                str(base / "config.yaml"),
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{port}",
                *dirs,
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--reconnection-grace-time",
                str(GRACE_S),
                str(folder),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).close()
            return server, port
        except OSError as exc:
            if server.poll() is not None or time.monotonic() > deadline:
                stop_code_server(server)
                log_text = (base / "code-server.log").read_text()
                raise AssertionError(f"code-server did not start: {log_text}") from exc
            time.sleep(0.2)


def stop_code_server(server: subprocess.Popen[bytes]) -> None:
    """Ends code-server and everything it started (its own session: extension hosts, crane servers)."""
    try:
        os.killpg(server.pid, 15)
        server.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)
        server.wait(5)
    except ProcessLookupError:
        pass


@contextlib.contextmanager
def open_workbench(base: Path, settings: dict[str, Any]) -> Iterator[Workbench]:
    """code-server with these User settings and a page on its workbench, the extension host ready;
    its timings printed and written to ``vscode-timings.json`` when it closes."""
    binary = code_server()
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is missing")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (the test extra has it)")
    server, port = start_code_server(binary, base, settings)
    timings: dict[str, float] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_context(viewport={"width": 1400, "height": 860}).new_page()
                bench = Workbench(page, server, base / "work", time.monotonic(), timings)
                page.goto(f"http://127.0.0.1:{port}/?folder={bench.folder}", wait_until="domcontentloaded")
                explorer = page.locator(".explorer-folders-view .monaco-list-row", has_text="analysis.ipynb")
                explorer.wait_for(timeout=90_000)
                timings["page_load_to_workbench_s"] = time.monotonic() - bench.started
                bench.wait(
                    lambda: extension_host_ready(base / "user-data"), "the extension host", timeout=120
                )
                timings["page_load_to_extension_host_s"] = time.monotonic() - bench.started
                yield bench
            finally:
                browser.close()
    finally:
        stop_code_server(server)
        rounded = {k: round(v, 3) for k, v in timings.items()}
        (base / "vscode-timings.json").write_text(json.dumps(rounded, indent=2))
        print(f"\nVS Code timings (s): {rounded}")


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory, kernel: Kernel) -> Iterator[Workbench]:
    settings = {"crane.server.pythonPath": sys.executable, "crane.connectionFile": kernel.connection_file}
    with open_workbench(tmp_path_factory.mktemp("vscode"), settings) as bench:
        yield bench


def test_notebook_squiggle_hover_fix_and_new_bug(workbench: Workbench) -> None:
    bench, page = workbench, workbench.page
    bench.open_file("analysis.ipynb", ".notebookOverlay .cell-editor-container .view-line")
    opened = time.monotonic()
    seen = bench.wait(lambda: bench.squiggles(), "the squiggle on the target cell", timeout=120)
    bench.timings["page_load_to_squiggle_s"] = seen - bench.started
    bench.timings["notebook_open_to_squiggle_s"] = seen - opened
    print(f"\npage load -> squiggle: {seen - bench.started:.1f} s (notebook open -> {seen - opened:.1f} s)")
    assert bench.squiggles() in (["'prise'"], ["df['prise']"]), bench.squiggles()
    assert "Kernel attached" in bench.status(), bench.status()

    hover = bench.hover_text()
    assert "KeyError" in hover and "prise" in hover and "did you mean 'price'" in hover, hover
    assert "cell 1" in hover, "the hover names the cell that assigned df"
    page.wait_for_timeout(500)  # the hover fades in
    page.screenshot(path=str(SCREENSHOTS / "vscode.png"))
    page.mouse.move(5, 5)

    # the fix is dry-run in the jail after the squiggle is published: the Quick Fix then says so
    fixes: list[str] = []

    def verified() -> bool:
        time.sleep(0.3)
        fixes[:] = bench.quick_fixes()
        return any(f.startswith("Use 'price'") and "(runs clean in a dry run)" in f for f in fixes)

    bench.wait(verified, "the verified Quick Fix 'Use 'price' (runs clean in a dry run)'", timeout=60)
    assert "crane: Ignore this finding" in fixes, fixes

    assert bench.problems() == "Errors: 1", bench.problems()
    typed = bench.edit_cell(1, BUGGY, "s", "c")  # 'prise' -> 'price'
    # the Problems count changes only when the server publishes (an editor decoration may vanish sooner)
    cleared = bench.wait(
        lambda: bench.problems() == "No Problems" and not bench.squiggles(), "the fix to clear the squiggle"
    )
    bench.timings["edit_to_cleared_s"] = cleared - typed
    print(f"edit -> cleared: {cleared - typed:.2f} s")

    typed = bench.edit_cell(1, FIXED, "price", "tax")
    # each keystroke may be checked on its way ('t, 'ta): the squiggle that counts is on 'tax'
    back = bench.wait(
        lambda: bench.squiggles() in (["'tax'"], ["df['tax']"]) and bench.problems() == "Errors: 1",
        "a new bug to bring a squiggle back",
    )
    bench.timings["edit_to_new_squiggle_s"] = back - typed
    print(f"edit -> new squiggle: {back - typed:.2f} s")


def test_recheck_cell_from_the_command_palette(workbench: Workbench, kernel: Kernel) -> None:
    bench = workbench
    # the kernel gains the column silently: nothing tells the editor or the server it changed
    kernel.run("df['tax'] = 0.2", silent=True)
    time.sleep(1.5)
    assert bench.squiggles() in (["'tax'"], ["df['tax']"]), "the squiggle stays until something re-checks"
    bench.cell_editor(1).locator(".view-lines").click()
    bench.palette("crane: Re-check cell")
    bench.wait(
        lambda: not bench.squiggles() and bench.problems() == "No Problems",
        "Re-check cell to see the kernel's new column",
    )


def modal(bench: Workbench) -> Any:
    return bench.page.locator(".monaco-dialog-box:visible")


def execution_attempt(bench: Workbench) -> Any:
    """What VS Code shows when a cell is really run here: no kernel extension is installed, so the
    run opens the kernel picker (a quick input) instead of executing."""
    return bench.page.locator(".quick-input-widget:visible")


def dismiss_execution_attempt(bench: Workbench) -> str:
    picker = execution_attempt(bench)
    picker.first.wait_for(timeout=15_000)
    text = str(picker.first.inner_text())
    bench.page.keyboard.press("Escape")
    picker.first.wait_for(state="hidden", timeout=10_000)
    return text


def test_run_guard_runs_with_the_verified_fix(workbench: Workbench) -> None:
    """A crash whose fix ran clean in a dry run: the guard's modal shows the fix's diff and offers
    "Run with the fix", which edits the cell first, then runs it (issue 34)."""
    bench, page = workbench, workbench.page
    if not bench.cell_editor(1).count():  # run alone: the notebook is not open yet
        bench.open_file("analysis.ipynb", ".notebookOverlay .cell-editor-container .view-line")
    before = bench.cell_text(1)  # 'tax' after the tests above, the notebook's own 'prise' alone
    old = "tax" if "'tax'" in before else "prise"
    if old != "prise":
        bench.edit_cell(1, before, old, "prise")
    bench.wait(lambda: bench.squiggles() in (["'prise'"], ["df['prise']"]), "the squiggle on 'prise'")

    def verified() -> bool:  # the guard asks for the verdict at the key: let the fix be verified first
        time.sleep(0.3)
        return any("(runs clean in a dry run)" in f for f in bench.quick_fixes())

    bench.wait(verified, "the verified Quick Fix", timeout=60)
    bench.cell_editor(1).locator(".view-lines").click()
    page.keyboard.press("Shift+Enter")
    dialog = modal(bench)
    dialog.wait_for(timeout=15_000)
    text = str(dialog.inner_text())
    assert "KeyError" in text and "Use 'price'" in text and "df['price']" in text, text
    dialog.locator(".monaco-button", has_text="Run with the fix").first.click()
    print(f"\nrun with the fix -> {dismiss_execution_attempt(bench)!r}")
    assert bench.cell_text(1) == "total = df['price'].sum()", "the fix is in the cell before it runs"
    if old != "prise":  # leave the cell as the next test expects it
        bench.edit_cell(1, "total = df['price'].sum()", "price", old)
        bench.wait(lambda: not bench.squiggles(), "the notebook's squiggle to clear")


def test_run_guard_asks_before_running_a_cell_that_will_crash(workbench: Workbench) -> None:
    """crane.runGuard on (the User settings): Shift+Enter on the cell with a certain crash asks
    first; Cancel runs nothing, "Show" opens the problem at its line, "Run anyway" runs it; a cell
    crane has no verdict for runs at once; with the setting off, nothing is asked."""
    bench, page = workbench, workbench.page
    bench.edit_cell(1, "total = df['tax'].sum()", "tax", "Region")
    bench.wait(lambda: bench.squiggles() in (["'Region'"], ["df['Region']"]), "the squiggle on 'Region'")
    bench.cell_editor(1).locator(".view-lines").click()

    page.keyboard.press("Shift+Enter")
    dialog = modal(bench)
    dialog.wait_for(timeout=15_000)
    text = str(dialog.inner_text())
    assert "crane: this cell raises KeyError at line 1" in text and "Region" in text, text
    assert "Run anyway?" in text, text
    page.screenshot(path=str(bench.folder.parent / "vscode-run-guard.png"))
    page.keyboard.press("Escape")  # Cancel: nothing runs
    dialog.wait_for(state="hidden", timeout=10_000)
    page.wait_for_timeout(1000)
    assert execution_attempt(bench).count() == 0, "a cancelled run must not run the cell"

    bench.cell_editor(1).locator(".view-lines").click()
    page.keyboard.press("Shift+Enter")
    dialog.wait_for(timeout=15_000)
    dialog.locator(".monaco-button", has_text="Show").first.click()
    peek = page.locator(".marker-widget:visible, .zone-widget:visible", has_text="Region")
    peek.first.wait_for(timeout=15_000)
    assert execution_attempt(bench).count() == 0
    page.keyboard.press("Escape")

    bench.cell_editor(1).locator(".view-lines").click()
    page.keyboard.press("Shift+Enter")
    dialog.wait_for(timeout=15_000)
    dialog.locator(".monaco-button", has_text="Run anyway").first.click()
    print(f"\nrun anyway -> {dismiss_execution_attempt(bench)!r}")

    # the menu of the cell's run button holds the guarded run (the button itself runs unasked)
    bench.cell_editor(1).locator(".view-lines").click()
    row = page.locator(".notebookOverlay .code-cell-row").nth(1)
    row.hover()
    row.locator(".run-button-container .dropdown-action-container").first.click()
    page.locator(".context-view .action-label", has_text="Run cell (ask first").first.click()
    dialog.wait_for(timeout=15_000)
    assert "KeyError" in str(dialog.inner_text()), dialog.inner_text()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden", timeout=10_000)

    # the setup cell: crane has no verdict for it, so it runs without a question
    bench.cell_editor(0).locator(".view-lines").click()
    page.keyboard.press("Control+Enter")
    dismiss_execution_attempt(bench)
    assert modal(bench).count() == 0

    # the user turns the guard off in the Settings editor
    bench.palette("Preferences: Open User Settings")
    page.locator(
        ".settings-editor .settings-header textarea, .settings-editor .settings-header input"
    ).first.wait_for(timeout=15_000)
    page.keyboard.type("crane.runGuard", delay=10)
    box = page.locator(".settings-editor .setting-item-bool .setting-value-checkbox").first
    bench.wait(
        lambda: box.count() and box.get_attribute("aria-checked") == "true", "the runGuard checkbox", 30
    )
    box.click()
    bench.wait(lambda: box.get_attribute("aria-checked") == "false", "the runGuard checkbox to clear", 10)
    settings = bench.folder.parent / "user-data" / "User" / "settings.json"
    # unchecked is the default: VS Code removes the entry (or writes false)
    bench.wait(lambda: '"crane.runGuard": true' not in settings.read_text(), "the setting to be saved", 10)
    # VS Code 1.139 shows the Settings editor as a modal over the notebook: close it
    blocker = page.locator(".monaco-modal-editor-block")
    if blocker.count():
        close = page.locator('.modal-editor-action-container [aria-label^="Close Modal Editor"]')

        def closed() -> bool:
            if not blocker.count() or not blocker.first.is_visible():
                return True
            # its own Close button: Escape alone was taken by a hover or the search box (in CI the
            # modal stayed open for 15 s of Escapes)
            if close.count() and close.first.is_visible():
                close.first.click()
            else:
                page.mouse.move(2, 2)
                page.keyboard.press("Escape")
            page.wait_for_timeout(300)
            return False

        bench.wait(closed, "the settings to close", 15)
    else:
        page.locator(".tabs-container .tab", has_text="analysis.ipynb").first.click()
    bench.cell_editor(1).locator(".view-lines").click()
    page.keyboard.press("Shift+Enter")
    dismiss_execution_attempt(bench)
    assert modal(bench).count() == 0, "with crane.runGuard off nothing is asked"
    # leave the notebook clean for the tests after this one
    bench.edit_cell(1, "total = df['Region'].sum()", "Region", "tax")
    bench.wait(lambda: not bench.squiggles(), "the notebook's squiggle to clear")


def test_percent_script_squiggle(workbench: Workbench) -> None:
    bench = workbench
    bench.open_file("report.py", ".editor-group-container.active .monaco-editor .view-line")
    bench.wait(lambda: bench.squiggles(), "the squiggle in the `# %%` script")
    assert bench.squiggles() in (["'weight'"], ["df['weight']"]), bench.squiggles()
    hover = bench.hover_text()
    assert "KeyError" in hover and "weight" in hover, hover
    bench.page.screenshot(path=str(bench.folder.parent / "vscode-script.png"))
    bench.page.mouse.move(5, 5)


def test_status_bar_item(workbench: Workbench) -> None:
    """Before the attach test: the status is the last check's, and that test ends by stopping the
    kernel it attached to the script (the script's next check then truly has no kernel)."""
    bench = workbench
    item = bench.page.locator("[id='crane-lsp.crane-lsp.crane.status']")
    assert item.is_visible()
    assert "crane" in str(item.inner_text())
    assert "Kernel attached" in bench.status(), bench.status()
    assert "Last check" in bench.status(), bench.status()
    # no Jupyter extension: the kernel is the one of crane.connectionFile, not a discovered one
    assert "Kernel from crane.connectionFile: " in bench.status(), bench.status()
    assert "discovery" not in str(item.inner_text())


def test_attach_kernel_from_connection_file_command(workbench: Workbench, tmp_path: Path) -> None:
    """A second kernel (a terminal's, another tool's), attached by hand to the script, replaces the
    setting's kernel there: its df has the column, so the squiggle goes."""
    bench = workbench
    other = start_kernel(tmp_path, "import pandas as pd\ndf = pd.DataFrame({'weight': [70.5, 81.0]})")
    try:
        assert bench.squiggles() in (["'weight'"], ["df['weight']"]), bench.squiggles()
        bench.page.locator(".editor-group-container.active .monaco-editor .view-lines").first.click()
        bench.palette("crane: Attach kernel from connection file…")
        bench.pick_file("Kernel connection file", Path(other.connection_file))
        bench.wait(
            lambda: not bench.squiggles() and bench.problems() == "No Problems",
            "the script to be checked against the picked kernel",
        )
        toast = bench.page.locator(".notifications-toasts", has_text="crane: kernel attached")
        toast.first.wait_for(timeout=15_000)
        assert other.connection_file in str(toast.first.inner_text())
    finally:
        other.stop()


def test_user_settings_apply_in_the_remote_window(workbench: Workbench) -> None:
    """code-server is a remote window: the interpreter of the User settings runs the server (VS Code
    drops machine-scoped settings from there, and crane then fell back to `python3` on PATH)."""
    logs = list(
        (workbench.folder.parent / "user-data").glob("logs/*/exthost*/output_logging_*/*crane-lsp.log")
    )
    assert logs, "the extension's output channel has no log"
    text = "\n".join(log.read_text() for log in logs)
    assert (
        f"Server command: {sys.executable} -m crane_lsp.cli serve (from crane.server.pythonPath)" in text
    ), text


def test_undo_last_cell_from_the_command_palette(workbench: Workbench) -> None:
    """'crane: Undo last cell' reaches the server with the active notebook and shows its one-line
    answer: here why it does nothing (crane.undo is off by default; docs/undo.md)."""
    bench = workbench
    bench.open_file("analysis.ipynb", ".notebookOverlay .cell-editor-container .view-line")
    bench.palette("crane: Undo last cell")
    said = "crane: undo is off (the crane.undo setting)"
    toast = bench.page.locator(".notifications-toasts", has_text=said)
    toast.first.wait_for(timeout=15_000)


def test_closing_the_window_stops_its_server(workbench: Workbench) -> None:
    bench = workbench
    servers = crane_servers(bench.server.pid)
    assert len(servers) == 1, [s.cmdline() for s in servers]
    bench.page.context.close()
    closed = time.monotonic()
    deadline = closed + GRACE_S + 60
    while any(alive(s) for s in servers):
        assert time.monotonic() < deadline, "the crane server outlived its window"
        time.sleep(0.1)
    bench.timings["window_closed_to_server_exit_s"] = time.monotonic() - closed
    print(f"window closed -> server exited: {time.monotonic() - closed:.1f} s (grace time {GRACE_S} s)")
