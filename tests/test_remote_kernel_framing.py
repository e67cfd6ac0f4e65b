"""Both kernel-websocket framings, checked against jupyter_server's own (de)serializers.

crane's encoder must produce what the server's decoder reads, and crane's decoder must read what the
server's encoder writes: v1 (``serialize_msg_to_ws_v1`` / ``deserialize_msg_from_ws_v1``) and the legacy
binary envelope for messages with buffers (``serialize_binary_message`` / ``deserialize_binary_message``),
plus the legacy JSON text frame. Kernel URLs and tokens are parsed without ever keeping a credential.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import (
    deserialize_binary_message,
    deserialize_msg_from_ws_v1,
    serialize_binary_message,
    serialize_msg_to_ws_v1,
)

from crane_lsp.kernel.remote import KernelUrl, parse_kernel_url, resolve_token
from crane_lsp.kernel.transport_ws import decode_legacy, decode_v1, encode_legacy, encode_v1

SESSION = Session(key=b"k")


def _sample(buffers: list[bytes] | None = None) -> dict[str, Any]:
    msg = SESSION.msg(
        "execute_request",
        {"code": "x = 'é'\n", "silent": True, "user_expressions": {"r": "1"}},
        parent={"msg_id": "p-1", "msg_type": "x", "session": "s", "username": "u", "version": "5.4"},
        metadata={"m": 1},
    )
    msg["header"]["subshell_id"] = "sub-1"
    msg["buffers"] = buffers or []
    return msg


def test_v1_encode_is_what_jupyter_server_reads() -> None:
    msg = _sample([b"\x00\x01raw", b""])
    channel, parts = deserialize_msg_from_ws_v1(encode_v1("shell", msg))
    assert channel == "shell"
    header, parent, metadata, content = (SESSION.unpack(p) for p in parts[:4])
    assert header["msg_id"] == msg["header"]["msg_id"] and header["subshell_id"] == "sub-1"
    assert header["date"] == msg["header"]["date"].isoformat().replace("+00:00", "Z")
    assert parent["msg_id"] == "p-1" and metadata == {"m": 1} and content["code"] == "x = 'é'\n"
    assert [bytes(p) for p in parts[4:]] == [b"\x00\x01raw", b""]


def test_v1_decode_reads_what_jupyter_server_writes() -> None:
    msg = _sample()
    # the server forwards the kernel's ZeroMQ parts unchanged (packed by a Session), buffers after them
    frame = serialize_msg_to_ws_v1(msg, "iopub", SESSION.pack)
    channel, decoded = decode_v1(frame)
    assert channel == "iopub"
    assert decoded["msg_id"] == msg["header"]["msg_id"] and decoded["msg_type"] == "execute_request"
    assert decoded["parent_header"]["msg_id"] == "p-1"
    assert decoded["content"]["user_expressions"] == {"r": "1"}
    raw_parts = [SESSION.pack(msg[k]) for k in ("header", "parent_header", "metadata", "content")]
    _, with_buffers = decode_v1(serialize_msg_to_ws_v1([*raw_parts, b"buf"], "shell"))
    assert with_buffers["buffers"] == [b"buf"]


def test_legacy_text_and_binary_frames_both_ways() -> None:
    msg = _sample()
    text = encode_legacy("control", msg)
    assert isinstance(text, str)
    body = json.loads(text)
    assert body["channel"] == "control" and body["header"]["msg_id"] == msg["header"]["msg_id"]
    channel, decoded = decode_legacy(text)
    assert channel == "control" and decoded["content"]["code"] == "x = 'é'\n"

    with_buffers = _sample([b"\xffabc", b"z"])
    frame = encode_legacy("shell", with_buffers)
    assert isinstance(frame, bytes)
    server_side = deserialize_binary_message(frame)  # what the server reads
    assert server_side["channel"] == "shell" and server_side["buffers"] == [b"\xffabc", b"z"]
    server_frame = serialize_binary_message({**server_side, "channel": "iopub", "buffers": [b"one", b"two"]})
    channel, decoded = decode_legacy(server_frame)
    assert channel == "iopub" and decoded["buffers"] == [b"one", b"two"]
    assert decoded["msg_id"] == with_buffers["header"]["msg_id"] and decoded["metadata"] == {"m": 1}


def test_frames_without_enough_parts_are_refused() -> None:
    with pytest.raises(ValueError):
        decode_v1(b"\x01" + b"\x00" * 7)
    with pytest.raises(ValueError):
        decode_v1(serialize_msg_to_ws_v1([b"{}", b"{}"], "shell"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:8888/api/kernels/0b1c-2d", KernelUrl("http://127.0.0.1:8888", "0b1c-2d")),
        ("https://hub.example/user/ann/api/kernels/k1/channels?session_id=s",
         KernelUrl("https://hub.example/user/ann", "k1")),
        ("wss://hub.example/base/api/kernels/k2/", KernelUrl("https://hub.example/base", "k2")),
        ("http://ann:secret@host:1/api/kernels/k3?token=abc", KernelUrl("http://host:1", "k3")),
        ("/tmp/kernel-1.json", None),
        ("http://host:1/api/sessions", None),
        ("file:///api/kernels/x", None),
    ],
)  # fmt: skip
def test_parse_kernel_url(text: str, expected: KernelUrl | None) -> None:
    url = parse_kernel_url(text)
    assert url == expected
    if url is not None:
        assert "secret" not in str(url) and "token" not in str(url) and parse_kernel_url(str(url)) == url
        assert url.channels_url.startswith(("ws://", "wss://")) and url.channels_url.endswith("/channels")


def test_resolve_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_TOKEN", "from-env")
    assert resolve_token("explicit") == "explicit"
    assert resolve_token(None) == "from-env" and resolve_token("") == "from-env"
    monkeypatch.delenv("JUPYTER_TOKEN")
    assert resolve_token(None) is None
