"""A shortened run's helper that outlives its dry run (a slow fork or teardown on a busy machine) must
never write into a descriptor number the kernel has meanwhile given to something else, and the
helper's pipes are closed once its last user is done. In a real kernel: the helper's child is made
slower than the dry run's wait for it (the agent's ``_sb_cold`` wrapped, in this kernel only), the
dry run answers, the kernel opens new pipes (which take the lowest free numbers, those just closed
by a careless finish), and nothing may arrive in them when the straggler ends."""

from __future__ import annotations

import time

import pytest
from conftest import TestKernel

from crane_lsp.kernel.probe_install import call_expression, install_code

pytestmark = pytest.mark.timeout(120)

STRAGGLE_S = 8.0  # longer than the dry run waits for its helper (budget + 5 s)

SLOW_CHILDREN = f"""
import sys
_p = sys.modules['_crane_probe']
_real_cold = _p._sb_cold
def _slow_cold(payload, started, compiled):
    import time
    if payload.get('_shorten'):  # a shortened run's child: it straggles, then does not run
        time.sleep({STRAGGLE_S})
        return _p._DryRunResult({{'outcome': 'completed', 'message': 'stood in'}})
    return _real_cold(payload, started, compiled)
_p._sb_cold = _slow_cold
"""

OPEN_FDS = "len(__import__('os').listdir('/proc/self/fd'))"


def _dry_run(kernel: TestKernel, payload: dict[str, object]) -> dict[str, object]:
    expr = call_expression("dry_run", payload)
    msg_id = kernel.client.execute("", silent=True, store_history=False, user_expressions={"r": expr})
    value = kernel._reply(msg_id, 60)["content"]["user_expressions"]["r"]
    assert value["status"] == "ok", value
    answer: dict[str, object] = value["data"]["application/json"]
    return answer


def test_a_straggling_helper_writes_into_no_reused_descriptor(kernel: TestKernel) -> None:
    msg_id = kernel.client.execute(install_code(), silent=True, store_history=False)
    assert kernel._reply(msg_id, 60)["content"]["status"] == "ok"
    kernel.run(SLOW_CHILDREN + "del sys")  # _p: the wrapper reads it
    fds_before = int(kernel.eval(OPEN_FDS))
    answer = _dry_run(
        kernel,
        {
            "source": "for i in range(10**10):\n    pass",
            "budget_s": 1.0,
            "shorten": {"after_s": 0.1, "stop_full": True},
        },
    )
    assert answer["outcome"] == "timeout", answer
    shortened = answer.get("shortened")
    assert isinstance(shortened, dict) and not shortened.get("error"), shortened  # it did straggle
    # new pipes take the lowest free numbers: those of the helper's pipes, had they been closed
    kernel.run("import os as _os\n_fresh = [_os.pipe() for _ in range(8)]")
    time.sleep(STRAGGLE_S)  # the straggler ends (it would signal its pipes now)
    arrived = kernel.eval(
        "[_os.read(_r, 64) if __import__('select').select([_r], [], [], 0)[0] else b'' for _r, _ in _fresh]"
    )
    assert arrived == "[" + ", ".join(["b''"] * 8) + "]", f"a straggler wrote into a reused pipe: {arrived}"
    kernel.run("for _r, _w in _fresh: _os.close(_r); _os.close(_w)\ndel _fresh, _os")
    deadline = time.monotonic() + 10
    while int(kernel.eval(OPEN_FDS)) > fds_before and time.monotonic() < deadline:
        time.sleep(0.2)  # the last user closes the pipes (and the stragglers' children are reaped)
    assert int(kernel.eval(OPEN_FDS)) <= fds_before, "the helper's pipes were never closed"
    kernel.run("_p._sb_cold = _real_cold\ndel _p, _real_cold, _slow_cold")
