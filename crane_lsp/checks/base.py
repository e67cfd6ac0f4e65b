"""Import shim: ``Finding``, ``check`` and the registry now live in ``crane_lsp.checks.registry``."""

from __future__ import annotations

from crane_lsp.checks.registry import REGISTRY, CheckFn, Finding, check

__all__ = ["REGISTRY", "CheckFn", "Finding", "check"]
