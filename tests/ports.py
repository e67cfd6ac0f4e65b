"""Free TCP ports for the tests' servers and kernels, taken from below the ephemeral range.

A port found by binding port 0 comes from the ephemeral range, the range every outgoing connection
takes its local port from. Between finding such a port and a server (or a kernel) binding it, any
connection on the machine can take it, and the server ends with "Address already in use": CI lost
a module's kernel that way. Ports below that range are never handed out to connections. One is
picked at random (so that test workers rarely pick the same) and checked free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: the lowest port picked: above the ports that well-known services listen on
LOWEST = 20_000
_pick = random.SystemRandom()  # independent of any seed a test sets


def ephemeral_start(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> int:
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, outside the ephemeral range where the range leaves room."""
    top = ephemeral_start()
    if top - LOWEST < 1_000:  # an unusual range: fall back to what the system hands out
        with socket.socket() as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    for _ in range(200):
        port = _pick.randrange(LOWEST, top)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {LOWEST} and {top} after 200 tries")
