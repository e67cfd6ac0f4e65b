"""The kernel-side dry run in a REAL kernel: observes crashes in a forked copy and changes nothing."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TestKernel

from crane_lsp.kernel.probe_install import call_expression, install_code


def _dry_run(
    kernel: TestKernel, source: str, budget_s: float = 3.0, **extra: Any
) -> tuple[dict[str, Any], list[dict]]:
    """Run the probe's dry_run through the raw protocol; also return the IOPub messages seen meanwhile."""
    while kernel.client.iopub_channel.msg_ready():
        kernel.client.get_iopub_msg(timeout=1)
    expr = call_expression("dry_run", {"source": source, "budget_s": budget_s, **extra})
    msg_id = kernel.client.execute("", silent=True, store_history=False, user_expressions={"r": expr})
    reply = kernel._reply(msg_id, budget_s + 30)
    value = reply["content"]["user_expressions"]["r"]
    assert value["status"] == "ok", value
    iopub = []
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        try:
            iopub.append(kernel.client.get_iopub_msg(timeout=0.1))
        except Exception:
            continue
    return value["data"]["application/json"], iopub


@pytest.fixture(scope="module")
def sandboxed(kernel: TestKernel) -> TestKernel:
    msg_id = kernel.client.execute(install_code(), silent=True, store_history=False)
    assert kernel._reply(msg_id, 60)["content"]["status"] == "ok"
    kernel.run("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\nitems = [1, 2]\ncounter = 0")
    return kernel


def test_failing_cell_reports_exception_and_line(sandboxed: TestKernel) -> None:
    result, _ = _dry_run(sandboxed, "total = df['a'].sum()\nmissing = df['b']\nprint(missing)")
    assert result["outcome"] == "raised"
    assert result["exception"] == "KeyError"
    assert result["line"] == 2


def test_parent_state_unchanged_after_mutations_in_child(sandboxed: TestKernel) -> None:
    before = sandboxed.eval(
        "(df['a'].tolist(), items, counter, sorted(k for k in globals() if not k.startswith('_')))"
    )
    result, _ = _dry_run(
        sandboxed,
        "df['a'] = 0\ndf.drop(columns=['a'], inplace=True)\nitems.append(3)\ncounter = 99\nnew_name = 1",
    )
    assert result["outcome"] == "completed"
    after = sandboxed.eval(
        "(df['a'].tolist(), items, counter, sorted(k for k in globals() if not k.startswith('_')))"
    )
    assert after == before
    assert "new_name" not in after


def test_a_written_file_stays_in_the_copys_memory(sandboxed: TestKernel, tmp_path: Path) -> None:
    target = tmp_path / "written.csv"
    result, _ = _dry_run(sandboxed, f"df.to_csv({str(target)!r})\ndf['no such column']")
    assert (result["outcome"], result["exception"], result["line"]) == ("raised", "KeyError", 2), result
    assert any(f"openat({str(target)!r}) for writing" in n for n in result["notes"]), result
    assert not target.exists()
    missing = tmp_path / "no-such-folder" / "written.csv"  # the real crash: the folder is not there
    result, _ = _dry_run(sandboxed, f"open({str(missing)!r}, 'w')")
    assert (result["outcome"], result["exception"]) == ("raised", "FileNotFoundError"), result
    assert not missing.parent.exists()


def test_network_connection_from_child_fails(sandboxed: TestKernel) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        result, _ = _dry_run(
            sandboxed, f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)"
        )
        assert result["outcome"] == "blocked"
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()


def test_endless_cell_is_killed_at_budget_and_reaped(sandboxed: TestKernel) -> None:
    result, _ = _dry_run(sandboxed, "while True:\n    pass", budget_s=1.0)
    assert result["outcome"] == "timeout"
    pid = result["child_pid"]
    assert not os.path.exists(f"/proc/{pid}"), "the child must be killed and reaped (no zombie)"


def test_no_stream_output_reaches_iopub(sandboxed: TestKernel) -> None:
    result, iopub = _dry_run(sandboxed, "print('from the child')\nimport sys\nprint('err', file=sys.stderr)")
    assert result["outcome"] == "completed"
    streams = [m for m in iopub if m["msg_type"] == "stream"]
    assert streams == []


def test_large_array_is_shared_not_copied(sandboxed: TestKernel) -> None:
    sandboxed.run("import numpy as np\nbig = np.ones(128 * 1024 * 1024)  # 1 GiB of float64")
    try:
        result, _ = _dry_run(sandboxed, "s = big[:1000].sum()\nbig.shape[1]")
        assert result["outcome"] == "raised" and result["exception"] == "IndexError"
        assert "child_private_dirty_kb" not in result, "measured only when asked (it costs 10-25 ms)"
        result, _ = _dry_run(sandboxed, "s = big[:1000].sum()\nbig.shape[1]", measure_memory=True)
        assert result["outcome"] == "raised" and result["exception"] == "IndexError"
        assert result["child_private_dirty_kb"] is not None
        assert result["child_private_dirty_kb"] < 100 * 1024, "the child must not copy the 1 GiB array"
    finally:
        sandboxed.run("del big")


def test_cuda_initialised_gets_a_shape_level_dry_run(sandboxed: TestKernel) -> None:
    """torch's CUDA no longer refuses the dry run: its tensors are stood in by their shapes (standin.py;
    the flag the child reads, ``torch.cuda._initialized``, set here as CUDA would set it). A tensor on the
    CPU stays real there: its values are in the child's memory."""
    sandboxed.run("import torch\nsb_x = torch.ones(2, 3)\n_saved_init = torch.cuda._initialized")
    sandboxed.run("torch.cuda._initialized = True")
    try:
        result, _ = _dry_run(sandboxed, "v = sb_x.sum().item()\ny = sb_x @ sb_x")
    finally:
        sandboxed.run("torch.cuda._initialized = _saved_init\ndel _saved_init, sb_x")
    assert result["outcome"] == "raised" and result["exception"] == "RuntimeError", result
    assert result["line"] == 2 and result["standin"]["why"] == "cuda" and result["standin"]["names"] == []
    assert any("CUDA is initialised in the kernel" in n for n in result["notes"])
