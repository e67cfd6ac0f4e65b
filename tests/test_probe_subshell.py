"""The probe answers on a kernel subshell (another thread, no SIGALRM) while a cell runs on the main shell."""

from __future__ import annotations

import time
from typing import Any

from conftest import TestKernel
from probe_util import install_probe

from crane_lsp.kernel.probe_install import call_expression
from crane_lsp.snapshot import ProbeQuery, Snapshot


def _reply(kernel: TestKernel, channel: str, msg_id: str, timeout: float) -> dict[str, Any]:
    get = kernel.client.get_control_msg if channel == "control" else kernel.client.get_shell_msg
    deadline = time.monotonic() + timeout
    while True:
        msg = get(timeout=max(deadline - time.monotonic(), 0.01))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def test_probe_on_subshell_while_a_cell_sleeps(kernel: TestKernel) -> None:
    kernel.run(
        "import collections, pandas as pd\nclass H:\n    def __repr__(self):\n        while True: pass\n"
    )
    kernel.run("dq = collections.deque([H()])\ndf = pd.DataFrame({'a': [1, 2]})")
    install_probe(kernel)
    create = kernel.client.session.msg("create_subshell_request", {})
    kernel.client.control_channel.send(create)
    subshell_id = _reply(kernel, "control", create["header"]["msg_id"], 10)["content"]["subshell_id"]

    busy_id = kernel.client.execute("import time; time.sleep(4)")
    time.sleep(0.3)  # the main shell is now running the cell
    payload = ProbeQuery(names=["df", "dq"]).model_dump()
    msg = kernel.client.session.msg(
        "execute_request",
        {
            "code": "",
            "silent": True,
            "store_history": False,
            "user_expressions": {"snap": call_expression("snapshot", payload)},
            "allow_stdin": False,
        },
    )
    msg["header"]["subshell_id"] = subshell_id
    t0 = time.monotonic()
    kernel.client.shell_channel.send(msg)
    reply = _reply(kernel, "shell", msg["header"]["msg_id"], 10)
    elapsed = time.monotonic() - t0
    _reply(kernel, "shell", busy_id, 10)
    delete = kernel.client.session.msg("delete_subshell_request", {"subshell_id": subshell_id})
    kernel.client.control_channel.send(delete)
    _reply(kernel, "control", delete["header"]["msg_id"], 10)

    assert elapsed < 3, f"the probe waited for the running cell ({elapsed:.1f} s)"
    snap = Snapshot.model_validate(reply["content"]["user_expressions"]["snap"]["data"]["application/json"])
    assert snap.variables["df"].shape == [2, 1]
    assert snap.variables["dq"].repr == "<deque object>"  # no alarm off the main thread: repr not risked
