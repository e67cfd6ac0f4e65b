"""Errors of the LLM layer, each with a message fit to show a user as it is (never a key, never a trace)."""

from __future__ import annotations

from collections.abc import Sequence


class LLMError(Exception):
    """Base class: ``str(error)`` is the user-facing message."""


class ConfigError(LLMError):
    """The settings cannot work (no model for a local server, an unknown provider)."""


class MissingKeyError(LLMError):
    """No API key in the environment; names the variable(s) to set."""

    def __init__(self, provider: str, variables: Sequence[str]) -> None:
        self.provider = provider
        self.variables = tuple(variables)
        names = " or ".join(self.variables)
        super().__init__(
            f"crane-lsp: the {provider} provider needs an API key: set the environment variable {names} "
            "(or name another variable with the apiKeyEnv setting)"
        )


class ProviderError(LLMError):
    """The service refused or failed the request. ``transient`` errors (429, 5xx, timeouts) are retried."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        transient: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient
        self.retry_after_s = retry_after_s
