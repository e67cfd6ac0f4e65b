"""The kernel-side probe in a real ipykernel: one test per plain/pandas kind, facts, hostility, no trace."""

from __future__ import annotations

import re
import time

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

from crane_lsp.render import render_snapshot

SETUP = """
import numpy as np, pandas as pd, collections, functools
df = pd.DataFrame({
    'price': [1.5, 2.0, None, 4.0],
    'qty': ['1', '2', 'three', None],
    'flag': [0, 1, 1, 0],
    'cat': pd.Categorical(['a', 'b', 'a', 'b']),
    'when': pd.to_datetime(['2020-01-01', '2020-01-02', None, '2020-01-04']),
})
ser = pd.Series([0, 1, 1, 0, 1], name='target')
idx = pd.Index(['x', 'y', 'z'])
arr = np.array([[1.0, np.nan], [3.0, 4.0]])
vec = np.arange(1000) % 7
scalar0d = np.float64(2.5)
d = {'a': 1, 'b': [1, 2], 3: 'x'}
dd = collections.defaultdict(list, {'k': [1]})
lst = [1, 'two', 3.0]
tup = (64, 32)
st = {1, 2, 3}
text = 'hello world'
n_int, n_float, flag, nothing, cplx, raw = 42, 0.5, True, None, 1j, b'abc'
def func(a, b=2, *args, c, **kw):
    return a
part = functools.partial(func, 1)
class Thing:
    def __init__(self, x=1):
        self.x = x
thing = Thing()
gen = (i for i in range(10))
"""


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    install_probe(kernel)
    return kernel


def test_dataframe_columns_and_stats(k: TestKernel) -> None:
    snap = snapshot(k, {"names": ["df"]})
    df = snap.variables["df"]
    assert df.kind == "dataframe" and df.shape == [4, 5] and df.n_columns == 5
    assert [c.name for c in df.columns or []] == ["price", "qty", "flag", "cat", "when"]
    cols = {c.name: c for c in df.columns or []}
    assert cols["price"].dtype == "float64"
    price = cols["price"].stats
    assert price is not None and price.has_nan and price.nan_count == 1 and (price.min, price.max) == (1.5, 4)
    qty = cols["qty"].stats
    assert qty is not None and qty.has_nan is True and qty.non_numeric_examples == ["'three'"]
    flag = cols["flag"].stats
    assert flag is not None and flag.value_kind == "binary" and flag.distinct == 2 and flag.has_nan is False
    cat = cols["cat"].stats
    assert cols["cat"].dtype == "category" and cat is not None and cat.value_kind == "binary"
    when = cols["when"].stats
    assert (
        when is not None
        and when.value_kind == "datetime"
        and when.has_nan
        and when.min == "2020-01-01 00:00:00"
    )
    assert df.index_dtype == "int64" and df.index_range == [0, 3] and df.index_names == [None]


def test_max_columns_and_subscripted_columns_get_stats(k: TestKernel) -> None:
    k.run("wide = pd.DataFrame({f'c{i}': range(5) for i in range(30)})")
    snap = snapshot(k, {"names": ["wide"], "subscripts": ["wide['c25']"], "max_columns": 3})
    wide = snap.variables["wide"]
    with_stats = [c.name for c in wide.columns or [] if c.stats is not None]
    assert with_stats == ["c0", "c1", "c2", "c25"]
    assert len(wide.columns or []) == 30
    col = snap.variables["wide['c25']"]
    assert col.kind == "series" and col.shape == [5] and col.stats and col.stats.distinct == 5


def test_series_index_ndarray(k: TestKernel) -> None:
    snap = snapshot(k, {"names": ["ser", "idx", "arr", "vec", "scalar0d"]})
    ser = snap.variables["ser"]
    assert ser.kind == "series" and ser.dtype == "int64" and ser.shape == [5]
    assert ser.stats and ser.stats.value_kind == "binary" and ser.stats.distinct == 2
    idx = snap.variables["idx"]
    assert idx.kind == "index" and idx.length == 3 and idx.stats and idx.stats.distinct == 3
    arr = snap.variables["arr"]
    assert arr.kind == "ndarray" and arr.shape == [2, 2] and arr.dtype == "float64"
    assert arr.stats and arr.stats.has_nan and arr.stats.min == 1 and arr.stats.max == 4
    vec = snap.variables["vec"]
    assert vec.stats and vec.stats.value_kind == "categorical" and vec.stats.distinct == 7
    scalar = snap.variables["scalar0d"]
    assert scalar.kind == "float" and scalar.value in ("np.float64(2.5)", "2.5")  # numpy 2 / numpy 1.26


