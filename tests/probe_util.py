"""Drive the kernel-side probe through the raw jupyter_client protocol of the conftest ``kernel``.

Tests of the checks use these to get a real ``Snapshot`` from a real kernel without the async link:

    install_probe(kernel)
    snap = snapshot(kernel, {"names": ["df"], "chains": ["df.append"]})
"""

from __future__ import annotations

import queue
from typing import Any

from crane_lsp.kernel.probe_install import call_expression, install_code, installed_expression
from crane_lsp.snapshot import ProbeQuery, Snapshot


def _user_expressions(kernel: Any, code: str, expressions: dict[str, str], timeout: float) -> dict[str, Any]:
    """Silent execute with user_expressions; returns the reply's ``user_expressions``."""
    msg_id = kernel.client.execute(code, silent=True, store_history=False, user_expressions=expressions)
    while True:
        try:
            msg = kernel.client.get_shell_msg(timeout=timeout)
        except queue.Empty as exc:
            raise TimeoutError("kernel did not answer the probe") from exc
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        content = msg["content"]
        if content["status"] != "ok":
            raise RuntimeError(f"probe execute failed: {content.get('ename')}: {content.get('evalue')}")
        result: dict[str, Any] = content["user_expressions"]
        return result


def install_probe(kernel: Any, timeout: float = 30) -> None:
    """Install (or reinstall) the probe module in the kernel's ``sys.modules``; leaves no user name."""
    answer = _user_expressions(kernel, install_code(), {"ok": installed_expression()}, timeout)
    ok = answer["ok"]
    if ok.get("status") != "ok" or ok["data"]["text/plain"] != "True":
        raise RuntimeError(f"probe not installed: {ok}")


def snapshot_json(kernel: Any, query: ProbeQuery | dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """The raw JSON the probe answers for ``query`` (installing the probe when it is missing)."""
    payload = query.model_dump() if isinstance(query, ProbeQuery) else ProbeQuery(**query).model_dump()
    answer = _user_expressions(
        kernel,
        "",
        {"installed": installed_expression(), "snap": call_expression("snapshot", payload)},
        timeout,
    )
    if answer["installed"].get("data", {}).get("text/plain") != "True":
        install_probe(kernel)
        answer = _user_expressions(kernel, "", {"snap": call_expression("snapshot", payload)}, timeout)
    snap = answer["snap"]
    if snap.get("status") != "ok":
        raise RuntimeError(f"probe raised {snap.get('ename')}: {snap.get('evalue')}")
    data: dict[str, Any] = snap["data"]["application/json"]
    return data


def snapshot(kernel: Any, query: ProbeQuery | dict[str, Any], timeout: float = 60) -> Snapshot:
    """A validated ``runtime.Snapshot`` of the real kernel for ``query``."""
    return Snapshot.model_validate(snapshot_json(kernel, query, timeout))
