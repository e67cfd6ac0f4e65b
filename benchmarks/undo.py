"""What undo costs (issue 37): the cell slowed by the held copy, the memory it holds, the undo's time.

A real kernel holds one float64 array of 100 MB, then 1 GB. A cell rewrites 10%, 50% or 100% of it in
place (``a[:k] += 1``) and is undone. For each, with undo off and on:
- the cell's own time for the rewrite (measured inside the cell): with a copy held, each page the
  cell writes first faults and is copied (copy-on-write);
- the execute round trip as a client sees it (with undo on it includes the fork at ``pre_execute``
  when no prepared child was there: the benchmark never prepares one, so this is the worst case);
- the held copy's private dirty memory after the cell (``smaps_rollup``: the pages it now owns);
- the undo: the kernel-side milliseconds (fingerprints, the array pickled out of band through the
  copy's pipe, written back in place) and the client's round trip; and that the array is exact again.

Run by hand: ``python benchmarks/undo.py [--sizes-mb 100 1000] [--runs 3]``. Needs about 3x the
largest size free. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from jupyter_client.manager import KernelManager

from crane_lsp.kernel.probe_install import call_expression, install_code

HELD_PID = "__import__('sys').modules['_crane_probe']._uh_state['held'].child.pid"


class Kernel:
    def __init__(self) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel()
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str) -> dict[str, Any]:
        reply = self.kc.execute_interactive(code, timeout=600, output_hook=lambda msg: None)
        content: dict[str, Any] = reply["content"]
        if content["status"] != "ok":
            raise RuntimeError(f"{content['ename']}: {content['evalue']}")
        return content

    def eval(self, expr: str) -> Any:
        msg_id = self.kc.execute("", silent=True, store_history=False, user_expressions={"v": expr})
        while True:
            msg = self.kc.get_shell_msg(timeout=600)
            if msg["parent_header"].get("msg_id") == msg_id:
                value = msg["content"]["user_expressions"]["v"]
                if value["status"] != "ok":
                    raise RuntimeError(value)
                data = value["data"]
                return data.get("application/json", data.get("text/plain"))

    def call(self, function: str, payload: dict[str, Any]) -> Any:
        return self.eval(call_expression(function, payload))

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def private_dirty_mb(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one(k: Kernel, fraction: float, undo: bool) -> dict[str, float]:
    cell = (
        "import time as _bt\n_bs = _bt.perf_counter()\n"
        f"a[: int(len(a) * {fraction})] += 1\n"
        "bench_ms = (_bt.perf_counter() - _bs) * 1000"
    )
    started = time.perf_counter()
    k.run(cell)
    out = {"round_trip_ms": (time.perf_counter() - started) * 1000, "cell_ms": float(k.eval("bench_ms"))}
    if undo:
        out["held_mb"] = private_dirty_mb(int(k.eval(HELD_PID)))
        started = time.perf_counter()
        answer = k.call("undo_last_cell", {})
        out["undo_client_ms"] = (time.perf_counter() - started) * 1000
        assert "a" in answer.get("restored", []), answer
        out["undo_ms"] = answer["ms"]
        out.update({f"undo_{k}_ms": v for k, v in answer["phases_ms"].items()})
        assert k.eval("bool((a == 1.0).all())") == "True", "the array is not exact after the undo"
    else:
        k.run(f"a[: int(len(a) * {fraction})] -= 1\ndel bench_ms, _bs, _bt")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    k = Kernel()
    try:
        k.run(install_code())
        k.run("import numpy as np")
        for size in args.sizes_mb:
            k.run(f"a = np.ones({size} * 2**20 // 8)")
            for fraction in args.fractions:
                rows: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
                for _ in range(args.runs):
                    for mode in ("off", "on"):
                        k.call("undo_configure", {"on": mode == "on", "reserve_mb": 256, "hold_s": 600})
                        rows[mode].append(one(k, fraction, mode == "on"))
                med = {
                    m: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for m, rs in rows.items()
                }
                off, on = med["off"], med["on"]
                ratio = on["cell_ms"] / max(off["cell_ms"], 1e-3)
                print(
                    f"{size:5d} MB, rewrite {fraction:4.0%}: cell {off['cell_ms']:7.1f} -> "
                    f"{on['cell_ms']:7.1f} ms (x{ratio:.2f}); round trip {off['round_trip_ms']:7.1f} -> "
                    f"{on['round_trip_ms']:7.1f} ms; held copy {on['held_mb']:7.1f} MB; "
                    f"undo {on['undo_ms']:7.1f} ms in the kernel "
                    f"(fingerprints {on['undo_fingerprints_ms']:.1f}, "
                    f"fetch {on['undo_fetch_ms']:.1f}, apply {on['undo_apply_ms']:.1f}), "
                    f"{on['undo_client_ms']:7.1f} ms round trip"
                )
            k.run("del a")
    finally:
        k.call("undo_configure", {"on": False})
        k.close()


if __name__ == "__main__":
    main()
