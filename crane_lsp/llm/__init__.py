"""The LLM layer: prompt and answer schema (``prompt``), providers (``providers``), votes and cache
(``predictor``)."""

from crane_lsp.llm.errors import ConfigError, LLMError, MissingKeyError, ProviderError
from crane_lsp.llm.predictor import LLMPredictor

__all__ = ["ConfigError", "LLMError", "LLMPredictor", "MissingKeyError", "ProviderError"]
