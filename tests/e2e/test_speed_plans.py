"""The measuring jobs' speed tricks still do what their docstrings say. The tricks in the plan
are read from Spark's query plan: each test plans the job with the trick and with the trick taken
out, and fails when the trick no longer saves a grouping of the rows by key (a Spark upgrade that
plans differently), so a trick that stopped paying is seen and removed rather than kept as
unexplained code. The tricks in building the plan are read from the calls into the JVM they take,
against the plain way's. Classic Spark only: its plan is what can be read, and the tricks were
measured there."""

from __future__ import annotations

import gc
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from py4j import protocol as proto
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.jobs import largest_generated_method
from shadow_backfill.validate.measure import fingerprints, key_facts, live_grid, sample_cut
from shadow_backfill.validate.measure.facts_job import facts_frame
from shadow_backfill.validate.measure.facts_spec import _threshold, bin_of, edges_frame, fact_list
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN
from shadow_backfill.validate.measure.profile_job import run_profile
from shadow_backfill.validate.measurements import PartitionProfile

pytestmark = pytest.mark.classic
ROWS = 200  # per side, over two partitions and four input splits: the plan has real shuffles


@pytest.fixture
def shuffles(spark: Any) -> Any:
    """Four shuffle partitions for these plans (the test session's one needs no shuffle at all,
    so nothing would be shared or not), put back after the test."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", before)


def _sides(spark: Any) -> tuple[DataFrame, DataFrame]:
    live = spark.range(0, ROWS, 1, 4).select(
        (F.col("id") % 2).cast("int").alias("ds"),
        F.col("id"),
        (F.col("id") * 1.5).alias("amount"),
        F.concat(F.lit("c"), (F.col("id") % 3).cast("string")).alias("category"),
    )
    return live.withColumn("amount", F.col("amount") + F.when(F.col("id") % 7 == 0, 1.0).otherwise(0.0)), live


def _facts_plan(spark: Any, live_rows: int, key_partitions: int | None = None) -> str:
    """The facts job's physical plan; `live_rows` as the validation counts them."""
    shadow, live = _sides(spark)
    measurer = FastMeasurer(shadow, live, partition="ds", keys=["id"], max_categories=10, sample_rows=5)
    profiles = {t: PartitionProfile(t) for t in ("0", "1")}
    edges = run_profile(measurer.union, measurer.plan, {}, profiles, {}, ["id"]).edges
    assert edges, "no live deciles: the bins branch, which a trick is for, would not be planned"
    spec = replace(measurer.facts, key_partitions=key_partitions)
    thresholds = edges_frame(spark, spec, edges, measurer.union.schema[PARTITION_COLUMN].dataType)
    df = facts_frame(measurer.union, spec, fact_list(spec, True), thresholds, live_rows)
    return str(df._jdf.queryExecution().executedPlan().toString())


def _groupings(spark: Any, live_rows: int, key_partitions: int | None = None) -> Counter[str]:
    """How many times the facts job's plan aggregates by each set of columns (its partial
    aggregations, named by their grouping columns)."""
    found = re.findall(
        r"HashAggregate\(keys=\[([^\]]*)\], functions=\[partial_", _facts_plan(spark, live_rows, key_partitions)
    )
    return Counter(re.sub(r"#\d+L?", "", keys) for keys in found)


BY_KEY = f"{PARTITION_COLUMN}, {key_facts.key_names(SimpleNamespace(keys=['id']))[0]}"  # by partition and key
BY_PARTITION = PARTITION_COLUMN  # the counts: one row per partition


