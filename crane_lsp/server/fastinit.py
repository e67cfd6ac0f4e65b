"""Answer ``initialize`` before pygls is imported: an editor waits for that answer, and importing
pygls + lsprotocol alone takes 0.6-0.8 s here (several seconds on a loaded machine).

``serve_stdio_fast`` imports the server in a thread while the main thread reads the first frame
with the stdlib ``FrameReader``; if it is an ``initialize`` request with sane params, it answers at
once with the capabilities below, computed as pygls computes them for that client. Everything read
so far (that request included) then goes to the real server, which handles ``initialize`` as
usual; its own answer for that id is compared with the early one (a difference is logged) and not
sent again. Any other first message, or odd params, and the server answers everything itself.

``tests/test_server_fastinit.py`` checks these capabilities against pygls's for several editors'
client capabilities: a new handler or command must be added here too.
"""

from __future__ import annotations

import json
import select
import sys
import threading
from typing import Any, BinaryIO

from crane_lsp import __version__
from crane_lsp.server.framing import SETTLE_S, FrameReader

#: the commands ``handlers.register`` and ``jupyter_commands.register`` add, in that order
COMMANDS = [
    "crane.recheckCell",
    "crane.attachKernel",
    "crane.showPrompt",
    "crane.ignoreFinding",
    "crane.undoLastCell",
    "crane.cellChanges",
    "crane.previewCell",
    "crane.cellVerdict",
]
NOTEBOOK_SYNC = {
    "notebookSelector": [
        {"cells": [{"language": "python"}], "notebook": "jupyter-notebook"},
        {"cells": [{"language": "python"}], "notebook": "interactive"},
    ],
    "save": True,
}
_ENCODINGS = ("utf-8", "utf-16", "utf-32")
_CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"


def _get(obj: Any, *path: str) -> Any:
    for name in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(name)
    return obj


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The ``InitializeResult`` pygls builds for crane's server and these client capabilities."""
    caps = params.get("capabilities") or {}
    encoding = "utf-16"
    offered = _get(caps, "general", "positionEncodings")
    if isinstance(offered, list):
        encoding = next((e for e in offered if e in _ENCODINGS), encoding)
    sync: dict[str, Any] = {"openClose": True, "change": 2}
    for field in ("willSave", "willSaveWaitUntil"):  # pygls: ``client_value and registered``
        value = _get(caps, "textDocument", "synchronization", field)
        if value is not None:
            sync[field] = False if value else value
    sync["save"] = False
    capabilities: dict[str, Any] = {"positionEncoding": encoding, "textDocumentSync": sync}
    if caps.get("notebookDocument") is not None:
        capabilities["notebookDocumentSync"] = NOTEBOOK_SYNC
    capabilities.update(
        {
            "hoverProvider": True,
            "codeActionProvider": {"codeActionKinds": ["quickfix", "source"]},
            "executeCommandProvider": {"commands": list(COMMANDS)},
            "workspace": {
                "workspaceFolders": {"supported": True, "changeNotifications": True},
                "fileOperations": {},
            },
        }
    )
    return {"capabilities": capabilities, "serverInfo": {"name": "crane-lsp", "version": __version__}}


def early_answer(message: Any) -> tuple[Any, dict[str, Any]] | None:
    """(id, result) when ``message`` is an ``initialize`` request this module may answer."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if message.get("method") != "initialize":
        return None
    msg_id, params = message.get("id"), message.get("params")
    if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool) or not isinstance(params, dict):
        return None
    caps = params.get("capabilities")
    if not isinstance(caps, dict) or not all(isinstance(v, dict) or v is None for v in caps.values()):
        return None  # let pygls judge (and answer -32602 for) anything unusual
    process = params.get("processId")
    if process is not None and (not isinstance(process, int) or isinstance(process, bool)):
        return None
    for name in ("rootUri", "rootPath", "locale", "trace"):
        if params.get(name) is not None and not isinstance(params[name], str):
            return None
    if params.get("workspaceFolders") is not None and not isinstance(params["workspaceFolders"], list):
        return None
    return msg_id, initialize_result(params)


def frame(body: dict[str, Any]) -> bytes:
    data = json.dumps(body)
    return f"Content-Length: {len(data)}\r\nContent-Type: {_CONTENT_TYPE}\r\n\r\n{data}".encode()


def read_first_message(stdin: BinaryIO) -> tuple[bytes, Any]:
    """Everything read until the first complete message (or EOF), and that message (None if none).

    A frame still incomplete after ``SETTLE_S`` of quiet (a mis-sized one) is left to the server's
    reader, which knows how to resynchronise."""
    seen = bytearray()
    reader = FrameReader()
    while True:
        chunk: bytes = stdin.read1(1 << 16)  # type: ignore[attr-defined]
        if not chunk:
            return bytes(seen), None
        seen += chunk
        reader.feed(chunk)
        item = reader.next_message()
        if item is not None:
            return bytes(seen), item[1] if item[0] else None
        if reader.pending and not select.select([stdin], [], [], SETTLE_S)[0]:
            return bytes(seen), None


def serve_stdio_fast() -> None:
    """``protocol.serve_stdio``, with ``initialize`` answered while the server is still importing."""
    built: dict[str, Any] = {}

    def load() -> None:
        try:
            from crane_lsp.server import create, protocol

            built["modules"] = (create, protocol)
        except BaseException as exc:  # re-raised in the main thread
            built["error"] = exc

    loader = threading.Thread(target=load, name="crane-import", daemon=True)
    loader.start()
    stdin: BinaryIO = sys.stdin.buffer
    seen, first = read_first_message(stdin)
    answer = early_answer(first)
    if answer is not None:
        sys.stdout.buffer.write(frame({"jsonrpc": "2.0", "id": answer[0], "result": answer[1]}))
        sys.stdout.buffer.flush()
    loader.join()
    if "error" in built:
        raise built["error"]
    create, protocol = built["modules"]
    server = create.create_server()
    if answer is not None:
        server.protocol.answered_early = answer
    protocol.serve_stdio(server, prefix=seen)
