"""Per-column cost and coverage of the probe's DataFrame summary on a 5M x 20 mixed-dtype frame.

Run by hand: ``python3 benchmarks/probe_big_frame.py [repeats] [old_probe.py]``. Builds the frame
once in a real kernel (~10-20 s); for this probe (and an older one, e.g. ``git show
d7d96c6:crane_lsp/kernel/probe.py > /tmp/old.py``, the last single-file probe) prints, per snapshot
at object budgets 0.5 s down to 0.05 s (a small budget stands in for a loaded machine): in-kernel ms,
deadline_hit, which columns carry stats; then the unbudgeted cost of each column's stats.
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from conftest import start_test_kernel, stop_test_kernel
from probe_util import _user_expressions

from crane_lsp.kernel.agent.wire import DEFAULT_BUDGETS
from crane_lsp.kernel.probe_install import PROBE_SOURCE, call_expression, install_code
from crane_lsp.snapshot import ProbeQuery

SANDBOX = (Path(__file__).resolve().parents[1] / "crane_lsp/kernel/agent/dryrun/dryrun.py").read_text()

# object columns first, as in the measured notebook: they used to eat the budget of the cheap ones
FRAME = """
import numpy as np, pandas as pd
n = 5_000_000
rng = np.random.default_rng(0)
words = np.array(['alpha', 'beta', 'gamma', '12', '3.5', None], dtype=object)
cols = {}
cols['s0'] = words[rng.integers(0, 6, n)]
cols['s1'] = np.array([f'user{i}' for i in range(2000)], dtype=object)[rng.integers(0, 2000, n)]
for i in range(6):
    f = rng.random(n); f[::97] = np.nan; cols[f'f{i}'] = f
cols['s2'] = words[rng.integers(0, 6, n)]
cols['s3'] = words[rng.integers(0, 3, n)]
cols['b0'] = rng.random(n) < 0.3
cols['b1'] = rng.random(n) < 0.5
cols['c0'] = pd.Categorical.from_codes(rng.integers(0, 5, n), list('abcde'))
cols['c1'] = pd.Categorical.from_codes(rng.integers(-1, 3, n), list('xyz'))
cols['d0'] = pd.to_datetime(rng.integers(1_500_000_000, 1_600_000_000, n), unit='s')
cols['d1'] = pd.to_datetime(rng.integers(1_500_000_000, 1_600_000_000, n), unit='s')
cols['id'] = np.arange(n)
h = rng.random(n); h[rng.random(n) < 0.9] = np.nan; cols['nanheavy'] = h
cols['i0'] = rng.integers(0, 100, n)
cols['i1'] = rng.integers(-5, 5, n)
frame = pd.DataFrame(cols)
frame.iloc[::1000, frame.columns.get_loc('d0')] = pd.NaT
del cols, f, h, i
"""

PER_COLUMN = """(lambda p, df: [(str(df.columns[i]), str(df.dtypes.iloc[i]), round(1000 * (lambda t0: (
    p._series_stats(p._column_values(df, i), B, p._Clock(60, 60)), __import__('time').monotonic() - t0)[1])(
    __import__('time').monotonic()), 1)) for i in range(df.shape[1])])(
    __import__('sys').modules[MODULE], frame)"""

CHEAP = ("f", "b", "c", "d", "id", "nanheavy", "i")


def _snap(k, module: str, query: dict) -> dict:
    payload = ProbeQuery(**query).model_dump()
    answer = _user_expressions(k, "", {"snap": call_expression("snapshot", payload, module)}, 120)
    return answer["snap"]["data"]["application/json"]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    before = sys.argv[2] if len(sys.argv) > 2 else None  # path of an older probe.py to compare
    versions = {"after": PROBE_SOURCE}
    if before:
        versions = {"before": Path(before).read_text() + "\n\n" + SANDBOX, **versions}
    k = start_test_kernel()
    try:
        t0 = time.monotonic()
        k.run(FRAME, timeout=600)
        print(f"frame built in {time.monotonic() - t0:.1f} s")
        for label, source in versions.items():
            module = "_crane_probe_" + label
            _user_expressions(k, install_code(source, label, module), {}, 60)
            for budget in (0.5, 0.2, 0.1, 0.05):
                for sub in ([], ["frame['s1']", "frame['i1']"]):
                    query = {"names": ["frame"], "subscripts": sub, "object_budget_s": budget}
                    _snap(k, module, query)  # warm-up
                    for _ in range(repeats):
                        snap = _snap(k, module, query)
                        cols = snap["variables"]["frame"]["columns"]
                        missing = [c["name"] for c in cols if c.get("stats") is None]
                        cheap_missing = [m for m in missing if m.startswith(CHEAP)]
                        print(
                            f"{label:6} budget={budget:.2f}s subscripts={len(sub)}: "
                            f"{snap['elapsed_ms']:4.0f} ms, deadline_hit={snap['deadline_hit']!s:5}, "
                            f"{len(cols) - len(missing):2}/{len(cols)} with stats; missing {missing} "
                            f"(cheap: {cheap_missing})"
                        )
            budgets = f" {dict(DEFAULT_BUDGETS)!r},"
            per_column = PER_COLUMN.replace("MODULE", repr(module)).replace(" B,", budgets)
            costs = k.eval(per_column, timeout=600)
            costs_list = ast.literal_eval(costs)
            print(f"{label}: unbudgeted per-column ms {[(n, ms) for n, _, ms in costs_list]}")
            print(f"{label}: sum {sum(ms for _, _, ms in costs_list):.0f} ms")
    finally:
        stop_test_kernel(k)


if __name__ == "__main__":
    main()
