"""A kernel gateway for the gateway-mode tests: a real Jupyter Enterprise Gateway, or a plain
``jupyter server`` (which serves the same gateway API), each with its own runtime dir and token.

Enterprise Gateway 3.3.0 needs ``notebook<7``, so it lives in a venv of its own
(``/opt/crane-eg-venv``, built by ``.ci/setup.d/60-enterprise-gateway.sh``); its kernels run that
venv's python (ipykernel, pandas). Nothing of the gateway's runtime dir is visible to the JupyterLab
in gateway mode nor to crane-lsp: the only way to a kernel is the lab server's API.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_port

EG_VENV = Path(os.environ.get("CRANE_EG_VENV", "/opt/crane-eg-venv"))
EG_BIN = EG_VENV / "bin" / "jupyter-enterprisegateway"


def eg_missing() -> str | None:
    """Why Enterprise Gateway cannot run here, or None."""
    if not EG_BIN.exists():
        return f"{EG_BIN} is missing: run .ci/setup.d/60-enterprise-gateway.sh"
    return None


@dataclass
class EnterpriseGateway:
    """``jupyter-enterprisegateway`` on 127.0.0.1, with an auth token, its own runtime dir."""

    dirs: Path
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dirs / "eg.log"

    def start(self, timeout: float = 180.0) -> None:
        for sub in ("runtime", "config", "data", "home"):
            (self.dirs / sub).mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV"))}
        env.update(
            PATH=f"{EG_VENV / 'bin'}:/usr/bin:/bin",
            JUPYTER_RUNTIME_DIR=str(self.dirs / "runtime"),
            JUPYTER_CONFIG_DIR=str(self.dirs / "config"),
            JUPYTER_DATA_DIR=str(self.dirs / "data"),
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        cmd = [
            str(EG_BIN),
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--port_retries=0",
            f"--EnterpriseGatewayApp.auth_token={self.token}",
            # a lab in gateway mode lists kernels (GET /api/kernels); EG forbids it unless allowed (403)
            "--EnterpriseGatewayApp.list_kernels=True",
        ]
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(cmd, env=env, cwd=self.dirs, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Enterprise Gateway exited: {self.log_text()[-3000:]}")
            request = urllib.request.Request(f"{self.url}/api/kernelspecs")
            request.add_header("Authorization", f"token {self.token}")
            try:
                with urllib.request.urlopen(request, timeout=5):
                    return
            except (OSError, urllib.error.URLError):
                time.sleep(0.5)
        raise RuntimeError(f"Enterprise Gateway did not start: {self.log_text()[-3000:]}")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


def gateway_args(url: str, token: str) -> list[str]:
    """A Jupyter server's (or JupyterLab's) options for gateway mode."""
    return [
        f"--gateway-url={url}",
        f"--GatewayClient.auth_token={token}",
        "--GatewayClient.request_timeout=120",
    ]