def test_the_bins_read_every_column_so_the_key_grouping_is_shared(
    shuffles: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _groupings(shuffles, ROWS)[BY_KEY] == 1
    monkeypatch.setattr(key_facts, "_reads_every_column", lambda spec: F.lit(True))
    assert _groupings(shuffles, ROWS)[BY_KEY] == 2, "without the trick Spark still shares: remove it"


def test_the_sample_cut_reads_the_counts_whole_so_they_are_shared(
    shuffles: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = sample_cut.FROM_ROWS  # from here the samples are cut, and the counts joined back
    assert _groupings(shuffles, cut)[BY_PARTITION] == 1
    monkeypatch.setattr(sample_cut, "read_whole", lambda counts: counts)
    assert _groupings(shuffles, cut)[BY_PARTITION] == 2, "without the trick Spark still shares: remove it"


def _key_shuffles(spark: Any, key_partitions: int | None) -> tuple[list[int], int]:
    """The facts job's shuffles by (partition, key): each one's partition count, and how many
    times they are read again (reused rather than run)."""
    made, reused = [], 0
    for line in _facts_plan(spark, ROWS, key_partitions).splitlines():
        node = line.lstrip(" :+-")
        found = re.search(r"Exchange hashpartitioning\(([^)]*), (\d+)\)", node)
        if found is None or re.sub(r"#\d+L?", "", found.group(1)) != BY_KEY:
            continue
        if node.startswith("ReusedExchange"):
            reused += 1
        elif node.startswith("Exchange"):
            made.append(int(found.group(2)))
    return made, reused


def test_the_key_grouping_sized_to_its_keys_is_one_shuffle_its_readers_share(shuffles: Any) -> None:
    """`key_partitions.py`: the grouping's rows go into the number of tasks asked for, in the
    one shuffle the grouping needed anyway, which its three readers still share."""
    assert _key_shuffles(shuffles, None) == ([4], 2), "the session's number when not sized"
    assert _key_shuffles(shuffles, 7) == ([7], 2), "sized: one shuffle, the grouping's own gone, read thrice"


def _jvm_calls(spark: Any, build: Any) -> int:
    """How many calls into the JVM building a Column takes. Not counted: py4j's releases of
    Java objects that Python's garbage collector frees meanwhile (earlier tests' objects, a
    thousand at once when a collection falls inside `build`)."""
    client = spark.sparkContext._gateway._gateway_client
    calls = []
    real = client.send_command
    release = proto.MEMORY_COMMAND_NAME + proto.MEMORY_DEL_SUBCOMMAND_NAME

    def counted(command: str, *a: Any, **k: Any) -> Any:
        if not command.startswith(release):
            calls.append(1)
        return real(command, *a, **k)

    gc.collect()
    client.send_command = counted
    try:
        build()
    finally:
        del client.send_command
    return len(calls)


def test_the_grid_is_one_sql_constant_not_a_thousand_literals(spark: Any) -> None:
    """`live_grid.grid_sql`: the 1,001 percentages as one SQL array, planned in a few calls into
    the JVM where a Column per literal takes thousands (seconds of every validation's
    planning); and Spark reads it as the very same floats."""
    assert _jvm_calls(spark, lambda: F.expr(live_grid.grid_sql())) < 20
    assert _jvm_calls(spark, lambda: F.array(*[F.lit(p) for p in live_grid.GRID])) > 1000
    (values,) = spark.range(1).select(F.expr(live_grid.grid_sql())).first()
    assert list(values) == live_grid.GRID


def test_a_bin_is_one_sql_expression_not_a_tree_of_columns(spark: Any) -> None:
    """`facts_spec.bin_of` as SQL text: a few calls into the JVM per column and side, where
    the same binary search built as Columns takes dozens."""
    assert _jvm_calls(spark, lambda: bin_of(0, "v")) < 10
    thresholds = [F.col(_threshold(0, j)) for j in range(9)]

    def as_columns(low: int, high: int) -> Any:
        if low == high:
            return F.lit(low)
        mid = (low + high) // 2
        return F.when(F.col("v") > thresholds[mid], as_columns(mid + 1, high)).otherwise(as_columns(low, mid))

    assert _jvm_calls(spark, lambda: as_columns(0, 9)) > 40


@pytest.fixture
def generated(spark: Any) -> Any:
    """Whole-stage code generation on, as outside the tests (their session runs without it),
    and plans read without adaptive execution; put back after the test."""
    wanted = {
        "spark.sql.codegen.wholeStage": "true",
        "spark.sql.codegen.factoryMode": "FALLBACK",  # Spark's default; NO_CODEGEN turns stages off too
        "spark.sql.adaptive.enabled": "false",
    }
    before = {k: spark.conf.get(k) for k in wanted}
    for k, v in wanted.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in before.items():
        spark.conf.set(k, v)


def test_wide_tables_outgrow_hotspot_s_method_limit_so_sessions_cap_it(generated: Any) -> None:
    """`session.RUNTIME_CONF`: a session the tool opens caps a stage's generated method at the
    8,000 bytes of bytecode HotSpot compiles (past it, Spark runs the stage without whole-stage
    code generation rather than in the interpreter). With eight changed numeric columns the
    facts job has a stage past it, so the cap decides how that stage runs; this fails once none
    does, and the cap can go."""
    spark = generated
    assert spark.conf.get("spark.sql.codegen.hugeMethodLimit") == "8000"
    columns = [f"c{i}" for i in range(8)]
    live = spark.range(0, ROWS, 1, 4).select(
        (F.col("id") % 2).cast("int").alias("ds"),
        "id",
        *[(F.col("id") * (i + 1.5)).alias(c) for i, c in enumerate(columns)],
    )
    shadow = live.select("ds", "id", *[(F.col(c) + 1.0).alias(c) for c in columns])
    measurer = FastMeasurer(shadow, live, partition="ds", keys=["id"], max_categories=10, sample_rows=5)
    profiles = {t: PartitionProfile(t) for t in ("0", "1")}
    edges = run_profile(measurer.union, measurer.plan, {}, profiles, {}, ["id"]).edges
    spec = measurer.facts
    assert list(spec.compared) == columns, "every column changed: the key grouping carries them all"
    thresholds = edges_frame(spark, spec, edges, measurer.union.schema[PARTITION_COLUMN].dataType)
    df = facts_frame(measurer.union, spec, fact_list(spec, True), thresholds, ROWS)
    largest = largest_generated_method(df)
    assert largest > 8000, f"no generated method past HotSpot's limit ({largest} bytes): the cap is not needed"


def _hash_calls(spark: Any, key_parts: int, columns: int) -> int:
    """Calls to xxhash64's per-field hashing in the generated code of the profile's fingerprint
    sums of `columns` columns over a key of `key_parts` parts."""
    keys = [f"k{i}" for i in range(key_parts)]
    values = [f"v{j}" for j in range(columns)]
    rows = spark.range(0, 20).select(
        (F.col("id") % 2).alias("ds"),
        *[(F.col("id") + i).alias(k) for i, k in enumerate(keys)],
        *[(F.col("id") * 1.5).alias(v) for v in values],
    )
    grouped = rows.groupBy("ds").agg(*fingerprints.aggregations(keys, values))
    stages = spark._jvm.org.apache.spark.sql.execution.debug.package.codegenStringSeq(
        grouped._jdf.queryExecution().executedPlan()
    )
    code = "".join(str(stages.apply(i)._2()) for i in range(stages.size()))
    return len(re.findall(r"XXH64\.hash\w+\(", code))


def test_a_column_s_fingerprint_hashes_the_key_once_per_row(generated: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fingerprints.hashes` chains a column's value onto the key's hash, which Spark computes
    once per row: a column costs the same hashing whatever the key's parts. Hashing the key's
    parts again in each column (as before) made it grow with them, and so would Spark no
    longer sharing the key's hash among the columns."""

    def per_column() -> list[int]:
        return [_hash_calls(generated, parts, 3) - _hash_calls(generated, parts, 2) for parts in (1, 4)]

    chained = per_column()
    assert chained[0] > 0 and chained[0] == chained[1], f"hash calls per column, 1 and 4 key parts: {chained}"

    def unchained(keys: Sequence[str], value: str | None) -> list[Any]:  # the form before the chain
        parts = [p for n in [*keys, *([value] if value else [])] for p in (F.col(n), F.col(n).isNull())]
        return [F.xxhash64(*parts), F.xxhash64(F.lit("salt"), *parts)]

    monkeypatch.setattr(fingerprints, "hashes", unchained)
    again = per_column()
    assert again[1] > again[0], f"the count cannot see the key's parts hashed per column: {again}"
