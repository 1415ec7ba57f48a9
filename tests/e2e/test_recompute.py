"""Recompute behaviour every table backend must have (each test runs once per `backend`)."""

from __future__ import annotations

import datetime as dt

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import functions as F
from support import END, START, MakeBackfill

from shadow_backfill import Backfill


def _sorted(df):
    return df.orderBy("ds", "id")


def assert_same_content(a, b) -> None:
    assert_df_equality(_sorted(a), _sorted(b), ignore_row_order=True, ignore_nullable=True)


def expected_v2(bf: Backfill, start: str = START, end: str = END):
    keys = bf.scheme.expand(start, end)
    return t.events_v2(bf.spark, [bf.scheme.value(k) for k in keys])


@pytest.mark.every_backend  # a recompute's writes and the shadow's versions are the format's
def test_rerun_is_idempotent(make: MakeBackfill) -> None:
    bf = make()
    first = bf.run(START, END)
    assert first.ok and len(first.written) == 10
    assert first.written == {k: t.ROWS_PER_DAY for k in bf.scheme.expand(START, END)}
    v1 = bf.table_format.current_version(bf.shadow_table)

    again = bf.run(START, END)
    assert again.written == {} and len(again.skipped) == 10
    assert bf.table_format.current_version(bf.shadow_table) == v1, "a rerun without --force must write nothing"

    forced = bf.run(START, END, force=True)
    assert len(forced.written) == 10
    shadow = bf.read_shadow()
    assert shadow.count() == 10 * t.ROWS_PER_DAY
    assert shadow.select("ds", "id").distinct().count() == shadow.count(), "duplicates after a forced rerun"
    assert_same_content(shadow, expected_v2(bf))
    # the live table is never touched by a recompute
    assert_same_content(bf.read_live(), t.events(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)]))


# once per engine (the e2e default): which partitions are redone is the state store's; the writes are tested per format
def test_resumes_after_failure(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:flaky"})
    t.FAIL_ON.clear()
    t.FAIL_ON.add(dt.date(2024, 1, 6))
    try:
        first = bf.run(START, END, chunk_size=1)
    finally:
        t.FAIL_ON.clear()
    assert set(first.failed) == {"2024-01-06"}
    assert "injected failure" in first.failed["2024-01-06"]
    assert len(first.written) == 9
    statuses = {r.partition: r.status for r in bf.status()}
    assert statuses["2024-01-06"] == "failed" and statuses["2024-01-05"] == "written"

    second = bf.run(START, END, chunk_size=1)
    assert second.ok and list(second.written) == ["2024-01-06"] and len(second.skipped) == 9
    shadow = bf.read_shadow()
    assert_same_content(shadow, t.events(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)]))


@pytest.mark.every_backend  # chunks are separate commits of the format
def test_chunked_equals_per_partition(make: MakeBackfill) -> None:
    one = make()
    one.run(START, END, chunk_size=1)
    many = make(version="v3")
    result = many.run(START, END, chunk_size=4)
    assert [len(c) for c in result.chunks] == [4, 4, 2]
    assert_same_content(one.read_shadow(), many.read_shadow())


# once per engine (the e2e default): refused by the runner before any write
def test_out_of_partition_rows_refused(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:one_day_too_many"})
    result = bf.run("2024-01-02", "2024-01-03", chunk_size=2)
    assert set(result.failed) == {"2024-01-02", "2024-01-03"}
    assert "2024-01-04" in result.failed["2024-01-02"] and "nothing was written" in result.failed["2024-01-02"]
    assert not bf.table_format.exists(bf.shadow_table), "a refused chunk must not even create the shadow"


@pytest.mark.every_backend  # the format's partition overwrite
def test_only_requested_partitions_are_replaced(make: MakeBackfill) -> None:
    bf = make()
    bf.run(START, END)
    before = bf.read_shadow().filter(F.col("ds") != F.lit(dt.date(2024, 1, 3)))
    before_rows = before.collect()
    bf.run(partitions=["2024-01-03"], force=True)
    after = bf.read_shadow().filter(F.col("ds") != F.lit(dt.date(2024, 1, 3)))
    assert sorted(after.collect()) == sorted(before_rows)


def test_wrong_schema_refused(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:wrong_schema"})
    bf.table_format.create_like(bf.live_table, bf.shadow_table)  # shadow shaped like live (v1)
    result = bf.run(START, "2024-01-02")
    message = result.failed["2024-01-01"]
    assert "missing columns ['cat']" in message
    assert "amount (string instead of double)" in message
    assert bf.read_shadow().count() == 0


# once per engine (the e2e default): refused by the runner before any write
def test_null_partition_value_refused(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:null_partition"})
    result = bf.run(START, "2024-01-02")
    assert "null partition value" in result.failed["2024-01-01"]
    assert not bf.table_format.exists(bf.shadow_table)


@pytest.mark.store
@pytest.mark.every_backend  # the shadow's history and time travel
def test_versions_history_and_time_travel(make: MakeBackfill) -> None:
    bf = make()
    fmt = bf.table_format
    first = bf.run(START, "2024-01-03", chunk_size=3)
    v_first = first.shadow_version
    assert v_first is not None and fmt.current_version(bf.shadow_table) == v_first
    assert {r.shadow_version for r in bf.status()} == {v_first}
    assert fmt.list_partitions(bf.shadow_table) == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert fmt.partition_row_counts(bf.live_table) == {k: t.ROWS_PER_DAY for k in bf.scheme.expand(START, END)}

    bf.run(partitions=["2024-01-02"], force=True, chunk_size=1)
    v_second = fmt.current_version(bf.shadow_table)
    assert v_second != v_first
    commits = fmt.history(bf.shadow_table)
    ours = [c for c in commits if c.properties.get("shadow-backfill.kind") == "recompute"]
    assert [c.version for c in ours][-2:] == [v_first, v_second]
    assert ours[-1].properties["shadow-backfill.code-fingerprint"] == bf.transform.fingerprint
    # time travel: the first version still has the same content for every partition
    assert_same_content(bf.read_shadow(version=v_first), bf.read_shadow(version=v_second))
    assert bf.read_shadow(["2024-01-02"], version=v_first).count() == t.ROWS_PER_DAY