def test_index_membership_of_row_labels(k: TestKernel) -> None:
    k.run(
        "ix_int = pd.DataFrame({'v': [1, 2, 3]}, index=[10, 11, 13])\n"
        "ix_float = pd.Series([1, 2], index=[5.0, 6.5])\n"
        "ix_dup = pd.DataFrame({'v': [1, 2]}, index=['x', 'x'])\n"
        "ix_multi = pd.Series([1, 2], index=pd.MultiIndex.from_tuples([('a', 1), ('b', 2)]))\n"
        "ix_dates = pd.Series([1], index=pd.to_datetime(['2020-01-01']))\n"
        "class Key:\n"
        "    calls = 0\n"
        "    def __hash__(self):\n"
        "        Key.calls += 1\n"
        "        return 1\n"
        "ix_objs = pd.Series([1, 2], index=pd.Index([Key(), 'x'], dtype=object))\n"
    )
    labels = {
        "ix_int": [10, 12, 10.0, "10"],
        "ix_float": [5, 6.5, 6],
        "df": [4, 0, "0"],  # RangeIndex 0..3
        "ix_dup": ["x", "q"],
        "ix_multi": ["a"],
        "ix_dates": ["2020-01-01", "q"],
        "ix_objs": ["x"],
        "idx": ["x"],  # an Index itself has no .index: not answered
    }
    snap = snapshot(k, {"names": list(labels), "index_labels": labels})
    v = snap.variables
    assert v["ix_int"].index_has == {"10": True, "12": False, "10.0": True, "'10'": False}
    assert v["ix_float"].index_has == {"5": True, "6.5": True, "6": False}  # 5 in Index([5.0]) is True
    assert v["df"].index_has == {"4": False, "0": True, "'0'": False}
    # non-unique, MultiIndex, datetime-like (partial string keys) and user objects: unknown
    assert v["ix_dup"].index_has == {"'x'": None, "'q'": None}
    assert v["ix_multi"].index_has == {"'a'": None}
    assert v["ix_dates"].index_has == {"'2020-01-01'": None, "'q'": None}
    assert v["ix_objs"].index_has == {"'x'": None}
    assert v["idx"].index_has is None
    assert k.run("assert Key.calls == 0, Key.calls")["status"] == "ok"  # no user __hash__ ran
    assert "index lacks 12" in render_snapshot(snap)


def test_containers_and_scalars(k: TestKernel) -> None:
    names = ["d", "dd", "lst", "tup", "st", "text", "n_int", "n_float", "flag", "nothing", "cplx", "raw"]
    v = snapshot(k, {"names": names}).variables
    assert v["d"].kind == "dict" and v["d"].length == 3 and v["d"].keys == ["'a'", "'b'", "3"]
    assert v["dd"].kind == "dict" and v["dd"].keys == ["'k'"]
    assert (
        v["lst"].kind == "list" and v["lst"].length == 3 and v["lst"].element_types == ["int", "str", "float"]
    )
    assert v["tup"].kind == "tuple" and v["tup"].repr == "(64, 32)"
    assert v["st"].kind == "set" and v["st"].length == 3
    assert v["text"].kind == "str" and v["text"].value == "hello world" and v["text"].length == 11
    assert (v["n_int"].kind, v["n_int"].value) == ("int", "42")
    assert (v["n_float"].kind, v["n_float"].value) == ("float", "0.5")
    assert (v["flag"].kind, v["flag"].value) == ("bool", "True")
    assert v["nothing"].kind == "none" and v["cplx"].kind == "complex" and v["raw"].length == 3


def test_short_list_values(k: TestKernel) -> None:
    """A short list/tuple of plain str/int/float items is reported item by item (what a ``for`` loop over it
    binds); anything else, a longer one, or privacy mode: no ``values``."""
    k.run(
        "lv_cols = ['Age', 'Fare', 7, 2.5]\nlv_tup = ('a',)\nlv_long = ['x'] * 51\n"
        "lv_mixed = ['a', True]\nlv_nan = [float('nan')]\nlv_obj = ['a', object()]"
    )
    names = ["lv_cols", "lv_tup", "lv_long", "lv_mixed", "lv_nan", "lv_obj"]
    v = snapshot(k, {"names": names}).variables
    assert v["lv_cols"].values == ["Age", "Fare", 7, 2.5]
    assert [type(x) for x in v["lv_cols"].values] == [str, str, int, float]
    assert v["lv_tup"].values == ["a"]
    assert all(v[n].values is None for n in ("lv_long", "lv_mixed", "lv_nan", "lv_obj"))
    private = snapshot(k, {"names": names, "privacy": True}).variables
    assert all(private[n].values is None for n in names)


def test_privacy_omits_values(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["text", "df"], "privacy": True}).variables
    assert v["text"].value is None
    cols = {c.name: c for c in v["df"].columns or []}
    assert cols["price"].stats and cols["price"].stats.examples is None


