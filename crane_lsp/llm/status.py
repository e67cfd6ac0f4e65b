"""The LLM's part of the editor's ``crane/status``: which provider and model, whether its server was
reached, and the last error in one line, so "no verdict" cells have a visible cause in the status bar.

    payload["llm"] = llm_status(settings, predictor, build_error)

Small and flat on purpose: clients that do not know the field ignore it (vscode-client's parseStatus
picks the fields it knows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crane_lsp.llm.predictor import LLMPredictor
    from crane_lsp.settings import Settings

#: the longest one-line error the status carries (the full text is in the log and the cell's hover)
MAX_ERROR = 200


def one_line(text: str | None, limit: int = MAX_ERROR) -> str | None:
    """``text`` on one line, at most ``limit`` characters; None for nothing."""
    if not text:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def llm_status(
    settings: Settings, llm: LLMPredictor | None, build_error: str | None = None
) -> dict[str, Any]:
    """``{"provider", "model", "baseUrl", "state", "reachable", "lastError", "server", "dialect"}``.

    ``state``: ``off`` (no provider), ``disabled`` (it could not be set up: ``build_error``, e.g. a
    missing key), ``idle`` (not asked yet), ``answering``, ``failing``. ``reachable``: None until asked;
    a garbled answer still reached the server. ``server``/``dialect``: what the probe found of an
    OpenAI-compatible server (None before it or for hosted providers). Never a key.
    """
    provider = settings.provider
    status: dict[str, Any] = {
        "provider": provider,
        "model": settings.model,
        "baseUrl": settings.base_url,
        "state": "off",
        "reachable": None,
        "lastError": None,
        "server": None,
        "dialect": None,
    }
    if provider == "none":
        return status
    if llm is None:
        status.update(state="disabled", lastError=one_line(build_error) or "the LLM could not be set up")
        return status
    status["model"] = llm.provider.model
    status["reachable"] = llm.reached
    status["lastError"] = one_line(llm.last_error)
    if llm.answered is None:
        status["state"] = "idle"
    else:
        status["state"] = "answering" if llm.answered else "failing"
    server = getattr(llm.provider, "server", None)
    if server is not None:
        status["server"] = server.kind
        status["dialect"] = getattr(llm.provider, "dialect", None)
    return status
