"""Differential test: the grouped fast path and GX's own per-partition evaluation must give
the same pass/fail for every expectation on every partition, edge cases included."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import functions as F

from shadow_backfill.validate.expectations import evaluate_fast, split_supported
from shadow_backfill.validate.gx_reference import evaluate_with_gx
from shadow_backfill.validate.suites import Expectation

DAYS = [dt.date(2024, 1, d) for d in range(1, 7)]
EMPTY = dt.date(2024, 1, 4)  # requested, but no rows at all


def _e(i: int, kind: str, **kwargs: Any) -> Expectation:
    return Expectation("corpus", i, kind, kwargs)


CORPUS = [
    [
        _e(0, "expect_column_values_to_not_be_null", column="x"),
        _e(1, "expect_column_values_to_not_be_null", column="x", mostly=0.5),
        _e(2, "expect_column_values_to_not_be_null", column="x", mostly=0.9),
        _e(3, "expect_column_values_to_be_null", column="x", mostly=0.5),
        _e(4, "expect_column_values_to_not_be_null", column="cat", mostly=0.7),
    ],
    [
        _e(0, "expect_column_values_to_be_between", column="x", min_value=0, max_value=50),
        _e(1, "expect_column_values_to_be_between", column="x", min_value=0, max_value=50, mostly=0.6),
        _e(2, "expect_column_values_to_be_between", column="x", min_value=0, strict_min=True),
        _e(3, "expect_column_values_to_be_between", column="x", max_value=90, strict_max=True, mostly=0.95),
        _e(4, "expect_column_values_to_be_between", column="n", min_value=1, max_value=3),
    ],
    [
        _e(0, "expect_column_values_to_be_in_set", column="cat", value_set=["a", "b"]),
        _e(1, "expect_column_values_to_be_in_set", column="cat", value_set=["a", "b"], mostly=0.6),
        _e(2, "expect_column_values_to_not_be_in_set", column="cat", value_set=["c"]),
        _e(3, "expect_column_values_to_be_unique", column="id"),
        _e(4, "expect_column_values_to_be_unique", column="id", mostly=0.8),
        _e(5, "expect_column_values_to_be_unique", column="x"),
    ],
    [
        _e(0, "expect_table_row_count_to_be_between", min_value=1, max_value=25),
        _e(1, "expect_table_row_count_to_be_between", min_value=10),
        _e(2, "expect_table_row_count_to_equal", value=20),
        _e(3, "expect_column_min_to_be_between", column="x", min_value=0, max_value=5),
        _e(4, "expect_column_max_to_be_between", column="x", min_value=50, max_value=100),
        _e(5, "expect_column_mean_to_be_between", column="n", min_value=1, max_value=2, strict_max=True),
        _e(6, "expect_column_sum_to_be_between", column="n", min_value=10),
        _e(7, "expect_column_to_exist", column="x"),
        _e(8, "expect_column_to_exist", column="nope"),
        _e(9, "expect_table_columns_to_match_set", column_set=["id", "x", "n", "cat", "ds"]),
        _e(10, "expect_column_values_to_match_regex", column="cat", regex="^[ab]$"),  # GX-only path
    ],
]


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    base = spark.range(20).withColumnRenamed("id", "id")
    days = spark.range(1).select(F.explode(F.array(*[F.lit(d) for d in DAYS if d != EMPTY])).alias("ds"))
    df = days.crossJoin(base)
    day = F.dayofmonth("ds")
    x = F.when((day == 2) & (F.col("id") % 3 == 0), None).otherwise(F.col("id") * 5.0)  # 2nd: nulls
    x = F.when(day == 3, F.lit(None).cast("double")).otherwise(x)  # 3rd: all null
    cat = F.element_at(F.array(F.lit("a"), F.lit("b"), F.lit("c")), (F.col("id") % 3 + 1).cast("int"))
    cat = F.when((day == 2) & (F.col("id") % 4 == 0), None).otherwise(cat)
    ident = F.when(day == 5, F.col("id") % 7).otherwise(F.col("id"))  # 5th: duplicate ids
    df = df.select(
        ident.alias("id"), x.alias("x"), (F.col("id") % 3 + 1).cast("int").alias("n"), cat.alias("cat"), "ds"
    )
    return df.filter((day != 6) | (F.col("id") == 0))  # 6th: a single row


@pytest.mark.parametrize("suite", range(len(CORPUS)))
def test_fast_path_matches_gx(frame: Any, suite: int) -> None:
    expectations = CORPUS[suite]
    texts = [d.isoformat() for d in DAYS]
    fast = evaluate_fast(frame, F.col("ds").cast("string"), expectations, texts)
    _, _, gx_only = split_supported(expectations)
    assert len(gx_only) <= 1, "the corpus must exercise the fast path, not GX"
    disagreements = []
    for d, text in zip(DAYS, texts, strict=True):
        reference = evaluate_with_gx(frame.filter(F.col("ds") == F.lit(d)), expectations)
        ours = {o.expectation: o.success for o in fast[text]}
        for o in reference:
            if ours[o.expectation] != o.success:
                disagreements.append((text, o.expectation, "fast", ours[o.expectation], "gx", o.success, o.detail))
    assert not disagreements, "\n".join(map(str, disagreements))
    # the corpus must not be trivially all-pass: both outcomes occur
    outcomes = {o.success for text in texts for o in fast[text]}
    assert outcomes == {True, False}


def test_validator_uniqueness_and_job_count_match_gx(frame: Any) -> None:
    """The validator judges uniqueness from the facts job over the shadow/live union, the fast
    path from the same job over one frame: hold the union path to GX too, the two paths to the
    same counts, and the measurer to its two Spark jobs (and a third that counts the histograms of
    the day where a key repeats again, from its rows)."""
    from shadow_backfill.validate.expectations import judge_unique
    from shadow_backfill.validate.measure.facts_job import rows_to_count, unique_counts
    from shadow_backfill.validate.measure.fast import FastMeasurer
    from shadow_backfill.validate.measure.key_facts import by_key

    unique = [e for suite in CORPUS for e in suite if e.type == "expect_column_values_to_be_unique"]
    measurer = FastMeasurer(
        frame, frame, partition="ds", keys=["id"], max_categories=2, unique_columns=[e.kwargs["column"] for e in unique]
    )
    texts = [d.isoformat() for d in DAYS]
    profiles = measurer.run(texts)
    assert measurer.jobs == 2 and measurer.grouped == []
    # the row bins read shadow's rows only where a binned column's fingerprints disagree: here
    # nowhere, so Spark plans one side of the union (each side reads two `Range`s)
    agreed = {t: frozenset(measurer.facts.compared) for t in texts}
    ranges = [
        rows_to_count(measurer.union, ["x"], a)._jdf.queryExecution().optimizedPlan().toString().count("Range (")
        for a in ({}, agreed, {**agreed, texts[0]: frozenset()})
    ]
    assert ranges == [4, 2, 4], ranges
    # and the key grouping reads only shadow's rows where keys and carried columns all agree
    spec = replace(measurer.facts, compared=[], agreed=agreed)
    grouped = [
        by_key(measurer.union, replace(spec, mirrored=m))._jdf.queryExecution().optimizedPlan().toString()
        for m in (frozenset(), frozenset(texts), frozenset(texts[1:]))
    ]
    assert [plan.count("Range (") for plan in grouped] == [4, 2, 4]
    disagreements = []
    for d, text in zip(DAYS, texts, strict=True):
        reference = {o.expectation: o.success for o in evaluate_with_gx(frame.filter(F.col("ds") == F.lit(d)), unique)}
        for e in unique:
            ok, _, detail = judge_unique(e, profiles[text].unique[e.kwargs["column"]])
            if ok != reference[e.id]:
                disagreements.append((text, e.id, ok, reference[e.id], detail))
    assert not disagreements, "\n".join(map(str, disagreements))
    alone = unique_counts(frame, F.col("ds").cast("string"), [e.kwargs["column"] for e in unique], texts)
    assert alone == {t: p.unique for t, p in profiles.items()}
    # 'cat' has 3 values per partition, over max_categories=2: not compared by frequency
    assert all(p.columns["cat"].categories is None for p in profiles.values() if "cat" in p.columns)
    assert any("cat" in p.columns for p in profiles.values())
    # shadow == live: no key-level difference, but the 5th has duplicate ids
    dup = {t: p.keys.duplicates for t, p in profiles.items() if p.keys is not None}
    assert len(dup) == len(profiles), "a key diff for every partition"
    assert dup["2024-01-05"] > 0 and all(v == 0 for t, v in dup.items() if t != "2024-01-05")
    assert all(p.keys.added == p.keys.removed == 0 for p in profiles.values() if p.keys is not None)


def test_keyed_histograms_match_counts_over_every_row(frame: Any) -> None:
    """With keys, histograms and category frequencies are counted from one value per key and
    side: they must equal the counts over every row (the path without keys), with shadow
    different from live, and also on the day where ids repeat (counted again from its rows)."""
    from shadow_backfill.validate.measure.fast import FastMeasurer
    from shadow_backfill.validate.measurements import ColumnMeasurement

    shadow = frame.withColumn("x", F.col("x") * 1.5).withColumn(
        "cat", F.when(F.col("n") == 1, F.lit("z")).otherwise(F.col("cat"))
    )
    texts = [d.isoformat() for d in DAYS]
    keyed = FastMeasurer(shadow, frame, partition="ds", keys=["id"], max_categories=5)
    plain = FastMeasurer(shadow, frame, partition="ds", keys=[], max_categories=5)
    by_key, by_row = keyed.run(texts), plain.run(texts)
    assert (keyed.jobs, plain.jobs) == (3, 2)  # the 5th, where ids repeat, is counted again
    for t in texts:  # the counts; the judge computes the statistics
        for c in ("x", "n", "cat"):
            got, want = (found[t].columns.get(c, ColumnMeasurement()) for found in (by_key, by_row))
            assert (got.histogram, got.categories) == (want.histogram, want.categories), (t, c)
    fifth = by_row["2024-01-05"].columns
    hist, cats = fifth["x"].histogram, fifth["cat"].categories
    assert hist is not None and hist.live != hist.shadow
    assert cats is not None and "z" in cats.new
