"""A held snapshot against a real kernel: kept while nothing runs, dropped the moment the state moves.

The link under test is the server's (``KernelLink`` with a ``SnapshotReuse``); "another client" is the
test kernel's own blocking client, as a second frontend (JupyterLab, VS Code's variable view) would be.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import TestKernel

from crane_lsp.kernel import snapshot_reuse
from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.snapshot_reuse import SnapshotReuse
from crane_lsp.snapshot import ProbeQuery, Snapshot

STATE = """
import pandas as pd
a = 1
df = pd.DataFrame({'x': [1, 2, 3], 'y': ['p', 'q', 'r']})
def helper(v):
    return v + a
items = [1, 2, 3]
"""


class Spy:
    """The link's stamped snapshot, recording each query the kernel was asked (our own code, not faked)."""

    def __init__(self, link: KernelLink) -> None:
        self.link = link
        self.asked: list[ProbeQuery] = []
        self._real = link.snapshot_stamped
        link.snapshot_stamped = self._stamped  # type: ignore[method-assign]

    async def _stamped(self, query: ProbeQuery, timeout: float | None = None) -> tuple[Snapshot, int | None]:
        self.asked.append(query)
        return await self._real(query, timeout)


@pytest.fixture
async def linked(
    fresh_kernel: TestKernel, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[TestKernel, KernelLink, SnapshotReuse, Spy]]:
    # a loaded machine may take seconds between two probes of a test: only the state decides here
    monkeypatch.setattr(snapshot_reuse, "REUSE_WINDOW_S", 300.0)
    await asyncio.to_thread(fresh_kernel.run, STATE)
    link = await KernelLink.connect(fresh_kernel.connection_file)
    try:
        yield fresh_kernel, link, SnapshotReuse(), Spy(link)
    finally:
        await link.close()


def _value(snap: Snapshot, name: str) -> Any:
    summary = snap.variables[name]
    return summary.value if summary.value is not None else summary.shape


QUERY = ProbeQuery(names=["a", "df"], chains=["df.x"], subscripts=["df['y']"], paths=["nowhere.csv"])


async def test_a_keystroke_asks_only_for_what_it_adds_and_gets_what_a_fresh_probe_gets(linked: Any) -> None:
    _k, link, reuse, spy = linked
    first = await reuse.snapshot(link, QUERY)
    assert (reuse.full, reuse.reused) == (1, 0)
    same = await reuse.snapshot(link, QUERY)  # a keystroke that changes nothing the probe reads
    grown = ProbeQuery(names=["a", "df", "helper", "missing_name"], chains=["df.x", "df.nope"])
    more = await reuse.snapshot(link, grown)  # a keystroke that reads more
    assert (reuse.full, reuse.reused) == (1, 2)
    assert spy.asked[1].names == [] and spy.asked[1].chains == [] and spy.asked[1].paths == []
    assert spy.asked[2].names == ["helper", "missing_name"] and spy.asked[2].chains == ["df.nope"]
    assert "df" in spy.asked[2].known and "a" in spy.asked[2].known
    fresh = await link.snapshot(grown)  # what the kernel itself answers for the grown query
    for snap in (same, more):
        assert snap.generation == first.generation
    assert same.variables == first.variables and same.paths == {"nowhere.csv": False}
    assert set(more.variables) == set(fresh.variables) and more.undefined == fresh.undefined == [
        "missing_name"
    ]
    assert more.attributes == fresh.attributes and more.attributes["df.nope"].exists is False
    for name in fresh.variables:  # the same summaries (a function's free global ``a`` included)
        assert more.variables[name].model_dump(exclude={"stats"}) == fresh.variables[name].model_dump(
            exclude={"stats"}
        ), name
    assert "a" in more.variables and more.variables["helper"].free_globals == ["a"]


async def test_a_hover_or_completion_of_another_client_keeps_it(linked: Any) -> None:
    """Inspect (hover), complete and kernel_info requests run nothing of the user's."""
    k, link, reuse, _spy = linked
    await reuse.snapshot(link, QUERY)
    for send in (
        lambda: k.client.inspect("df", 2),
        lambda: k.client.complete("df.", 3),
        k.client.kernel_info,
    ):
        msg_id = send()
        await asyncio.to_thread(k._reply, msg_id, 30)
    await asyncio.sleep(0.2)
    await reuse.snapshot(link, QUERY)
    assert (reuse.full, reuse.reused) == (1, 1)


async def test_a_cell_of_another_client_drops_it(linked: Any) -> None:
    k, link, reuse, _spy = linked
    assert _value(await reuse.snapshot(link, QUERY), "a") == "1"
    await asyncio.to_thread(k.run, "a = 2")
    # asked at once, before the link's reader may have seen the cell: the probe's own stamp decides
    assert _value(await reuse.snapshot(link, QUERY), "a") == "2"
    assert (reuse.full, reuse.reused) == (2, 0)


