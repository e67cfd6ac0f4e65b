"""Python-level built-in checks against a REAL kernel: each crash really raises, each near miss runs."""

from __future__ import annotations

from typing import NamedTuple

import pytest
from check_util import assert_predicts, assert_silent_and_runs

from crane_lsp.analysis.parse import analyze
from crane_lsp.analysis.positions import Span
from crane_lsp.checks.registry import REGISTRY, Finding
from crane_lsp.checks.runner import load_checks, run_checks
from crane_lsp.snapshot import AttributeFact, Snapshot


class Case(NamedTuple):
    setup: str
    cell: str
    exception: str
    line: int
    near_setup: str  # a near miss: state and cell that run clean
    near_cell: str


CASES = {
    "name-undefined": Case(
        "a = 1", "b = a + 1\nprint(c)\n", "NameError", 1, "a = 1\nc = 2", "b = a + 1\nprint(c)\n"
    ),
    "name-defined-later": Case("", "print(z)\nz = 1\n", "NameError", 0, "", "z = 1\nprint(z)\n"),
    "np-float": Case(
        "import numpy as np",
        "x = 1\ny = np.float(x)\n",
        "AttributeError",
        1,
        "import numpy as np",
        "x = 1\ny = np.float64(x)\n",
    ),
    "df-append": Case(
        "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",
        "df2 = df.append(df)\n",
        "AttributeError",
        0,
        "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",
        "df2 = pd.concat([df, df])\n",
    ),
    "none-attribute": Case(
        "x = None", "y = 1\nx.shape\n", "AttributeError", 1, "x = None", "x = [1]\nx.append(2)\n"
    ),
    "class-attribute": Case(
        "class C:\n    a = 1", "C.b\n", "AttributeError", 0, "class C:\n    a = 1", "C.a\n"
    ),
    "module-missing": Case(
        "", "import json\nimport no_such_module_xyz\n", "ModuleNotFoundError", 1, "", "import json\n"
    ),
    "submodule-missing": Case(
        "",
        "from sklearn.cross_validation import train_test_split\n",
        "ModuleNotFoundError",
        0,
        "",
        "from sklearn.model_selection import train_test_split\n",
    ),
    "too-many-args": Case(
        "def f(a, b=1):\n    return a + b",
        "f(1, 2, 3)\n",
        "TypeError",
        0,
        "def f(a, b=1):\n    return a + b",
        "f(1, b=3)\n",
    ),
    "unknown-keyword": Case(
        "def f(a, b=1):\n    return a + b",
        "f(1, c=2)\n",
        "TypeError",
        0,
        "def f(a, **kw):\n    return a",
        "f(1, c=2)\n",
    ),
    "method-args": Case(
        "class M:\n    def fit(self, X):\n        return self\nm = M()",
        "m.fit(1, 2)\n",
        "TypeError",
        0,
        "class M:\n    def fit(self, X, y=None):\n        return self\nm = M()",
        "m.fit(1, 2)\n",
    ),
    "keyword-only": Case(
        "from sklearn.linear_model import LogisticRegression",
        "m = LogisticRegression('l2', False)\n",
        "TypeError",
        0,
        "from sklearn.linear_model import LogisticRegression",
        "m = LogisticRegression('l2', dual=False)\n",
    ),
    "df-shape-call": Case(
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
        "n = df.shape()\n",
        "TypeError",
        0,
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
        "n = df.shape\n",
    ),
    "int-call": Case("x = 5", "x()\n", "TypeError", 0, "def x():\n    return 5", "x()\n"),
    "read-csv-missing": Case(
        "import pandas as pd",
        "df = pd.read_csv('missing.csv')\n",
        "FileNotFoundError",
        0,
        "import pandas as pd\nopen('present.csv', 'w').write('a\\n1\\n')",
        "df = pd.read_csv('present.csv')\n",
    ),
    "open-missing": Case(
        "",
        "fh = open('nope.txt')\n",
        "FileNotFoundError",
        0,
        "",
        "!echo hi > made.txt\nfh = open('made.txt')\n",
    ),
    "dict-key": Case("d = {'a': 1}", "d['b']\n", "KeyError", 0, "d = {'a': 1}", "d['b'] = 2\nd['b']\n"),
    "list-index": Case("xs = [1, 2]", "xs[2]\n", "IndexError", 0, "xs = [1, 2]", "xs[-2]\n"),
    "iterate-none": Case(
        "x = None", "for v in x:\n    pass\n", "TypeError", 0, "x = None", "for v in x or []:\n    pass\n"
    ),
    "unpack-number": Case("n = 3", "a, b = n\n", "TypeError", 0, "n = (3, 4)", "a, b = n\n"),
    "unpack-length": Case("t = (1, 2, 3)", "a, b = t\n", "ValueError", 0, "t = (1, 2, 3)", "a, b, c = t\n"),
    "none-plus-int": Case("x = None", "y = x + 1\n", "TypeError", 0, "x = 2", "y = x + 1\n"),
    "literal-none-plus": Case("", "y = None + 1\n", "TypeError", 0, "", "y = 0 + 1\n"),
    "str-minus": Case("s = 'a'", "s -= 1\n", "TypeError", 0, "s = 'a'", "s *= 2\n"),
    "zero-division": Case(
        "n = 4",
        "r = n / 0\n",
        "ZeroDivisionError",
        0,
        "import numpy as np\nn = np.array([1.0])",
        "import warnings\nwarnings.simplefilter('ignore')\nr = n / 0\n",
    ),
    "syntax": Case("", "x = (1,\n", "SyntaxError", 0, "", "x = (1,)\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_crash_is_predicted_and_really_raised(kernel, case: str) -> None:
    c = CASES[case]
    assert_predicts(kernel, c.setup, c.cell, c.exception, c.line)


@pytest.mark.parametrize("case", sorted(CASES))
def test_near_miss_is_silent_and_really_runs(kernel, case: str) -> None:
    c = CASES[case]
    assert_silent_and_runs(kernel, c.near_setup, c.near_cell)


# Cells that run although a naive check would fire: the analysis must see why.
NEAR_MISSES = {
    "bound-in-branch": ("", "if True:\n    w = 1\nprint(w)\n"),
    "guarded-import": ("", "try:\n    import no_such_mod_q\nexcept ImportError:\n    pass\n"),
    "mutated-before": ("d = {'a': 1}", "d.update(b=2)\nd['b']\n"),
    "defaultdict": ("from collections import defaultdict\ndd = defaultdict(int)", "dd['x']\n"),
    "rebound": ("x = None", "x = 3\ny = x + 1\n"),
    "function-body-not-run": ("", "def g():\n    return missing_name_q\n"),
    "short-circuit": ("x = None", "y = x is not None and x.shape\n"),
    "timed-cell": ("a = 1", "%%time\nb = a + 1\n"),
    "shadowed-open": ("def open(path):\n    return path", "fh = open('nope.txt')\n"),
    "loop-created-key": ("d = {}", "for k in ['a']:\n    d[k] = 1\nd['a']\n"),
    "user-function-mutates": ("xs = [1, 2]\ndef grow(v):\n    v.append(3)", "grow(xs)\nxs[2]\n"),
    "suppressed": ("from contextlib import suppress\nd = {}", "with suppress(KeyError):\n    d['x']\n"),
}


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_code_the_analysis_must_follow(kernel, case: str) -> None:
    setup, cell = NEAR_MISSES[case]
    assert_silent_and_runs(kernel, setup, cell)


def test_first_finding_is_the_one_that_stops_the_cell(kernel) -> None:
    finding = assert_predicts(kernel, "d = {}\nx = None", "y = 1\nd['k']\nx + 1\n", "KeyError", 1)
    assert finding.check_id == "python.missing-key"
    assert finding.span == Span(1, 2, 1, 5)


def test_timed_cell_reports_body_lines(kernel) -> None:
    assert_predicts(kernel, "a = 1", "%%time\nb = a + 1\nprint(undefined_q)\n", "NameError", 2)


def test_a_crashing_check_does_not_hide_the_others() -> None:
    load_checks()

    def broken(facts, snap) -> list[Finding]:
        raise RuntimeError("bug in a check")

    REGISTRY.checks["test.broken"] = broken
    try:
        facts = analyze("x = 1\ny = undefined_q\n")
        findings = run_checks(facts, Snapshot(undefined=["undefined_q"]))
    finally:
        del REGISTRY.checks["test.broken"]
    assert [(f.check_id, f.exception, f.span.line) for f in findings] == [
        ("python.undefined-name", "NameError", 1)
    ]


def test_unknown_facts_mean_silence() -> None:
    facts = analyze("np.float(1)\nd['k']\nopen('f.txt')\nimport zzz\n")
    assert run_checks(facts, Snapshot()) == []
    # a probe that could not tell (exists=None) is not proof either
    snap = Snapshot(attributes={"np.float": AttributeFact(exists=None)}, modules={})
    assert run_checks(facts, snap) == []


LIBRARY_SETUP = """
import os, io, json, warnings
import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0, 1, 0, 1], "shape": [1, 2, 3, 4]})
X = df[["a"]].to_numpy()
y = df["b"].to_numpy()
cfg = {"lr": 0.1, 1: "one"}
items = [1, 2, 3]
"""

LIBRARY_CELL = """
m = np.mean(X, 0) + np.sqrt(4.0) + np.clip(X, 0, 1).sum()
z = np.concatenate([X, X], axis=0)
r = np.random.randint(0, 10, size=3)
w = np.where(y > 0, 1, 0)
lin = np.linspace(0, 1, 5)
zeros = np.zeros((2, 2), dtype=float)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=1, stratify=y)
model = LogisticRegression(C=1.0, max_iter=50).fit(X_tr, y_tr)
scaled = StandardScaler().fit_transform(X)
both = pd.concat([df, df], axis=1)
df2 = pd.DataFrame(X, columns=["a"])
col = df.shape[0] + len(df.columns) + df["shape"].sum()
buf = io.StringIO("a,b\\n1,2\\n")
read = pd.read_csv(buf, sep=",")
fig, ax = plt.subplots(1, 2, figsize=(4, 2))
plt.plot(lin, lin, "r-")
plt.close("all")
lr = cfg["lr"] * 2 + cfg[1].count("o")
first, *rest = items
a, b, c = items
total = items[2] + items[-3]
s = "x" * 3 + str(1) + "%d" % 5
q = json.dumps(cfg.get("missing", {}))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    e = np.array([1.0]) / 0
"""


def test_common_library_calls_stay_silent(kernel) -> None:
    assert_silent_and_runs(kernel, LIBRARY_SETUP, LIBRARY_CELL)


def test_values_passed_to_library_functions_stay_trusted(kernel) -> None:
    setup = "from sklearn.model_selection import train_test_split\nxs = [1, 2, 3, 4]"
    assert_predicts(kernel, setup, "a, b = train_test_split(xs, test_size=0.5)\nxs[4]\n", "IndexError", 1)