def test_callables_classes_modules_generators(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["func", "part", "Thing", "thing", "np", "gen"]}).variables
    func = v["func"]
    assert func.kind == "function" and func.signature == "(a, b=2, *args, c, **kw)"
    assert [(p.name, p.kind, p.has_default) for p in func.params or []] == [
        ("a", "POSITIONAL_OR_KEYWORD", False),
        ("b", "POSITIONAL_OR_KEYWORD", True),
        ("args", "VAR_POSITIONAL", False),
        ("c", "KEYWORD_ONLY", False),
        ("kw", "VAR_KEYWORD", False),
    ]
    assert v["part"].kind == "function"
    assert v["Thing"].kind == "class" and v["Thing"].signature == "(x=1)"
    assert v["thing"].kind == "other" and v["thing"].repr == "<Thing object>"
    assert v["np"].kind == "module" and v["np"].module == "numpy"
    assert v["gen"].kind == "generator"


def test_attribute_facts(k: TestKernel) -> None:
    snap = snapshot(
        k,
        {
            "chains": [
                "df.append",
                "df.price",
                "df.shape",
                "np.float",
                "np.random.rand",
                "thing.x",
                "thing.y",
            ],
        },
    )
    a = snap.attributes
    assert a["df.append"].exists is False and a["df.append"].owner_kind == "dataframe"
    assert a["df.price"].exists is True  # pandas column attribute access
    assert a["df.shape"].exists is True and "df.shape" not in snap.variables  # a property: never read
    assert a["np.float"].exists is False and a["np.float"].dynamic  # numpy's __getattr__ raises for it
    assert a["np.random"].exists is True and a["np.random.rand"].exists is True
    assert snap.variables["np.random.rand"].kind == "function"
    assert a["thing.x"].exists is True and snap.variables["thing.x"].value == "1"
    assert a["thing.y"].exists is False
    text = render_snapshot(snap)
    assert "attributes that do not exist: df.append, np.float, thing.y" in text


def test_bound_method_signature_drops_self(k: TestKernel) -> None:
    k.run("class Model:\n    def fit(self, X, y=None):\n        return self\nm = Model()")
    snap = snapshot(k, {"chains": ["m.fit"]})
    assert snap.attributes["m.fit"].exists is True
    assert snap.variables["m.fit"].signature == "(X, y=None)"


def test_subscripts_only_where_pure(k: TestKernel) -> None:
    snap = snapshot(
        k, {"subscripts": ["d['a']", "d['missing']", "lst[-1]", "lst[9]", "df['qty']", "df['nope']"]}
    )
    v = snap.variables
    assert v["d['a']"].value == "1"
    assert v["lst[-1]"].kind == "float"
    # a text column: object under pandas 2, str (the new default string dtype) under pandas 3
    assert v["df['qty']"].kind == "series" and v["df['qty']"].dtype in ("object", "str")
    for absent in ("d['missing']", "lst[9]", "df['nope']"):
        assert absent not in v


def test_undefined_paths_modules_versions(k: TestKernel, tmp_path_factory: pytest.TempPathFactory) -> None:
    cwd = k.eval("__import__('os').getcwd()").strip("'")
    open(f"{cwd}/data.csv", "w").close()
    snap = snapshot(
        k,
        {
            "names": ["df", "not_defined_anywhere", "len"],
            "paths": ["data.csv", "missing.csv"],
            "modules": [
                "numpy",
                "no_such_module_xyz",
                "os.path",
                "pandas.no_such",
                "sklearn.cross_validation",
            ],
        },
    )
    assert snap.undefined == ["not_defined_anywhere"]
    assert snap.paths == {"data.csv": True, "missing.csv": False}
    assert snap.modules["numpy"] is True and snap.modules["no_such_module_xyz"] is False
    assert snap.modules["os.path"] is True and snap.modules["pandas.no_such"] is False
    assert snap.modules["sklearn.cross_validation"] is False
    assert "numpy" in snap.imported and "pandas" in snap.imported and "ipykernel" not in snap.imported
    assert snap.versions and "pandas" in snap.versions.packages and snap.cwd == cwd
    assert snap.generation == int(k.eval("get_ipython().execution_count"))


HOSTILE = """
import time as _t
class Hostile:
    def __len__(self): raise ValueError('len')
    def __repr__(self): _t.sleep(30)
    def __str__(self): return self.__str__()
    def __getattr__(self, name): _t.sleep(30)
    def __eq__(self, other): raise RuntimeError('eq')
    __hash__ = object.__hash__
    @property
    def prop(self): _t.sleep(30)
class SleepyDataset:
    pass
hostile = Hostile()
hostile_list = [hostile, 1]
hostile_dict = {'h': hostile}
class BadList(list):
    def __len__(self): raise ValueError
    def __iter__(self): raise ValueError
bad_list = BadList([1, 2])
def hdefault(x=hostile): pass
obj_array = np.empty(2, dtype=object)
obj_array[0] = hostile
class HashBomb:
    def __hash__(self): _t.sleep(30)
    def __eq__(self, other): _t.sleep(30)
    def __repr__(self): _t.sleep(30)
    def __float__(self): _t.sleep(30)
class Label:
    def __str__(self): _t.sleep(30)
    def __repr__(self): _t.sleep(30)
bomb_series = pd.Series([HashBomb(), 'a', None], dtype=object)
bomb_frame = pd.DataFrame([[1, 2]], columns=pd.Index([Label(), 'ok'], dtype=object))
"""


