"""PySpark in a real kernel (``master local[1]``, one JVM per module): schema without a job, missing
columns as ``AnalysisException``, the dry run refused, a hung, dead or stopped JVM bounded."""

from __future__ import annotations

import os
import shutil
import signal
import time
from typing import Any

import pytest

import crane_lsp.checks.frames  # noqa: F401  (registers the check)
from crane_lsp.kernel.probe_install import call_expression
from tests.lib_checks_util import Case, verify
from tests.probe_util import _user_expressions, install_probe, snapshot

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("no Java runtime (Debian openjdk-17-jre-headless)", allow_module_level=True)

SPARK = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = (SparkSession.builder.master('local[1]').config('spark.driver.memory', '512m')\n"
    "         .config('spark.ui.enabled', 'false').config('spark.sql.shuffle.partitions', '1')\n"
    "         .getOrCreate())\n"
    "spark.sparkContext.setLogLevel('OFF')\n"
    "sdf = spark.createDataFrame([(1, 'x', 2.0)], ['a', 'b', 'price'])\n"
    "other = spark.createDataFrame([(1, 5)], ['a', 'c'])\n"
)
MC = "frames.missing-column"
AE = "AnalysisException"


@pytest.fixture(scope="module")
def spark_kernel(kernel: Any) -> Any:
    kernel.run(SPARK, timeout=300)
    return kernel


def _jobs(kernel: Any) -> int:
    return int(kernel.eval("len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))"))


def _dry_run(kernel: Any, source: str) -> dict[str, Any]:
    install_probe(kernel)
    expr = call_expression("dry_run", {"source": source, "budget_s": 5.0})
    answer = _user_expressions(kernel, "", {"r": expr}, 60)["r"]
    assert answer["status"] == "ok", answer
    result: dict[str, Any] = answer["data"]["application/json"]
    return result


def test_spark_schema_without_a_job(spark_kernel: Any) -> None:
    k = spark_kernel
    k.reset()
    k.run(SPARK + "wide = spark.range(1).select(*[F.lit(i * 1.5).alias(f'c{i}') for i in range(50)])\n")
    before = _jobs(k)
    snap = snapshot(k, {"names": ["sdf", "wide"], "object_budget_s": 10, "request_budget_s": 30})
    sdf, wide = snap.variables["sdf"], snap.variables["wide"]
    assert sdf.kind == "spark_dataframe" and sdf.shape == [None, 3] and sdf.error is None
    assert [(c.name, c.dtype) for c in sdf.columns or []] == [
        ("a", "bigint"),
        ("b", "string"),
        ("price", "double"),
    ]
    assert wide.n_columns == 50 and (wide.columns or [])[49].name == "c49"
    assert _jobs(k) == before  # reading the schema ran no Spark job
    k.run("sdf.count()")
    assert _jobs(k) > before  # the tracker does see jobs: an action runs some


def test_pandas_on_spark_labels_without_a_job(spark_kernel: Any) -> None:
    k = spark_kernel
    k.run(SPARK)
    reply = k.run(
        "import pyspark.pandas as ps\npsdf = ps.DataFrame({'a': [1, 2], 'b': ['x', 'y']})", allow_error=True
    )
    if reply["status"] == "error":
        pytest.skip(f"pyspark.pandas unusable here: {reply['ename']}")
    before = _jobs(k)
    snap = snapshot(k, {"names": ["psdf"], "object_budget_s": 10, "request_budget_s": 30})
    psdf = snap.variables["psdf"]
    assert psdf.kind == "pandas_on_spark" and [c.name for c in psdf.columns or []] == ["a", "b"]
    assert (psdf.columns or [])[0].dtype == "int64" and psdf.shape == [None, 2]
    assert _jobs(k) == before


CASES = [
    Case("spark-subscript", MC, SPARK, "x = sdf['zz']\n", AE, 0),
    Case("spark-select", MC, SPARK, "n = 1\nx = sdf.select('a', 'zz')\n", AE, 1),
    Case("spark-select-col", MC, SPARK, "x = sdf.select(F.col('zz').alias('y'))\n", AE, 0),
    Case("spark-filter", MC, SPARK, "x = sdf.filter((F.col('a') > 1) & (F.col('zz') < 2))\n", AE, 0),
    Case("spark-with-column", MC, SPARK, "x = sdf.withColumn('n', F.col('Prices') * 2)\n", AE, 0),
    Case("spark-order-by", MC, SPARK, "x = sdf.where(F.col('a') > 0).orderBy('zz')\n", AE, 0),
    Case("spark-group-by", MC, SPARK, "x = sdf.groupBy('zz').count()\n", AE, 0),
    Case("spark-join", MC, SPARK, "x = sdf.join(other, on='b')\n", AE, 0),
    Case(
        "spark-fine",
        MC,
        SPARK,
        "x = sdf.select('A', F.col('PRICE') * 2)\n"  # names resolve case-insensitively
        "y = sdf.withColumn('n', F.col('a') + 1).select('n')\n"
        "g = sdf.groupBy('b').agg(F.sum('price'))\n"
        "j = sdf.join(other, on='a')\n"
        "d = sdf.drop('zz')\n"  # Spark ignores a missing column in drop
        "s = sdf.select('*')\n",
        None,
    ),
    Case(
        "spark-added-first", MC, SPARK, "sdf = sdf.withColumn('zz', F.lit(1))\nx = sdf.select('zz')\n", None
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_spark_columns(spark_kernel: Any, case: Case) -> None:
    verify(spark_kernel, case)


def test_dry_run_refuses_a_live_spark_session(spark_kernel: Any) -> None:
    spark_kernel.run(SPARK)
    result = _dry_run(spark_kernel, "x = sdf.count()\n")
    assert result["outcome"] == "unavailable" and "Spark session is live" in result["message"]


def _java_pid(kernel: Any) -> int:
    pid = int(kernel.eval("spark.sparkContext._gateway.proc.pid"))
    with open(f"/proc/{pid}/comm") as f:
        assert f.read().strip() == "java"
    return pid


def test_hung_then_dead_jvm_bounded(spark_kernel: Any) -> None:
    k = spark_kernel
    k.run(SPARK + "fresh = sdf.select('a', 'b')\nlater = sdf.select('price')\nx = 41\n")
    pid = _java_pid(k)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        snap = snapshot(k, {"names": ["fresh", "x"], "object_budget_s": 1.0, "request_budget_s": 3.0})
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert took < 6, took
    fresh = snap.variables["fresh"]
    assert fresh.kind == "spark_dataframe" and fresh.columns is None and "deadline" in (fresh.error or "")
    assert snap.variables["x"].value == "41"  # the rest is served
    os.kill(pid, signal.SIGKILL)  # a dead gateway: py4j fails fast, the frame reads unknown
    time.sleep(0.5)
    snap = snapshot(k, {"names": ["later", "x"], "object_budget_s": 2.0, "request_budget_s": 4.0})
    later = snap.variables["later"]
    assert later.kind == "spark_dataframe" and later.columns is None and later.error
    # a stopped session: nothing is asked of the JVM, and the dry run is no longer refused for Spark
    k.run("spark.sparkContext.stop()", allow_error=True)
    snap = snapshot(k, {"names": ["later"], "object_budget_s": 2.0})
    assert snap.variables["later"].error == "spark session stopped"
    assert k.eval("__import__('sys').modules['_crane_probe']._frm_refusal()") == "None"
