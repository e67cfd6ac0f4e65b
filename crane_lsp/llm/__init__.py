"""The LLM layer: prompt and answer schema (``prompt``), providers (``providers``), votes and cache
(``predictor``), server dialects (``dialects``), the editor status (``status``).

The names below load on first use, so that ``crane_lsp.llm.status`` (read on every status message) does
not pull in the SDKs and the predictor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crane_lsp.llm.errors import ConfigError, LLMError, MissingKeyError, ProviderError
    from crane_lsp.llm.predictor import LLMPredictor

__all__ = ["ConfigError", "LLMError", "LLMPredictor", "MissingKeyError", "ProviderError"]


def __getattr__(name: str) -> Any:
    if name == "LLMPredictor":
        from crane_lsp.llm.predictor import LLMPredictor

        return LLMPredictor
    if name in __all__:
        from crane_lsp.llm import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'crane_lsp.llm' has no attribute {name!r}")
