"""A raw JSON-RPC client for ``crane-lsp serve``: exact bytes in, parsed frames out.

For what a library client would never send: mis-sized frames, junk, params that do not
deserialise, requests before ``initialize``. A reader thread collects every frame the server
writes; ``wait`` polls them.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.server_client import SERVER_COMMAND, SERVER_ENV


def frame(message: dict[str, Any] | str, *, length: int | None = None) -> bytes:
    """A frame; ``length`` overrides the (byte) Content-Length, to send a mis-sized one."""
    body = (message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)).encode(
        "utf-8", "surrogatepass"
    )
    return f"Content-Length: {len(body) if length is None else length}\r\n\r\n".encode() + body


class RawServer:
    def __init__(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*SERVER_COMMAND, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or SERVER_ENV,
        )
        self.frames: list[dict[str, Any]] = []
        self.stderr = b""
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self._ids = 100

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                ch = out.read(1)
                if not ch:
                    return
                header += ch
            size = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            body = out.read(size)
            with self._lock:
                self.frames.append(json.loads(body))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any, *, msg_id: int | None = None) -> int:
        if msg_id is None:
            self._ids += 1
            msg_id = self._ids
        self.send(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return msg_id

    def notify(self, method: str, params: Any) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                found = next((f for f in self.frames if predicate(f)), None)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"no such frame; got {self.frames[-5:]!r}")
            time.sleep(0.01)

    def reply(self, msg_id: int, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait(lambda f: f.get("id") == msg_id and "method" not in f, timeout)

    def initialize(self, options: dict[str, Any] | None = None, capabilities: Any = None) -> dict[str, Any]:
        msg_id = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": capabilities or {},
                "initializationOptions": options or {},
            },
        )
        result = self.reply(msg_id)
        self.notify("initialized", {})
        return result

    def diagnostics(self, uri: str) -> list[dict[str, Any]] | None:
        with self._lock:
            found = [
                f
                for f in self.frames
                if f.get("method") == "textDocument/publishDiagnostics" and f["params"]["uri"] == uri
            ]
        return found[-1]["params"]["diagnostics"] if found else None

    def wait_diagnostics(
        self, uri: str, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            diags = self.diagnostics(uri)
            if diags is not None and predicate(diags):
                return diags
            if time.monotonic() > deadline:
                raise AssertionError(f"diagnostics for {uri} never matched; last {diags!r}")
            time.sleep(0.02)

    def close(self) -> int | None:
        if self.proc.poll() is None:
            try:
                msg_id = self.request("shutdown", None)
                self.reply(msg_id, timeout=10)
                self.notify("exit", None)
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode
