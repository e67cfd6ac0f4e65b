"""crane in a real JupyterLab in gateway mode, its kernels in a real Jupyter Enterprise Gateway.

Enterprise Gateway 3.3.0 (its own venv, notebook<7; ``.ci/setup.d/60-enterprise-gateway.sh``) runs on
127.0.0.1 with an auth token and a runtime dir of its own; ``jupyter lab --gateway-url`` (with
``--GatewayClient.auth_token``) starts the notebook's kernel there. jupyter-lsp starts crane-lsp beside
the lab server as usual, with nothing configured: no connection file exists on the lab's side, so crane
finds the lab server in its runtime dir (``jpserver-<pid>.json``: URL and token) and reads the kernel
through the lab server's own ``/api/kernels/<id>/channels``, which the lab proxies to the gateway.
Headless Chromium drives the page: run the DataFrame cell, see the KeyError verdict on the misspelt
column.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_util import screenshot_dir
from tests.gateway_util import EnterpriseGateway, eg_missing, gateway_args
from tests.jupyterlab_util import JupyterProc, write_notebook
from tests.test_jupyterlab_browser import FIRST_RUN_S, Lab, browser, install_extension, open_notebook

__all__ = ["browser"]  # the Chromium fixture, shared with the JupyterLab suite

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"price": [1.5, 2.0], "qty": [3, 4]})',
    'total = df["prise"].sum()',
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnterpriseGateway]:
    missing = eg_missing()
    if missing:
        pytest.fail(missing)
    eg = EnterpriseGateway(dirs=tmp_path_factory.mktemp("eg"))
    eg.start()
    try:
        yield eg
    finally:
        eg.stop()


def _gateway_mode(base: Path, gateway: EnterpriseGateway, app: str) -> JupyterProc:
    """JupyterLab (or Notebook 7) in gateway mode with crane's extension, started."""
    root = base / "root"
    root.mkdir()
    write_notebook(root / "gateway.ipynb", CELLS)
    lab = JupyterProc(
        root=root,
        dirs=base / "lab",
        app=app,
        # EG refuses kernels for root (its unauthorized_users): CI runs as root, the kernel user is named
        extra_env={"CRANE_LSP_LOG_LEVEL": "INFO", "KERNEL_USERNAME": "crane-test"},
        extra_args=gateway_args(gateway.url, gateway.token),
    )
    install_extension(lab.dirs / "data")
    settings = lab.dirs / "config" / "lab" / "user-settings" / "crane-lsp"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"debounceMs": 300}))
    notices = lab.dirs / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    notices.mkdir(parents=True)
    (notices / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    lab.start(timeout=FIRST_RUN_S)
    return lab


def test_a_keyerror_verdict_on_a_kernel_in_enterprise_gateway(
    browser: Any, gateway: EnterpriseGateway, tmp_path: Path
) -> None:
    lab = _gateway_mode(tmp_path, gateway, "lab")
    try:
        ui = open_notebook(browser, lab, "gateway.ipynb")
        kernels = lab.api("GET", "api/kernels")
        assert len(kernels) == 1
        kernel_id = kernels[0]["id"]
        # the kernel is Enterprise Gateway's: its file is in EG's runtime dir, none on the lab's side
        assert not list(lab.runtime_dir.glob("kernel-*.json"))
        assert "Enterprise Gateway" in gateway.log_text() and kernel_id in gateway.log_text()
        ui.start(0)
        finished = ui.wait(
            lambda: ui.prompt(0) == "[1]:", timeout=FIRST_RUN_S, what="the first cell to finish"
        )
        shown = ui.wait(
            lambda: "KeyError" in ui.verdict(1) and bool(ui.marks(1)), timeout=120, what="KeyError"
        )
        print(
            f"\ngateway mode: first cell finished -> verdict on the next: {(shown - finished) * 1000:.0f} ms"
        )
        assert "prise" in ui.verdict(1) and ui.marks(1) in (['"prise"'], ['df["prise"]'])
        assert not ui.marks(0)
        ui.page.screenshot(path=str(screenshot_dir() / "jupyterlab-gateway.png"))
        assert "attached" in ui.status().inner_text()
        log = lab.log_text()
        assert f"kernel at {lab.url}api/kernels/{kernel_id}" in log, log[-3000:]
        assert lab.token not in log.replace(f"token={lab.token}", "") and gateway.token not in log
        assert not ui.crane_errors(), ui.crane_errors()
        ui.page.context.close()
    finally:
        lab.stop()


def test_notebook7_in_gateway_mode_shows_the_same_verdict(
    browser: Any, gateway: EnterpriseGateway, tmp_path: Path
) -> None:
    nb7 = _gateway_mode(tmp_path, gateway, "notebook")
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        ui = Lab(page)
        page.goto(f"{nb7.url}notebooks/gateway.ipynb?token={nb7.token}", wait_until="domcontentloaded")
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=FIRST_RUN_S * 1000)
        ui.wait(lambda: "✓ attached" in ui.status().inner_text(), timeout=FIRST_RUN_S, what="crane attached")
        ui.start(0)
        ui.wait(lambda: ui.prompt(0) == "[1]:", timeout=FIRST_RUN_S, what="the first cell to finish")
        ui.wait(lambda: "KeyError" in ui.verdict(1) and bool(ui.marks(1)), timeout=120, what="the KeyError")
        assert not list(nb7.runtime_dir.glob("kernel-*.json")), "the kernel must be the gateway's"
        assert not ui.crane_errors(), ui.crane_errors()
        context.close()
    finally:
        nb7.stop()
