"""jupyter-lsp learns about ``crane-lsp serve`` from this spec (entry point ``jupyter_lsp_spec_v1``).

Installing crane-lsp next to jupyter-lsp is then all it takes: the Jupyter server offers the server at
``/lsp/ws/crane-lsp``, where crane's JupyterLab extension connects. The server runs under the Jupyter
server's own interpreter, so it sees the same runtime directory, hence the same ``kernel-<id>.json``
connection files as the notebooks' kernels.

The default spec claims no editor language: JupyterLab's own LSP client and jupyterlab-lsp use only
the first server per language, so a ``python`` spec would displace the user's completion server
(pylsp, pyright) or be displaced, and would run a second crane process beside the extension's. With
``CRANE_LSP_JUPYTERLAB_LSP=1`` in the Jupyter server's environment a second spec, ``crane-lsp-python``,
offers crane to them for Python (their virtual notebook document is then split back into cells).
"""

from __future__ import annotations

import os
import sys
from typing import Any

KEY = "crane-lsp"
PYTHON_KEY = "crane-lsp-python"
OPT_IN = "CRANE_LSP_JUPYTERLAB_LSP"
LANGUAGE = "crane-notebook"  # a language no editor document has: only crane's extension connects
SPEC_VERSION = 2  # jupyter_lsp.schema.SPEC_VERSION; literal so that this module imports nothing of it


def argv() -> list[str]:
    return [sys.executable, "-m", "crane_lsp", "serve"]


def _one(display_name: str, languages: list[str]) -> dict[str, Any]:
    return {
        "version": SPEC_VERSION,
        "argv": argv(),
        "languages": languages,
        "display_name": display_name,
        "mime_types": ["text/x-ipython"] if "python" in languages else ["text/x-crane-notebook"],
        # crane reads the kernel, not files: clients send the notebook's real path, no .virtual_documents copy
        "requires_documents_on_disk": False,
        "install": {"pip": 'pip install "crane-lsp[jupyterlab]"'},
    }


def spec(manager: Any = None) -> dict[str, dict[str, Any]]:
    """The spec map jupyter-lsp validates."""
    specs = {KEY: _one("crane-lsp (crash prediction)", [LANGUAGE])}
    if os.environ.get(OPT_IN) == "1":
        specs[PYTHON_KEY] = _one("crane-lsp (crash prediction, for jupyterlab-lsp)", ["python"])
    return specs
