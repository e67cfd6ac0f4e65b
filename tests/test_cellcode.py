"""Cell analysis: pure unit tests of ``analysis.parse.analyze`` (no kernel)."""

from __future__ import annotations

import ast

import pytest

from crane_lsp.analysis.facts import UNTRUSTED_ALL, UNTRUSTED_FILES, UNTRUSTED_MODULES
from crane_lsp.analysis.parse import analyze
from crane_lsp.analysis.positions import Span
from crane_lsp.snapshot import ProbeQuery


def names(facts, *, guarded: bool | None = None) -> list[str]:
    return [r.name for r in facts.reads if guarded is None or r.guarded == guarded]


def test_reads_in_order_and_defines_with_value_text() -> None:
    f = analyze("x = df['a'] + k\ny = x * 2\nprint(z)\n")
    assert names(f) == ["df", "k", "print", "z"]
    assert [(d.name, d.value_text) for d in f.defines] == [("x", "df['a'] + k"), ("y", "x * 2")]
    assert f.reads[0].span == Span(0, 4, 0, 6)
    assert f.reads[3].span == Span(2, 6, 2, 7)


def test_read_before_rebinding_counts() -> None:
    f = analyze("x = x + 1\nx\n")
    assert names(f) == ["x"]
    assert f.reads[0].span.line == 0


def test_function_bodies_are_deferred_and_locals_ignored() -> None:
    f = analyze("def f(a, *b, c=d0, **k):\n    t = a + g\n    return t + h\nf(1)\n")
    assert names(f) == ["d0", "g", "h"]
    assert {r.name: r.guarded for r in f.reads} == {"d0": False, "g": True, "h": True}
    assert [d.name for d in f.defines] == ["f"]


def test_global_in_function_and_class_scope() -> None:
    f = analyze("def f():\n    global G\n    G = 1\nclass C:\n    n = 3\n    m = n + base\n")
    assert "G" not in names(f)
    assert names(f) == ["base"]
    assert [d.name for d in f.defines] == ["f", "C"]


def test_comprehension_and_lambda_scopes() -> None:
    f = analyze(
        "r = [x + off for x in xs if x > lim]\ng = lambda v: v + w\ns = {k: v for k, v in d.items()}\n"
    )
    assert names(f) == ["xs", "lim", "off", "w", "d"]  # execution order: the condition runs first
    guarded = {r.name: r.guarded for r in f.reads}
    assert guarded == {"xs": False, "off": True, "lim": True, "w": True, "d": False}


def test_branches_and_loops_make_names_maybe_bound() -> None:
    f = analyze("if c:\n    a = 1\nprint(a)\nfor i in range(2):\n    t = i\nprint(t, i)\n")
    by = {r.name: r for r in f.reads}
    assert by["a"].maybe_bound and not by["a"].guarded
    assert by["t"].maybe_bound and by["i"].maybe_bound
    # inside the loop body the loop variable is always bound: no read of i there
    assert [r.span.line for r in f.reads if r.name == "i"] == [5]
    assert [d.guarded for d in f.defines] == [True, True, True]


def test_loop_body_reads_of_names_bound_later_in_the_body() -> None:
    f = analyze("for _ in range(n):\n    total = total + 1\n")
    assert f.reads[-1].name == "total" and f.reads[-1].maybe_bound and f.reads[-1].guarded
    # over a non-empty literal range the first pass certainly runs: not guarded, but still maybe bound
    f = analyze("for _ in range(3):\n    total = total + 1\n")
    assert f.reads[-1].name == "total" and f.reads[-1].maybe_bound and not f.reads[-1].guarded


def test_first_pass_of_a_loop_over_known_items_is_certain() -> None:
    f = analyze("for c in ['a', 'b']:\n    print(x)\n    if c:\n        break\n    print(y)\n")
    assert [(r.name, r.guarded) for r in f.reads if r.name in "xy"] == [("x", False), ("y", True)]
    assert all(r.guarded for r in analyze("for c in []:\n    print(x)\n").reads if r.name == "x")


def test_try_boolop_ifexp_are_guarded() -> None:
    f = analyze("try:\n    a.b\nexcept E:\n    pass\nx and x.y\nq if p else r\n")
    guarded = [(r.name, r.guarded) for r in f.reads]
    assert guarded == [
        ("a", True),
        ("E", True),
        ("x", False),
        ("x", True),
        ("p", False),
        ("q", True),
        ("r", True),
    ]


