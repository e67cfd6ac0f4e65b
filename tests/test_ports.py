"""The tests' free ports come from below the ephemeral range, where no outgoing connection takes them."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.ports import LOWEST, ephemeral_start, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_can_be_bound() -> None:
    top = ephemeral_start()
    ports = {free_port() for _ in range(20)}
    assert len(ports) > 1, "picked at random, so that test workers rarely pick the same"
    if top - LOWEST >= 1_000:
        assert all(LOWEST <= p < top for p in ports), (ports, top)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.pop()))


def test_the_ephemeral_range_is_read_and_has_a_default(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ephemeral_start(tmp_path / "range") == 40_000
    assert ephemeral_start(tmp_path / "missing") == 32_768
    (tmp_path / "garbled").write_text("")
    assert ephemeral_start(tmp_path / "garbled") == 32_768
