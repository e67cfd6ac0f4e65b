"""Structured-output dialects of OpenAI-compatible servers: what each server kind is sent, in which
order it steps down when the server refuses one, and what each server was found to take, remembered
for the process's life (a new provider for the same server, after a settings change or in the bench,
starts where the last one ended instead of learning it again from errors).

Dialects (what the request carries):

- ``json_schema``: ``response_format: {type: json_schema, json_schema: {name, schema, strict}}``, OpenAI's
  own; llama.cpp's ``llama-server``, Ollama >= 0.5 (turned into its native ``format: <schema>``), vLLM
  (all versions with the OpenAI server since 0.6), LM Studio.
- ``json_object``: ``response_format: {type: json_object, schema}``, llama-cpp-python (its json_schema is a
  500) and older ``llama-server``.
- ``json_mode``: ``response_format: {type: json_object}`` with the keys in the prompt: Ollama before 0.5
  (``format: "json"``), any server with JSON mode but no schemas.
- ``guided_json``: vLLM's own field (``guided_json: <schema>``, sent as ``extra_body``) for vLLM before
  0.10.2, where it is the documented way (``json_schema`` came later and some releases ignored it);
  deprecated in 0.10.2 for ``structured_outputs: {json: <schema>}`` and removed in 0.12, so a newer
  vLLM (or one whose version is unknown) gets OpenAI's ``json_schema``, which it documents as well.
- ``instructions``: nothing but the keys in the prompt and tolerant parsing.

A server that does not enforce a dialect may ignore it silently (vLLM ignores unknown fields, Ollama an
unknown ``type``): every dialect that may be ignored also puts the keys in the prompt.
"""

from __future__ import annotations

import copy
from typing import Any

from crane_lsp.llm.prompt import ANSWER_SCHEMA, ANSWER_SCHEMA_NAME

DIALECTS = ("json_schema", "json_object", "json_mode", "guided_json", "instructions")

#: The order each server kind steps down in; the probe (probe.py) names the kind and where to start
#: (an Ollama before 0.5 at json_mode, a vLLM before 0.10.2 at guided_json).
CHAINS: dict[str, tuple[str, ...]] = {
    "llama-cpp-python": ("json_object", "instructions"),
    "llama.cpp": ("json_schema", "json_object", "instructions"),
    "ollama": ("json_schema", "json_mode", "instructions"),
    "vllm": ("json_schema", "guided_json", "instructions"),
    "unknown": ("json_schema", "json_object", "instructions"),
}

#: Dialects that carry the schema in ``response_format`` (a server that rejects response_format itself
#: skips all of them at once).
_IN_RESPONSE_FORMAT = {"json_schema", "json_object", "json_mode"}
#: Dialects the server enforces with the schema: the prompt needs no key list.
_ENFORCED = {"json_schema", "json_object"}

#: (base URL, model, server kind) -> the dialect that server was last found to take.
_LEARNED: dict[tuple[str, str, str], str] = {}


def chain(kind: str) -> tuple[str, ...]:
    return CHAINS.get(kind, CHAINS["unknown"])


#: Servers whose grammar honours string and array bounds (llama.cpp's json-schema-to-grammar, also in
#: llama-cpp-python): they get ``bounded_schema``.
BOUNDED = ("llama.cpp", "llama-cpp-python")


def bounded_schema(max_tokens: int) -> dict[str, Any]:
    """``ANSWER_SCHEMA`` with lengths that fit ``max_tokens`` (about 3.5 characters a token): under a
    grammar a small model otherwise writes "reasoning" until the cap cuts its JSON (all 11 unparsed
    answers of 43 from SmolLM2-135M at 512 tokens, benchmarks/local_llm.py)."""
    schema = copy.deepcopy(ANSWER_SCHEMA)
    fields = schema["properties"]
    fields["reasoning"]["maxLength"] = max(120, int(max_tokens * 1.5))
    fields["evidence"]["maxItems"] = 3
    fields["evidence"]["items"]["maxLength"] = max(60, max_tokens // 4)
    edit = fix_object(schema)["properties"]  # the fix's edit: its code and its one sentence
    edit["code"]["maxLength"] = max(48, int(max_tokens * 0.2))
    edit["why"]["maxLength"] = max(24, int(max_tokens * 0.08))
    return schema


def fix_object(schema: dict[str, Any]) -> dict[str, Any]:
    """The object branch of the answer schema's nullable ``fix`` (``anyOf`` [object, null])."""
    return next(branch for branch in schema["properties"]["fix"]["anyOf"] if branch.get("type") == "object")


def request_fields(dialect: str, schema: dict[str, Any] = ANSWER_SCHEMA) -> dict[str, Any]:
    """The request-body fields that ask for ``schema`` in ``dialect`` (empty: instructions).

    ``guided_json`` is not an OpenAI field: the SDK sends it as ``extra_body``.
    """
    if dialect == "json_schema":
        named = {"name": ANSWER_SCHEMA_NAME, "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": named}}
    if dialect == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if dialect == "json_mode":
        return {"response_format": {"type": "json_object"}}
    if dialect == "guided_json":
        return {"extra_body": {"guided_json": schema}}
    return {}


def needs_instructions(dialect: str) -> bool:
    """Whether the prompt must list the answer's keys itself (the server may not enforce the schema)."""
    return dialect not in _ENFORCED


def step_down(kind: str, dialect: str, error: str) -> str:
    """The dialect to try after the server refused ``dialect`` with ``error`` (an error that names the
    format). A server that knows no ``response_format`` at all skips every dialect that uses it."""
    order = chain(kind)
    rest = list(order[order.index(dialect) + 1 :]) if dialect in order else list(order)
    text = error.lower()
    if dialect in _IN_RESPONSE_FORMAT and "response_format" in text and "schema" not in text:
        rest = [d for d in rest if d not in _IN_RESPONSE_FORMAT]  # the field itself is unknown
    return rest[0] if rest else "instructions"


def _key(base_url: str, model: str, kind: str) -> tuple[str, str, str]:
    return (base_url.rstrip("/"), model, kind)


def learned(base_url: str, model: str, kind: str) -> str | None:
    """The dialect this server (and model) was found to take earlier in this process, if any."""
    return _LEARNED.get(_key(base_url, model, kind))


def remember(base_url: str, model: str, kind: str, dialect: str) -> None:
    _LEARNED[_key(base_url, model, kind)] = dialect


def forget() -> None:
    """Forget every server (tests)."""
    _LEARNED.clear()
