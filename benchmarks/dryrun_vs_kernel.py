"""The dry run at the kernel's speed? The same cells, in one sitting, in the kernel and in the dry run.

One real kernel (the probe installed, as crane installs it) holds a small state; each cell of a
class is run for real in the kernel and dry-run (probe ``dry_run``, the jail, cold or prepared),
alternately, ``--runs`` times each. Both runs execute the same instrumented source, which measures
the cell itself from the inside: wall time, CPU time (all threads), minor page faults (copy-on-write
shows up here), context switches, and the thread count at the end. The kernel keeps its figures in
a variable; the dry run raises them as its "crash" (the verdict's message carries them back), so no
new plumbing is needed and the jail's setup is not counted. Classes: CPU-bound NumPy (no BLAS),
BLAS (matmul, svd), scikit-learn fits (OpenMP, joblib, BLAS), pandas groupbys, matplotlib drawing
(Agg), many small file reads, plain Python.

Where the time goes, per class: ``wall x`` is the dry run's cell time over the kernel's (the aim
is at most 1.3 for CPU-bound cells); ``cpu x`` the same for CPU time: a wall ratio above the CPU
ratio is a cell waiting (fewer threads in the copy, or a niced child on a busy machine), a CPU
ratio above 1 is extra work (copy-on-write faults: ``flt``; seccomp/Landlock on hot calls: the
small-file class). The load average is printed with the figures: on a loaded machine the child,
niced, waits for a CPU.

    python benchmarks/dryrun_vs_kernel.py [--runs 5] [--prepared] [--only blas,sklearn] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

from crane_lsp.kernel.probe_install import call_expression, install_code

STATE = """
import numpy as np, pandas as pd, os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from sklearn.datasets import make_classification
rng = np.random.default_rng(0)
big = rng.random(3_000_000)
mat = rng.random((1200, 1200))
sq = rng.random((700, 700))
X, y = make_classification(n_samples=4000, n_features=20, random_state=0)
df = pd.DataFrame({"key": rng.integers(0, 5000, 1_000_000), "cat": rng.choice(list("abcdefgh"), 1_000_000),
                   "v": rng.random(1_000_000), "w": rng.random(1_000_000)})
folder = FOLDER
os.makedirs(folder, exist_ok=True)
paths = []
for i in range(2000):
    p = os.path.join(folder, f"f{i}.csv")
    if not os.path.exists(p):
        with open(p, "w") as f:
            f.write("a,b\\n" + "\\n".join(f"{j},{j * i}" for j in range(20)))
    paths.append(p)
"""

#: class -> cell (each about 0.2-1 s in the kernel on a laptop core)
CELLS: dict[str, str] = {
    "numpy": "s = np.sort(big)\nc = np.cumsum(big)\nm = (big[:, None] * 2.0 + 1.0).sum()",
    "blas-matmul": "for _ in range(3):\n    p = mat @ mat",
    "blas-svd": "u, s, vt = np.linalg.svd(sq)",
    "sklearn-forest": (
        "from sklearn.ensemble import RandomForestClassifier\n"
        "model = RandomForestClassifier(n_estimators=40, random_state=0).fit(X, y)"
    ),
    "sklearn-kmeans": "from sklearn.cluster import KMeans\nkm = KMeans(8, n_init=4, random_state=0).fit(X)",
    "sklearn-gp": (
        "from sklearn.gaussian_process import GaussianProcessRegressor\n"
        "gp = GaussianProcessRegressor(random_state=0).fit(X[:900], y[:900])"
    ),
    "sklearn-logreg": (
        "from sklearn.linear_model import LogisticRegression\nlr = LogisticRegression(max_iter=300).fit(X, y)"
    ),
    "pandas-groupby": (
        "g = df.groupby('key').agg(v=('v', 'mean'), w=('w', 'sum'))\n"
        "h = df.groupby(['cat', 'key'])['v'].median()"
    ),
    "matplotlib": (
        "fig, ax = plt.subplots()\nfor i in range(60):\n    ax.plot(big[i * 1000:(i + 1) * 1000] + i)\n"
        "fig.canvas.draw()\nplt.close(fig)"
    ),
    "small-files": "total = 0\nfor p in paths:\n    with open(p) as f:\n        total += len(f.read())",
    "python": "acc = 0\nfor i in range(1_500_000):\n    acc += i % 7",
}
CPU_BOUND = set(CELLS) - {"small-files"}
MARK = "CRANE-BENCH "

HEAD = """import time as _bk_time, resource as _bk_res, json as _bk_json, os as _bk_os
_bk_u0 = _bk_res.getrusage(_bk_res.RUSAGE_SELF)
_bk_w0, _bk_c0 = _bk_time.perf_counter(), _bk_time.process_time()
"""
TAIL = """
_bk_w1, _bk_c1 = _bk_time.perf_counter(), _bk_time.process_time()
_bk_u1 = _bk_res.getrusage(_bk_res.RUSAGE_SELF)
_bk_m = {"wall": _bk_w1 - _bk_w0, "cpu": _bk_c1 - _bk_c0, "minflt": _bk_u1.ru_minflt - _bk_u0.ru_minflt,
         "nvcsw": _bk_u1.ru_nvcsw - _bk_u0.ru_nvcsw, "nivcsw": _bk_u1.ru_nivcsw - _bk_u0.ru_nivcsw,
         "threads": len(_bk_os.listdir("/proc/self/task"))}
