"""The contract's clause for a logic change that adds a column, on every backend: a column added
to a table is a change of metadata only (every partition reads null in it, no commit touches
a partition), a commit bound to the version before it still lands, the versions before it stay
readable, and writing one of them back (a rollback) keeps the column, null in those rows."""

from __future__ import annotations

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField
from support import END, START, MakeBackfill

from shadow_backfill.schema import conform

pytestmark = pytest.mark.store

A = "2024-01-02"


def _same(actual: DataFrame, expected: DataFrame) -> None:
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def test_an_added_column_reaches_live_and_old_versions_stay_readable(make: MakeBackfill) -> None:
    bf = make()
    fmt, live = bf.table_format, bf.live_table
    keys = bf.scheme.expand(START, END)
    seeded = t.events(bf.spark, [bf.scheme.value(k) for k in keys])
    before = fmt.current_version(live)

    fmt.add_columns(live, [StructField("score", LongType(), True)])
    schema = fmt.schema(live)
    assert schema["score"].dataType == LongType() and schema["score"].nullable
    nulls = F.lit(None).cast("long")
    _same(fmt.read(live), seeded.withColumn("score", nulls))
    assert fmt.commits_touching(live, before, keys) == [], "adding a column touches no partition"

    new = t.events(bf.spark, [bf.scheme.value(A)]).withColumn("score", F.col("id") * 10)
    written = fmt.commit_partitions(live, conform(new, schema), [A], {}, before)
    assert written.version == fmt.current_version(live)
    expected = seeded.filter(F.col("ds") != F.lit(bf.scheme.value(A))).withColumn("score", nulls).unionByName(new)
    _same(fmt.read(live), expected)

    # the version before the change reads as it was, and written back it keeps the column, null
    _same(conform(fmt.read(live, before), schema), seeded.withColumn("score", nulls))
    fmt.overwrite_partitions(live, conform(fmt.read_partitions(live, [A], before), fmt.schema(live)), [A])
    _same(fmt.read(live), seeded.withColumn("score", nulls))


def test_a_widened_column_keeps_old_versions_readable(make: MakeBackfill) -> None:
    """Where a format widens a type in place (`widens_types`): int -> bigint is a change of
    metadata only, rows of the wider type then commit, and a version from before it reads and
    writes back (a rollback) as the wider type. Elsewhere promotion refuses a widening
    (tests/e2e/test_schema_changes.py)."""
    bf = make(seed_live=False)
    fmt, table = bf.table_format, bf.live_table
    if not fmt.widens_types:
        pytest.skip(f"{fmt.name} does not widen a column's type in place: promotion refuses a widening")
    keys = bf.scheme.expand(START, END)
    seeded = t.with_sessions(bf.spark, [bf.scheme.value(k) for k in keys])
    fmt.create(table, seeded.schema, ["ds"], data=seeded)
    before = fmt.current_version(table)

    fmt.widen_columns(table, {"sessions": LongType()})
    schema = fmt.schema(table)
    assert schema["sessions"].dataType == LongType()
    assert fmt.commits_touching(table, before, keys) == [], "widening a column touches no partition"
    wide = F.col("sessions").cast("long")
    _same(fmt.read(table), seeded.withColumn("sessions", wide))

    new = t.sessions_widened(bf.spark, [bf.scheme.value(A)])
    fmt.commit_partitions(table, conform(new, schema), [A], {}, before)
    assert fmt.read(table).filter(F.col("sessions") > 2**31).count() > 0, "values no int can hold"

    old = conform(fmt.read_partitions(table, [A], before), fmt.schema(table))
    fmt.overwrite_partitions(table, old, [A])
    _same(fmt.read(table), seeded.withColumn("sessions", wide))