def test_hostile_objects_never_run(k: TestKernel) -> None:
    k.run(HOSTILE)
    t0 = time.monotonic()
    snap = snapshot(
        k,
        {
            "names": [
                "hostile",
                "hostile_list",
                "hostile_dict",
                "bad_list",
                "hdefault",
                "obj_array",
                "n_int",
                "bomb_series",
                "bomb_frame",
            ],
            "chains": ["hostile.prop", "hostile.anything", "hostile.prop.deeper"],
            "subscripts": ["hostile_dict['h']"],
        },
    )
    assert time.monotonic() - t0 < 3
    v = snap.variables
    assert v["hostile"].repr == "<Hostile object>" and v["hostile"].kind == "other"
    assert v["hostile_list"].element_types == ["Hostile", "int"] and v["hostile_list"].repr is None
    assert v["hostile_dict"].keys == ["'h'"]
    assert v["hostile_dict['h']"].repr == "<Hostile object>"
    assert v["bad_list"].length == 2
    assert v["hdefault"].signature == "(x=<Hostile object>)"
    assert v["obj_array"].kind == "ndarray" and v["obj_array"].shape == [2]
    assert v["n_int"].value == "42"  # the others did not spoil the snapshot
    bomb = v["bomb_series"].stats
    assert bomb and bomb.distinct is None and bomb.has_nan is True  # values were never hashed
    assert bomb.non_numeric_examples == ["<HashBomb object>", "'a'"]
    assert [c.name for c in v["bomb_frame"].columns or []] == ["<Label object>", "ok"]
    assert snap.attributes["hostile.prop"].exists is True
    assert snap.attributes["hostile.anything"].exists is None and snap.attributes["hostile.anything"].dynamic
    assert snap.attributes["hostile.prop.deeper"].exists is None


def test_sleeping_repr_of_trusted_container_hits_deadline(k: TestKernel) -> None:
    k.run("dq = collections.deque([hostile])")
    t0 = time.monotonic()
    snap = snapshot(k, {"names": ["dq", "text"], "object_budget_s": 0.3})
    elapsed = time.monotonic() - t0
    assert elapsed < 2, elapsed
    assert snap.variables["dq"].error == "deadline" and snap.variables["dq"].repr == "<deque object>"
    assert snap.deadline_hit is True
    assert snap.variables["text"].value == "hello world"


TRACE_STATE = """(
    sorted(k for k in get_ipython().user_ns if not k.startswith('_i')),
    repr(get_ipython().user_ns.get('_')), len(Out), len(In), get_ipython().execution_count,
    __import__('random').getstate()[1][:5], __import__('numpy').random.get_state()[1][:5].tolist(),
    df.to_dict(), d, lst, sorted(__import__('sys').modules),
)"""


def test_probe_leaves_no_trace_and_imports_nothing(k: TestKernel) -> None:
    k.run("import random\ngen2 = (i for i in range(10))\nnext(gen2)\nit = iter([1, 2, 3])\nnext(it)\n'last'")
    before = k.eval(TRACE_STATE)
    snap = snapshot(
        k,
        {
            "names": [
                "df",
                "ser",
                "idx",
                "arr",
                "vec",
                "d",
                "dd",
                "lst",
                "tup",
                "st",
                "text",
                "func",
                "part",
                "Thing",
                "thing",
                "np",
                "gen",
                "gen2",
                "it",
                "hostile",
                "random",
                "nope",
            ],
            "chains": [
                "df.append",
                "np.float",
                "np.random.rand",
                "np.linalg.norm",
                "thing.x",
                "gen2.gi_frame",
            ],
            "subscripts": ["df['qty']", "d['a']", "lst[0]"],
            "paths": ["x.csv"],
            "modules": ["sklearn.linear_model", "torch", "scipy.stats", "no_such"],
        },
    )
    assert k.eval(TRACE_STATE) == before
    text = render_snapshot(snap)  # every kind renders
    # pandas 2 names the class pandas.core.frame.DataFrame, pandas 3 pandas.DataFrame
    assert re.search(r"df: pandas(\.core\.frame)?\.DataFrame \| shape \(4, 5\)", text), text
    assert "gen2: generator" in text
    assert k.eval("next(gen2), next(it)") == "(1, 2)"