"""


def instrumented(cell: str, dry: bool) -> str:
    end = (
        f"raise RuntimeError({MARK!r} + _bk_json.dumps(_bk_m))" if dry else "_bk_last = _bk_json.dumps(_bk_m)"
    )
    return HEAD + cell + "\n" + TAIL + end


class Kernel:
    """A real kernel with the probe, driven through the raw protocol."""

    def __init__(self, cwd: str) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=cwd, env={**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.execute(install_code(), silent=True)

    def execute(
        self, code: str, silent: bool = False, expressions: dict[str, str] | None = None
    ) -> dict[str, Any]:
        msg_id = self.kc.execute(code, silent=silent, store_history=False, user_expressions=expressions or {})
        while True:
            msg = self.kc.get_shell_msg(timeout=600)
            if msg["parent_header"].get("msg_id") == msg_id:
                content: dict[str, Any] = msg["content"]
                if content["status"] != "ok":
                    raise RuntimeError(f"{content.get('ename')}: {content.get('evalue')}")
                return content

    def value(self, expr: str) -> Any:
        found = self.execute("", silent=True, expressions={"v": expr})["user_expressions"]["v"]
        if found["status"] != "ok":
            raise RuntimeError(found)
        return found["data"].get("application/json", found["data"].get("text/plain"))

    def real(self, cell: str) -> dict[str, float]:
        self.execute(instrumented(cell, dry=False))
        return json.loads(self.value("_bk_last").strip("'"))

    def dry(self, cell: str, budget: float, prepared: bool) -> tuple[dict[str, float], dict[str, Any]]:
        if prepared:
            self.value(call_expression("dry_run_prepare", {}))
        result = self.value(
            call_expression("dry_run", {"source": instrumented(cell, dry=True), "budget_s": budget})
        )
        message = result.get("message") or ""
        if result.get("outcome") != "raised" or MARK not in message:
            raise RuntimeError(f"the dry run gave no figures: {result.get('outcome')}: {message[:300]}")
        return json.loads(message.split(MARK, 1)[1]), result

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--budget", type=float, default=120.0, help="the dry run's budget (s): no timeout here"
    )
    parser.add_argument("--prepared", action="store_true", help="through a prepared child")
    parser.add_argument("--only", default="", help="comma-separated classes")
    parser.add_argument("--json", default="", help="write every figure here")
    args = parser.parse_args(argv)
    classes = [c for c in CELLS if not args.only or c in args.only.split(",")]
    work = tempfile.mkdtemp(prefix="crane-dryrun-vs-kernel-")
    kernel = Kernel(work)
    rows: dict[str, dict[str, Any]] = {}
    try:
        kernel.execute(STATE.replace("FOLDER", repr(os.path.join(work, "files"))))
        for name in classes:
            cell = CELLS[name]
            kernel.real(cell)  # warm-up: imports, caches, the kernel's own thread pools
            kernel.dry(cell, args.budget, args.prepared)
            real: list[dict[str, float]] = []
            dry: list[dict[str, float]] = []
            notes: list[str] = []
            for _ in range(args.runs):
                real.append(kernel.real(cell))
                figures, result = kernel.dry(cell, args.budget, args.prepared)
                dry.append(figures)
                notes = [n for n in result.get("notes") or [] if "thread" in n]
            rows[name] = {"real": real, "dry": dry, "notes": notes}
            print_row(name, real, dry)
    finally:
        kernel.close()
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; runs {args.runs}"
          f"{'; prepared child' if args.prepared else ''}")  # fmt: skip
    ratios = [med(rows[c]["dry"], "wall") / med(rows[c]["real"], "wall") for c in rows if c in CPU_BOUND]
    if ratios:
        print(
            f"CPU-bound classes: median wall ratio {statistics.median(ratios):.2f}, worst {max(ratios):.2f}"
        )
    for name, row in rows.items():
        if row["notes"]:
            print(f"{name}: {'; '.join(row['notes'])}")
            break
    if args.json:
        Path(args.json).write_text(json.dumps({"load": load, "cpus": os.cpu_count(), "rows": rows}, indent=1))
    return 0


def med(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def print_row(name: str, real: list[dict[str, float]], dry: list[dict[str, float]]) -> None:
    kw, dw = med(real, "wall"), med(dry, "wall")
    kc, dc = med(real, "cpu"), med(dry, "cpu")
    print(
        f"{name:15s} kernel {kw * 1000:8.1f} ms (cpu {kc * 1000:7.1f}, thr {med(real, 'threads'):3.0f}, "
        f"flt {med(real, 'minflt'):7.0f})  dry {dw * 1000:8.1f} ms (cpu {dc * 1000:7.1f}, "
        f"thr {med(dry, 'threads'):3.0f}, flt {med(dry, 'minflt'):7.0f}, ivcsw {med(dry, 'nivcsw'):5.0f})  "
        f"wall x{dw / kw:5.2f}  cpu x{dc / max(kc, 1e-6):5.2f}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