def test_attribute_chains_keep_the_outermost_only() -> None:
    f = analyze("np.random.rand(3)\nobj.a.b = 1\nf().x\n")
    assert [c.text for c in f.chains] == ["np.random.rand", "obj.a.b"]
    rand = f.chains[0]
    assert rand.span == Span(0, 0, 0, 14)
    assert rand.attr_span == Span(0, 10, 0, 14)
    assert f.chains[1].is_store


def test_subscripts_with_literal_keys() -> None:
    src = (
        "df['price']\ndf[['a', 'b']]\ndf.loc['x']\ndf.iloc[0]\nd[0]['k']\n"
        "df['new'] = 1\ndf[col]\ndel d['z']\n"
    )
    f = analyze(src)
    texts = [(s.text, s.is_store, s.accessor) for s in f.subscripts]
    assert texts == [
        ("df['price']", False, None),
        ("df[['a', 'b']]", False, None),
        ("df.loc['x']", False, "loc"),
        ("df.iloc[0]", False, "iloc"),
        ("d[0]", False, None),
        ("d[0]['k']", False, None),
        ("df['new']", True, None),
        ("d['z']", False, None),
    ]
    assert f.subscripts[-1].is_del
    assert f.subscripts[0].key_span == Span(0, 3, 0, 10)
    assert f.subscripts[2].base == "df" and f.subscripts[5].base == "d"


def test_calls_with_arguments() -> None:
    f = analyze("model.fit(X, y=df.target, epochs=3, *rest)\n")
    call = f.calls[0]
    assert (call.func, call.receiver, call.method) == ("model.fit", "model", "fit")
    assert [(a.keyword, a.text, a.name, a.is_literal, a.literal, a.starred) for a in call.args] == [
        (None, "X", "X", False, None, False),
        (None, "rest", "rest", False, None, True),
        ("y", "df.target", "df.target", False, None, False),
        ("epochs", "3", None, True, 3, False),
    ]
    assert call.func_span == Span(0, 0, 0, 9)
    assert call.keyword("epochs") is not None and call.keyword("nope") is None


def test_literal_paths_for_readers_only() -> None:
    src = (
        "pd.read_csv('data/train.csv')\nopen('a.txt')\nopen('out.txt', 'w')\nnp.load(file='x.npy')\n"
        "os.listdir('imgs')\nImage.open('p.png')\ncv2.imread('q.jpg')\npd.read_csv('https://x/y.csv')\n"
        "json.loads('not a path')\n"
    )
    f = analyze(src)
    assert [p for p, _ in f.paths] == ["data/train.csv", "a.txt", "x.npy", "imgs", "p.png", "q.jpg"]
    assert f.paths[0][1] == Span(0, 12, 0, 28)


def test_imports() -> None:
    f = analyze(
        "import numpy as np, os.path\n"
        "from sklearn.model_selection import train_test_split as tts\nfrom . import m\n"
    )
    assert [(i.module, i.names, i.alias, i.level) for i in f.imports] == [
        ("numpy", (), "np", 0),
        ("os.path", (), None, 0),
        ("sklearn.model_selection", ("train_test_split",), None, 0),
        ("", ("m",), None, 1),
    ]
    assert [d.name for d in f.defines] == ["np", "os", "tts", "m"]
    modules = f.probe_query_fields()["modules"]
    assert modules == ["numpy", "os", "os.path", "sklearn", "sklearn.model_selection"]


def test_magics_map_back_to_original_positions() -> None:
    src = "%matplotlib inline\nx = !ls\ndf.head()\n  \n!pip install foo\nprint(y)\n"
    f = analyze(src)
    assert "get_ipython()" in f.python
    assert names(f) == ["df", "print", "y"]
    assert f.reads[0].span == Span(2, 0, 2, 2)
    assert f.reads[2].span == Span(5, 6, 5, 7)
    assert [d.name for d in f.defines] == ["x"]
    assert all(c.func != "get_ipython" for c in f.calls)
    assert f.untrusted_from[UNTRUSTED_FILES] == 1
    assert f.untrusted_from[UNTRUSTED_MODULES] == 4
    assert UNTRUSTED_ALL not in f.untrusted_from  # %matplotlib is harmless


def test_line_magic_columns_clamp_to_the_original_line() -> None:
    f = analyze("y = %time f(x)\nz = w\n")
    assert f.defines[0].span == Span(0, 0, 0, 1)
    for d in f.defines:
        assert d.span.end_col <= len(f.source.split("\n")[d.span.line])


