"""One look at an OpenAI-compatible server before the first question: what it is (llama.cpp's
``llama-server``, llama-cpp-python, Ollama, vLLM), its context length and the structured-output dialect
it speaks, so the first request is already in its dialect instead of learning it from errors.

    info = await probe_server("http://127.0.0.1:8080/v1", "smollm2", client)

Ollama and vLLM are also asked their version (``/api/version``, ``/version``): an Ollama before 0.5
ignores OpenAI's json_schema silently, a vLLM before 0.10.2 takes its own ``guided_json`` best.

Each look is one short GET/POST that may fail: a failed probe leaves the defaults (OpenAI's
``json_schema``, context unknown), never an error.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)


@dataclass
class ServerInfo:
    kind: str = "unknown"  # llama.cpp | llama-cpp-python | ollama | vllm | unknown
    context: int | None = None  # tokens the model sees at once, when the server says
    dialect: str = "json_schema"  # where to start: see dialects.py
    tokenize_url: str | None = None  # llama.cpp's /tokenize, llama-cpp-python's: exact prompt lengths
    version: str | None = None  # Ollama's /api/version, vLLM's /version


def _older(version: str | None, than: tuple[int, ...]) -> bool:
    """``version`` (``0.4.7``, ``0.10.1rc1``) is known and older than ``than``; unknown is not older."""
    if not version:
        return False
    parts = []
    for piece in version.lstrip("v").split(".")[: len(than)]:
        digits = "".join(itertools.takewhile(str.isdigit, piece))
        if not digits:
            return False
        parts.append(int(digits))
    return tuple(parts) < than


async def _version(client: httpx.AsyncClient, url: str) -> str | None:
    answer = await _get(client, url)
    version = answer.get("version") if isinstance(answer, dict) else None
    return version if isinstance(version, str) else None


def _root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def _get(client: httpx.AsyncClient, url: str) -> Any:
    try:
        resp = await client.get(url)
        return resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def probe_server(base_url: str, model: str, client: httpx.AsyncClient) -> ServerInfo:
    """What ``/v1/models``, ``/props`` (llama.cpp) and ``/api/show`` (Ollama) say about the server."""
    info = ServerInfo()
    root = _root(base_url)
    models = await _get(client, base_url.rstrip("/") + "/models")
    entries = models.get("data", []) if isinstance(models, dict) else []
    entry = next((m for m in entries if isinstance(m, dict) and m.get("id") == model), None)
    entry = entry or (entries[0] if entries and isinstance(entries[0], dict) else {})
    owner = str(entry.get("owned_by", ""))
    if owner == "me":  # llama-cpp-python: json_schema is a 500 there; json_object + schema works
        info.kind, info.dialect = "llama-cpp-python", "json_object"
        info.tokenize_url = root + "/extras/tokenize"  # {"input": text} -> {"tokens": [...]}
    elif owner == "llamacpp":
        info.kind = "llama.cpp"
    elif owner == "vllm":
        info.kind = "vllm"
        info.context = entry.get("max_model_len") if isinstance(entry.get("max_model_len"), int) else None
    elif owner in ("library", "ollama"):
        info.kind = "ollama"
    if info.kind in ("llama.cpp", "unknown"):
        props = await _get(client, root + "/props")
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(n_ctx, int):
            info.kind, info.context, info.tokenize_url = "llama.cpp", n_ctx, root + "/tokenize"
    if info.kind in ("ollama", "unknown"):
        try:
            resp = await client.post(root + "/api/show", json={"model": model})
            shown = resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            shown = None
        details = shown.get("model_info") if isinstance(shown, dict) else None
        if isinstance(details, dict):
            info.kind = "ollama"
            lengths = [v for k, v in details.items() if k.endswith(".context_length") and isinstance(v, int)]
            info.context = lengths[0] if lengths else None
    if info.kind == "ollama":  # json_schema from 0.5 on; before, an unknown type is silently ignored
        info.version = await _version(client, root + "/api/version")
        info.dialect = "json_mode" if _older(info.version, (0, 5)) else "json_schema"
    elif info.kind == "vllm":  # guided_json before 0.10.2 (where json_schema came late), then json_schema
        info.version = await _version(client, root + "/version")
        info.dialect = "guided_json" if _older(info.version, (0, 10, 2)) else "json_schema"
    log.info(
        "%s: %s %s, context %s, dialect %s",
        base_url,
        info.kind,
        info.version or "",
        info.context,
        info.dialect,
    )
    return info


async def count_tokens(client: httpx.AsyncClient, info: ServerInfo, text: str) -> int | None:
    """The prompt's length in the server's own tokens (llama.cpp ``/tokenize``, llama-cpp-python
    ``/extras/tokenize``), else None."""
    if info.tokenize_url is None:
        return None
    try:
        field = "input" if info.kind == "llama-cpp-python" else "content"  # llama.cpp's /tokenize
        resp = await client.post(info.tokenize_url, json={field: text})
        tokens = resp.json().get("tokens") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return len(tokens) if isinstance(tokens, list) else None