async def test_a_silent_execute_of_another_client_drops_it(linked: Any) -> None:
    """A variable explorer's silent execute changes the state without moving the execution count."""
    k, link, reuse, _spy = linked
    before = await reuse.snapshot(link, QUERY)
    msg_id = k.client.execute("a = 3; df['z'] = 0", silent=True, store_history=False)
    assert (await asyncio.to_thread(k._reply, msg_id, 30))["content"]["status"] == "ok"
    await link.wait_idle(10)  # else it is asked beside the execute's last moments, on a subshell
    after = await reuse.snapshot(link, QUERY)
    assert after.generation == before.generation  # the count did not move: only the stamp tells
    assert _value(after, "a") == "3" and after.variables["df"].shape == [3, 3]
    assert (reuse.full, reuse.reused) == (2, 0)


async def test_a_comm_message_of_another_client_drops_it(linked: Any) -> None:
    """A widget's message runs its handlers in the kernel: the state may have moved."""
    k, link, reuse, _spy = linked
    await reuse.snapshot(link, QUERY)
    msg = k.client.session.msg("comm_msg", {"comm_id": "no-such-comm", "data": {}})
    k.client.shell_channel.send(msg)
    await asyncio.to_thread(_wait_idle_of, k, msg["header"]["msg_id"])
    await reuse.snapshot(link, QUERY)
    assert (reuse.full, reuse.reused) == (2, 0)


async def test_a_restart_drops_it(linked: Any) -> None:
    k, link, reuse, _spy = linked
    await reuse.snapshot(link, QUERY)
    await asyncio.to_thread(k.manager.restart_kernel, now=True)
    await asyncio.to_thread(k.client.wait_for_ready, timeout=60)
    await asyncio.to_thread(k.run, "a = 'after restart'")
    snap = await reuse.snapshot(link, QUERY)
    assert _value(snap, "a") == "after restart" and "df" in snap.undefined
    assert (reuse.full, reuse.reused) == (2, 0) and link.restarts >= 1


async def test_other_budgets_or_a_running_cell_ask_in_full(linked: Any) -> None:
    k, link, reuse, _spy = linked
    await reuse.snapshot(link, QUERY)
    await reuse.snapshot(link, QUERY.model_copy(update={"privacy": True}))
    assert (reuse.full, reuse.reused) == (2, 0)
    cell = k.client.execute("import time; time.sleep(1.5); a = 4")
    await asyncio.sleep(0.4)
    if link.supports_subshells:  # beside the cell: answered, never held or served from what is held
        assert link.busy
        await reuse.snapshot(link, QUERY.model_copy(update={"privacy": True}))
        assert reuse.held is None and reuse.reused == 0
    await asyncio.to_thread(k._reply, cell, 30)
    await link.wait_idle(10)
    assert _value(await reuse.snapshot(link, QUERY), "a") == "4"


def _wait_idle_of(k: TestKernel, msg_id: str, timeout: float = 30) -> None:
    while True:
        msg = k.client.get_iopub_msg(timeout=timeout)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            return


async def test_a_new_subscript_reads_a_held_frame_again_only_for_columns_it_lacks(linked: Any) -> None:
    _k, link, reuse, spy = linked
    narrow = ProbeQuery(names=["df"], max_columns=1)  # stats for x only
    first = await reuse.snapshot(link, narrow)
    assert [c.stats is not None for c in first.variables["df"].columns or []] == [True, False]
    misspelt = await reuse.snapshot(link, narrow.model_copy(update={"subscripts": ["df['nope']"]}))
    assert spy.asked[-1].names == [] and "df" in spy.asked[-1].known  # nothing more to read in df
    assert misspelt.variables["df"] == first.variables["df"]
    wanted = await reuse.snapshot(link, narrow.model_copy(update={"subscripts": ["df['y']"]}))
    assert spy.asked[-1].names == ["df"] and "df" not in spy.asked[-1].known
    assert all(c.stats is not None for c in wanted.variables["df"].columns or [])
    assert (reuse.full, reuse.reused) == (1, 2)


async def test_it_serves_no_longer_than_its_window(linked: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What changes with no message at all (a thread of the user's) is seen once the window ends."""
    _k, link, reuse, _spy = linked
    monkeypatch.setattr(snapshot_reuse, "REUSE_WINDOW_S", 0.5)
    await reuse.snapshot(link, QUERY)
    await asyncio.sleep(0.6)
    await reuse.snapshot(link, QUERY)
    assert (reuse.full, reuse.reused) == (2, 0)