def test_cell_magics_time_body_is_analysed_other_magics_are_not() -> None:
    f = analyze("%%time\nx = df.a\ny = x + q\n")
    assert f.magic == "time"
    assert names(f) == ["df", "q"]
    assert f.reads[0].span == Span(1, 4, 1, 6)
    assert f.chains[0].attr_span == Span(1, 7, 1, 8)
    g = analyze("%%bash\necho $x\n")
    assert g.magic == "bash" and not g.analyzed and g.reads == []
    assert g.untrusted_from[UNTRUSTED_FILES] == 0


def test_syntax_error_is_reported_not_raised() -> None:
    f = analyze("a = 1\nb = (a +\n")
    assert f.syntax_error is not None and "never closed" in f.syntax_error
    assert f.syntax_error_span is not None and f.syntax_error_span.line == 1
    g = analyze("x = = 2")
    assert g.syntax_error and g.syntax_error_span == Span(0, 4, 0, 5)


def test_unicode_columns_are_characters() -> None:
    f = analyze("s = 'é' + y\n")
    assert f.reads[0].span == Span(0, 10, 0, 11)


def test_untrusted_from_rebinding_keeps_the_right_hand_side_trusted() -> None:
    f = analyze("df = df.drop(columns=['a'])\ndf['b']\n")
    assert f.untrusted_from["df"] == 0
    rhs = f.reads[0].span
    assert f.is_trusted("df", rhs)
    assert not f.is_trusted("df", f.subscripts[0].span)


def test_untrusted_from_mutations() -> None:
    src = (
        "a.append(1)\n"  # 0 mutating method
        "b.drop(columns=['x'], inplace=True)\n"  # 1 inplace
        "b2.drop(columns=['x'])\n"  # 2 not in place: trusted
        "c.attr = 2\n"  # 3 attribute store
        "d['k'] = 3\n"  # 4 subscript store
        "e += 1\n"  # 5 augmented
        "helper(f1)\n"  # 6 passed to a user function
        "print(g1)\n"  # 7 passed to a pure builtin: trusted
        "del h\n"  # 8
        "for _ in range(2):\n"  # 9
        "    i1.pop()\n"  # 10 loop body: from the loop start
        "next(it)\n"  # 11
    )
    f = analyze(src)
    u = f.untrusted_from
    assert (u["a"], u["b"], u["c"], u["d"], u["e"], u["f1"], u["h"], u["i1"], u["it"]) == (
        0,
        1,
        3,
        4,
        5,
        6,
        8,
        9,
        11,
    )
    assert "b2" not in u and "g1" not in u
    assert u[UNTRUSTED_FILES] == 6  # an unknown function may write files


def test_calling_a_cell_function_untrusts_what_it_uses() -> None:
    f = analyze("def clean():\n    df.dropna(inplace=True)\n    return cfg\nclean()\ndf['a']\n")
    assert f.untrusted_from["df"] == 3 and f.untrusted_from["cfg"] == 3
    assert not f.is_trusted("df", f.subscripts[-1].span)


def test_exec_and_unknown_magics_untrust_everything() -> None:
    f = analyze("x = 1\nexec('y = 2')\nz\n")
    assert f.untrusted_from[UNTRUSTED_ALL] == 1
    assert not f.is_trusted("anything", (2, 0)) and f.is_trusted("anything", (0, 0))
    g = analyze("%run other.py\nz\n")
    assert g.untrusted_from[UNTRUSTED_ALL] == 0


def test_file_writers_untrust_files() -> None:
    f = analyze("df.to_csv('out.csv')\npd.read_csv('out.csv')\n")
    assert f.untrusted_from[UNTRUSTED_FILES] == 0
    g = analyze("pd.read_csv('in.csv')\n")
    assert UNTRUSTED_FILES not in g.untrusted_from


def test_with_binding_is_untrusted_inside_the_body() -> None:
    f = analyze("with open('f') as fh:\n    fh.read()\n")
    assert not f.is_trusted("fh", f.chains[0].span)


def test_operations_for_type_checks() -> None:
    f = analyze("a = None + 1\nfor v in n:\n    pass\np, q = val\nr = x / 0\n")
    kinds = [
        (o.kind, o.op, o.left.text if o.left else None, o.right.text if o.right else None)
        for o in f.operations
    ]
    assert kinds == [
        ("binop", "+", "None", "1"),
        ("iter", None, "n", None),
        ("unpack", None, "val", None),
        ("binop", "/", "x", "0"),
    ]
    assert f.operations[2].n_targets == 2


