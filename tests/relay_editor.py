"""A stand-in for VS Code with the Jupyter extension, as far as crane's kernel relay sees it, on a real
kernel: it answers ``crane/kernelRelay/execute`` and ``crane/kernelRelay/status`` the way
vscode-client/src/relay.ts does with ``kernel.executeCode``. The code goes out as vscode-jupyter's
``executeSilently`` sends it (``silent: false, store_history: false``), the outputs come back as VS Code
output items (stdout/stderr/error mimes, display data by mime), decoded as relay.ts decodes them; no
output within the start timeout means a cell runs ("busy"), and nothing is cancelled. Used by
tests/test_relay_transport.py and benchmarks/relay_kernel.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient

from crane_lsp.kernel.transport_relay import RELAY_EXECUTE, RELAY_STATUS

MIME_STDOUT = "application/vnd.code.notebook.stdout"
MIME_STDERR = "application/vnd.code.notebook.stderr"
MIME_ERROR = "application/vnd.code.notebook.error"


def vscode_outputs(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """An IOPub message as the Jupyter extension turns it into output items ({mime, data: bytes})."""
    kind, content = msg["msg_type"], msg["content"]
    if kind == "stream":
        mime = MIME_STDOUT if content["name"] == "stdout" else MIME_STDERR
        return [{"items": [{"mime": mime, "data": content["text"].encode()}]}]
    if kind == "error":
        stack = "\n".join(content["traceback"])
        error = {"name": content["ename"], "message": content["evalue"], "stack": stack}
        return [{"items": [{"mime": MIME_ERROR, "data": json.dumps(error).encode()}]}]
    if kind in ("display_data", "execute_result"):
        items = [
            {"mime": mime, "data": (value if isinstance(value, str) else json.dumps(value)).encode()}
            for mime, value in content["data"].items()
        ]
        return [{"items": items}]
    return []


def collect_outputs(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """relay.ts's collectOutputs, item for item."""
    result: dict[str, Any] = {"status": "ok", "stdout": "", "stderr": "", "outputs": []}
    for output in outputs:
        bundle = {}
        for item in output["items"]:
            text = item["data"].decode()
            if item["mime"] == MIME_STDOUT:
                result["stdout"] += text
            elif item["mime"] == MIME_STDERR:
                result["stderr"] += text
            elif item["mime"] == MIME_ERROR:
                parsed = json.loads(text)
                result.setdefault("error", {"ename": parsed["name"], "evalue": parsed["message"]})
            elif item["mime"].startswith("text/") or item["mime"] == "application/json":
                bundle[item["mime"]] = text
        if bundle:
            result["outputs"].append(bundle)
    return result


class FakeEditor:
    """VS Code with the Jupyter extension, as far as the relay sees it, on a real kernel."""

    def __init__(self, connection_file: str) -> None:
        self.client = AsyncKernelClient()
        self.client.load_connection_file(connection_file)
        self.status = "idle"  # what @jupyterlab/services follows: every status message on IOPub
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.executions: list[dict[str, Any]] = []  # execute_request contents sent to the kernel
        self._waiters: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._last_end = -1e9
        self.gone = False

    async def __aenter__(self) -> FakeEditor:
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=60)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        self.client.stop_channels()

    async def _read(self) -> None:
        while True:
            try:
                msg = await self.client.get_iopub_msg(timeout=0.5)
            except Exception:
                continue
            if msg["msg_type"] == "status":
                self.status = msg["content"]["execution_state"]
            queue = self._waiters.get(msg["parent_header"].get("msg_id", ""))
            if queue is not None:
                queue.put_nowait(msg)

    async def send_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The LSP client's side: what the extension answers (relay.ts)."""
        self.requests.append((method, params))
        if self.gone:
            return {"status": "noKernel", "message": f"no running kernel for {params['notebookUri']}"}
        if method == RELAY_STATUS:
            return {"status": self.status}
        assert method == RELAY_EXECUTE
        if self.status == "busy" and time.monotonic() - self._last_end > 1.0:
            for _ in range(8):  # relay.ts: a busy that does not settle within 400 ms is a cell
                await asyncio.sleep(0.05)
                if self.status != "busy":
                    break
            else:
                return {"status": "busy", "stdout": "", "stderr": "", "outputs": []}
        try:
            return await self._execute(params)
        finally:
            self._last_end = time.monotonic()

    async def _execute(self, params: dict[str, Any]) -> dict[str, Any]:
        content = {"silent": False, "store_history": False, "allow_stdin": False, "stop_on_error": False}
        self.executions.append({"code": params["code"], **content})
        msg = self.client.session.msg("execute_request", {"code": params["code"], **content})
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._waiters[msg["header"]["msg_id"]] = queue
        self.client.shell_channel.send(msg)
        outputs: list[dict[str, Any]] = []
        first = asyncio.get_running_loop().create_future()
        done = asyncio.get_running_loop().create_future()

        async def consume() -> None:  # to the end, whatever was answered (nothing is cancelled)
            while True:
                m = await queue.get()
                produced = vscode_outputs(m)
                outputs.extend(produced)
                if produced and not first.done():
                    first.set_result(None)
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    break
            self._waiters.pop(msg["header"]["msg_id"], None)
            done.set_result(None)

        task = asyncio.create_task(consume())
        task.add_done_callback(lambda t: None)
        try:
            await asyncio.wait_for(asyncio.shield(first), params["startTimeoutMs"] / 1000)
        except asyncio.TimeoutError:
            return {"status": "busy", "stdout": "", "stderr": "", "outputs": []}
        try:
            await asyncio.wait_for(asyncio.shield(done), params["timeoutMs"] / 1000)
        except asyncio.TimeoutError:
            return {**collect_outputs(outputs), "status": "timeout"}
        return collect_outputs(outputs)
