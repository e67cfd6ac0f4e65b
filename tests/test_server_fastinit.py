"""The early ``initialize`` answer (``server/fastinit``): the same capabilities pygls would build,
for every editor's client capabilities, sent once, and a server that works after it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from lsprotocol import types

from crane_lsp.server import fastinit
from crane_lsp.server.create import create_server
from tests.raw_client import RawServer, frame


def pygls_answer(capabilities: dict[str, Any]) -> dict[str, Any]:
    """What pygls's own ``initialize`` answers crane's server for these client capabilities."""
    protocol = create_server().protocol
    params = protocol._converter.structure(
        {"processId": None, "rootUri": None, "capabilities": capabilities}, types.InitializeParams
    )
    steps = protocol.lsp_initialize(params)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        result = done.value
    return json.loads(json.dumps(result, default=protocol._serialize_message))  # type: ignore[no-any-return]


def editor_capabilities() -> list[tuple[str, dict[str, Any]]]:
    """pytest-lsp's recorded capabilities of real editors, plus a few corner cases."""
    folder = resources.files("pytest_lsp") / "clients"
    recorded = [
        (entry.name, json.loads(entry.read_text())["capabilities"])
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]
    corners: list[tuple[str, dict[str, Any]]] = [
        ("empty", {}),
        ("utf-32 first", {"general": {"positionEncodings": ["utf-32", "utf-8"]}}),
        ("unknown encodings", {"general": {"positionEncodings": ["utf-7"]}}),
        ("notebooks", {"notebookDocument": {"synchronization": {"executionSummarySupport": True}}}),
        ("will save off", {"textDocument": {"synchronization": {"willSave": False}}}),
        ("file operations", {"workspace": {"fileOperations": {"didCreate": True, "willRename": True}}}),
    ]
    return recorded + corners


@pytest.mark.parametrize(
    ("name", "capabilities"), editor_capabilities(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_early_answer_is_what_pygls_answers(name: str, capabilities: dict[str, Any]) -> None:
    assert fastinit.initialize_result({"capabilities": capabilities}) == pygls_answer(capabilities), name


def test_odd_params_are_left_to_pygls() -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    assert fastinit.early_answer(ok) is not None
    for odd in (
        {**ok, "params": {"capabilities": 7}},
        {**ok, "params": {"capabilities": {"general": 3}}},
        {**ok, "id": True},
        {**ok, "method": "shutdown"},
        {**ok, "params": None},
        {**ok, "params": {"capabilities": {}, "processId": "12"}},
        {**ok, "params": {"capabilities": {}, "rootUri": 7}},
    ):
        assert fastinit.early_answer(odd) is None


def test_initialize_is_answered_once_and_the_server_works() -> None:
    server = RawServer("--log-level", "INFO")
    try:
        result = server.initialize(capabilities={"notebookDocument": {"synchronization": {}}})
        assert result["result"] == pygls_answer({"notebookDocument": {"synchronization": {}}})
        uri = "file:///tmp/crane-fastinit/script.py"
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "# %%\nx = 1\n"}},
        )
        hover = server.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}}
        )
        assert "error" not in server.reply(hover)  # served by the real server after the early answer
        answers = [f for f in server.frames if f.get("id") == result["id"] and "method" not in f]
        assert len(answers) == 1
    finally:
        assert server.close() == 0
    assert b"early initialize answer differs" not in server.stderr


def test_a_mis_sized_initialize_frame_is_left_to_the_server_reader() -> None:
    """A first frame whose Content-Length is too large never completes: the early path must not wait
    for it forever, and the server's reader recovers the message after its quiet period."""
    server = RawServer()
    try:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "capabilities": {}},
            }
        )
        server.send(frame(body, length=len(body) + 7))
        assert server.reply(1)["result"]["capabilities"]["hoverProvider"] is True
    finally:
        server.proc.kill()
        server.proc.wait(timeout=10)