def test_probe_query_fields_validate_as_probe_query() -> None:
    f = analyze(
        "import pandas as pd\nx = df['price'].mean() + len(y.shape)\nm.fit(X)\nnp.load('a.npy')\nprint(z)\n"
    )
    fields = f.probe_query_fields()
    query = ProbeQuery(**fields)
    # builtins are queried only where a check relies on them (``open``) or the reachability proof
    # does (``len``, ``print``): a kernel that shadows one is then noticed
    assert query.names == ["df", "len", "y", "m", "X", "np", "print", "z"]
    assert query.chains == ["y.shape", "m.fit", "np.load"]  # the probe answers each prefix too
    assert query.subscripts == ["df['price']"]
    assert query.paths == ["a.npy"]
    assert query.modules == ["pandas"]


def test_row_labels_for_the_probe() -> None:
    f = analyze(
        "df.drop([10472], inplace=True)\nx = df.loc['q']\ny = df.loc[[1, 2.0, True, 'a']]\n"
        "z = df.at[5, 'a']\ndf.loc['new'] = 1\nd.train.drop(index=7)\nw = s.loc[1.5, 'c']\n"
        "fresh = make()\nfresh.drop(3)\nt = df.loc[float('nan')]\nu = df['a'].loc[9]\n"
    )
    fields = f.probe_query_fields()
    # stores, bools, non-literals, cell-made objects and subscripted targets are left out
    assert fields["index_labels"] == {"df": ["q", 1, 2.0, "a", 5, 10472], "s": [1.5], "d.train": [7]}
    assert type(ProbeQuery(**fields).index_labels["df"][2]) is float  # 2.0 stays a float


def test_analysis_never_raises_on_odd_input() -> None:
    for src in [
        "",
        "\n\n",
        "%%",
        "%",
        "!",
        "?",
        "x?",
        "def",
        "\x00",
        "a = 1\n" * 3000,
        "(" * 500 + ")" * 500,
    ]:
        facts = analyze(src)
        assert facts.source == src


def test_with_bodies_are_guarded_unless_the_context_lets_errors_through() -> None:
    f = analyze("with suppress(KeyError):\n    d['x']\nwith open('f') as fh, torch.no_grad():\n    e['y']\n")
    assert [(s.text, s.guarded) for s in f.subscripts] == [("d['x']", True), ("e['y']", False)]


def test_indented_cell_and_capture_magic() -> None:
    f = analyze("    x = y\n    z = w\n")
    assert f.syntax_error is None
    assert [(r.name, r.span) for r in f.reads] == [("y", Span(0, 8, 0, 9)), ("w", Span(1, 8, 1, 9))]
    g = analyze("%%capture out\nx = d['k']\n")
    assert g.magic == "capture" and g.subscripts[0].text == "d['k']" and g.subscripts[0].span.line == 1


def test_refined_trusts_arguments_of_library_functions_only() -> None:
    f = analyze("a = split(X, y)\nclean(df)\nX.shape\n")
    assert (f.untrusted_from["X"], f.untrusted_from["df"]) == (0, 1)
    g = f.refined(lambda name: name == "split")
    assert "X" not in g.untrusted_from and g.untrusted_from["df"] == 1
    assert g.is_trusted("X", (2, 0)) and not f.is_trusted("X", (2, 0))
    assert UNTRUSTED_FILES in g.untrusted_from  # clean() may still write files


@pytest.mark.parametrize(
    "cell",
    [
        '    x = 1\n    y = frame["zz"]\n',  # IPython removes the common indentation before parsing
        '%%time\nx = 1\ny = frame["zz"]\n',  # the body is parsed below a blank line
        'x = 1  # é\ny = "é" + frame["zz"]\n',  # ast columns are UTF-8 bytes
    ],
)
def test_the_walk_and_the_scan_share_one_coordinate_map(cell: str) -> None:
    facts = analyze(cell)
    tree = facts.tree()
    assert tree is not None
    sub = next(n for n in ast.walk(tree) if isinstance(n, ast.Subscript))
    (scanned,) = facts.subscripts
    assert facts.span(sub) == scanned.span
    line = cell.split("\n")[scanned.span.line]
    assert line[scanned.span.col : scanned.span.end_col] == 'frame["zz"]'


def test_the_cell_is_parsed_once() -> None:
    facts = analyze("x = 1\ny = x + 1\n")
    assert facts.tree() is facts.tree() is not None
    assert facts.refined(lambda name: True).tree() is facts.tree()
