"""Moved to ``kernel/agent/frames.py`` and ``kernel/agent/refusal.py``; this name stays for ``sandbox.py``
(its ``TYPE_CHECKING`` import) until the lead moves the sandbox into ``agent/``."""

from crane_lsp.kernel.agent.refusal import _frm_refusal

__all__ = ["_frm_refusal"]
