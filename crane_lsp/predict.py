"""Moved to ``crane_lsp.pipeline``; this re-export keeps old imports working until they follow."""

from crane_lsp.pipeline import *  # noqa: F403
from crane_lsp.pipeline import __all__  # noqa: F401
