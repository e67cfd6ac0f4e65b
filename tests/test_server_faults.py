"""Faults on the wire and in the input, from a raw JSON-RPC client: the server never goes deaf.

Each test is one numbered failure of issue 13: a mis-sized frame, junk, params that do not
deserialise, requests before ``initialize``, a FIFO as connection file, lone surrogates, exit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.raw_client import RawServer, frame

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[RawServer]:
    s = RawServer()
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait(10)


def _open(uri: str, text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    }


def _hover(server: RawServer, uri: str, line: int, character: int) -> dict[str, object]:
    msg_id = server.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
    )
    return server.reply(msg_id)


def test_frame_sized_in_characters_costs_nothing(server: RawServer) -> None:
    """Failure 3: a Content-Length counted in characters ("é") must not desync the reader."""
    server.initialize({"debounce": 50})
    uri = "file:///tmp/crane-faults/cafe.py"
    msg = _open(uri, "# %%\ncafé = 'é'\ny = (\n")
    chars = len(json.dumps(msg, ensure_ascii=False))
    server.send(frame(msg, length=chars))  # three bytes short: "é" is two bytes, counted as one
    diags = server.wait_diagnostics(uri, lambda ds: len(ds) == 1)
    assert diags[0]["code"] == "SyntaxError" and diags[0]["range"]["start"]["line"] == 2
    # and the same mistake in the other direction, followed at once by a well-formed request
    other = "file:///tmp/crane-faults/other.py"
    too_long = frame(_open(other, "# %%\nz = (\n"), length=10_000)
    hover = {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 4}}
    server.send(
        too_long + frame({"jsonrpc": "2.0", "id": 41, "method": "textDocument/hover", "params": hover})
    )
    assert "SyntaxError" in json.dumps(server.reply(41)["result"])
    assert server.wait_diagnostics(other, lambda ds: len(ds) == 1)[0]["range"]["start"]["line"] == 1


def test_junk_and_bad_params_get_errors(server: RawServer) -> None:
    """Failure 4: every request gets an answer — the right JSON-RPC error when it cannot be served."""
    before = server.request(
        "textDocument/hover",
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 0}},
    )
    assert server.reply(before)["error"]["code"] == -32002  # not initialized yet
    server.initialize()
    huge = server.request(
        "textDocument/hover",
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 2**40, "character": 0}},
    )
    assert server.reply(huge)["error"]["code"] == -32602
    not_uri = server.request(
        "textDocument/hover", {"textDocument": {"uri": 7}, "position": {"line": 0, "character": 0}}
    )
    assert server.reply(not_uri)["error"]["code"] == -32602
    server.send(frame("this is not json at all"))
    server.wait(lambda f: f.get("error", {}).get("code") == -32700 and f.get("id") is None)
    server.send(frame('{"jsonrpc": "2.0", "id": 9}'))
    assert server.reply(9)["error"]["code"] == -32600
    server.send(b"\r\n")  # a bare line end between frames is harmless
    ok = server.request("shutdown", None)
    assert server.reply(ok) == {"jsonrpc": "2.0", "id": ok, "result": None}


def test_fifo_connection_file_does_not_block(server: RawServer, tmp_path: Path) -> None:
    """Failure 3: a FIFO given as connection file is refused at once; the server keeps answering."""
    fifo = tmp_path / "kernel-fifo.json"
    os.mkfifo(fifo)
    server.initialize()
    uri = "file:///tmp/crane-faults/fifo.py"
    server.send(frame(_open(uri, "# %%\nx = 1\n")))
    started = time.monotonic()
    attach = server.request(
        "workspace/executeCommand", {"command": "crane.attachKernel", "arguments": [uri, str(fifo)]}
    )
    hover = _hover(server, uri, 1, 0)
    reply = server.reply(attach)
    assert time.monotonic() - started < 10
    assert "result" in hover
    assert reply["result"]["attached"] is False and "not a regular file" in reply["result"]["error"]


def test_lone_surrogates_keep_warnings_and_hover(server: RawServer) -> None:
    """Failure 5: a lone surrogate (valid JSON) neither stops a script's warnings nor breaks hover."""
    server.initialize({"debounce": 50})
    uri = "file:///tmp/crane-faults/surrogate.py"
    text = '# %%\ns = "\ud800"\n\n# %%\nt = "\udc80"; u = (\n'
    server.send(frame(_open(uri, text)))
    diags = server.wait_diagnostics(uri, lambda ds: len(ds) == 1)
    assert diags[0]["code"] == "SyntaxError" and diags[0]["range"]["start"]["line"] == 4
    col = text.split("\n")[4].index("(")
    assert diags[0]["range"]["start"]["character"] == col  # a lone surrogate is one UTF-16 unit
    hover = _hover(server, uri, 4, col)
    assert "error" not in hover and "SyntaxError" in json.dumps(hover["result"])


def test_exit_after_shutdown_is_fast_and_clean(server: RawServer) -> None:
    """Failure 10: ``exit`` after ``shutdown`` ends the process at once with status 0."""
    server.initialize()
    server.reply(server.request("shutdown", None))
    started = time.monotonic()
    server.notify("exit", None)
    assert server.proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 1.0  # typically ~10 ms; generous for a loaded CI machine
