"""jupyter-lsp learns about ``crane-lsp serve`` from this spec (entry point ``jupyter_lsp_spec_v1``).

Installing crane-lsp next to jupyter-lsp is then all it takes: the Jupyter server offers the server at
``/lsp/ws/crane-lsp``, where crane's JupyterLab extension (and jupyterlab-lsp) connect. The server runs
under the Jupyter server's own interpreter, so it sees the same runtime directory, hence the same
``kernel-<id>.json`` connection files as the notebooks' kernels.
"""

from __future__ import annotations

import sys
from typing import Any

KEY = "crane-lsp"
SPEC_VERSION = 2  # jupyter_lsp.schema.SPEC_VERSION; literal so that this module imports nothing of it


def argv() -> list[str]:
    return [sys.executable, "-m", "crane_lsp", "serve"]


def spec(manager: Any = None) -> dict[str, dict[str, Any]]:
    """The spec map jupyter-lsp validates: one server, for Python notebooks and scripts.

    ``requires_documents_on_disk`` is off: crane reads the kernel, not files, and jupyterlab-lsp then
    sends the notebook's real path instead of a copy under ``.virtual_documents/``.
    """
    return {
        KEY: {
            "version": SPEC_VERSION,
            "argv": argv(),
            "languages": ["python"],
            "display_name": "crane-lsp (crash prediction)",
            "mime_types": ["text/python", "text/x-ipython"],
            "requires_documents_on_disk": False,
            "install": {"pip": 'pip install "crane-lsp[jupyterlab]"'},
        }
    }
