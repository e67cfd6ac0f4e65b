"""The probe's request and answer on the wire: one silent ``execute_request`` whose ``user_expressions``
check that the probe is installed and call an entry point, installing it first when asked.

Kept apart from ``link.py`` (the link decides where and when to send it; this is only its shape) and
from the transports (the same request goes over ZeroMQ, a websocket or the editor's relay).
"""

from __future__ import annotations

import json
from typing import Any

from crane_lsp.kernel import probe_install

RESULT_KEY = "r"
INSTALLED_KEY = "ok"


class ProbeAnswerError(ValueError):
    """The answer is unusable; ``str()`` is the user's message (the link raises it as ``ProbeError``)."""


def execute_content(function: str, payload: dict[str, Any], *, install: bool) -> dict[str, Any]:
    """The ``execute_request`` content: silent, no history, user_expressions only (``install``: the
    code installs the probe first when it is missing)."""
    code = ""
    if install:
        code = f"if not ({probe_install.installed_expression()}):\n    {probe_install.install_code()}\n"
    return {
        "code": code,
        "silent": True,
        "store_history": False,
        "user_expressions": {
            INSTALLED_KEY: probe_install.installed_expression(),
            RESULT_KEY: probe_install.call_expression(function, payload),
        },
        "allow_stdin": False,
        "stop_on_error": False,
    }


def parse_answer(content: dict[str, Any], function: str) -> dict[str, Any] | None:
    """The entry point's JSON, or None when the probe must be (re)installed first."""
    if content.get("status") != "ok":
        raise ProbeAnswerError(
            f"installing the probe failed: {content.get('ename')}: {content.get('evalue')}"
            if content.get("ename")
            else f"the kernel refused the probe request ({content.get('status')})"
        )
    exprs = content.get("user_expressions") or {}
    installed = exprs.get(INSTALLED_KEY, {})
    if installed.get("data", {}).get("text/plain") != "True":
        return None
    result = exprs.get(RESULT_KEY) or {}
    if result.get("status") != "ok":
        raised = f"{result.get('ename')}: {result.get('evalue')}"
        raise ProbeAnswerError(f"the probe's {function}() raised {raised}")
    data = result.get("data") or {}
    value = data.get("application/json")
    if value is None:
        try:
            value = json.loads(data.get("text/plain", ""))
        except ValueError as exc:
            raise ProbeAnswerError(f"the probe's {function}() answered no JSON: {str(data)[:200]}") from exc
    if not isinstance(value, dict):
        raise ProbeAnswerError(f"the probe's {function}() answered {type(value).__name__}, not an object")
    return value
