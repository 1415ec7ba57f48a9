"""The contract's clauses for what end-to-end tests read through the format, on every backend.

An end-to-end test runs once per Spark engine (tests/conftest.py): what it would add on a further
backend is the format's part of the path, and that part is held here, each clause one small
test that calls the `TableFormat` interface directly. A table's schema and its partition
column's type (the config checks, the schema checks of validation and promotion), a missing or
dropped table (the commands' refusals), the rows per partition from metadata (a late-data
window's plan), and a canary's two commits, the rest bound to the version the canary was
validated against (`promote --canary`).

Not marked `store`: the end-to-end paths these clauses stand in for did not run on the S3
backends either; the S3 group keeps its own `store` tests of these paths.
"""

from __future__ import annotations

import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from support import END, START, Backend, MakeBackfill

from shadow_backfill import Backfill
from shadow_backfill.formats.base import PARTITIONS_PROPERTY, PartitionFacts

A, B, C = "2024-01-02", "2024-01-03", "2024-01-04"  # partitions of the seeded live table
OUTSIDE = "2024-01-11"  # a partition the seed does not hold (a late day arriving)
# The seed's columns as `sb_test_transforms.events` makes them, in order.
SEEDED_COLUMNS = [("id", "bigint"), ("amount", "double"), ("cat", "string"), ("ds", "date")]


def _same(actual: DataFrame, expected: DataFrame) -> None:
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _events(bf: Backfill, keys: list[str], v2: bool = False) -> DataFrame:
    days = [bf.scheme.value(k) for k in keys]
    return (t.events_v2 if v2 else t.events)(bf.spark, days)


def _columns(schema: StructType) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def test_schema_and_partition_facts_are_exact(make: MakeBackfill) -> None:
    """The config checks (a partition column that is missing, of another type, too coarse for
    hourly keys; a declared change to a column live lacks; a key or suite column) and the
    schema checks of a recompute and a promotion (a transform's output against shadow, shadow
    against live) compare what the format says a table's columns are: they must be exactly the
    columns written, in order, with their types, for a table created with data and for one
    created like it, with another schema or empty."""
    bf = make()
    fmt, live, shadow = bf.table_format, bf.live_table, bf.shadow_table
    assert _columns(fmt.schema(live)) == SEEDED_COLUMNS
    assert fmt.partition_facts(live, "ds") == PartitionFacts("date")
    assert fmt.partition_facts(live, "day") is None, "a column live lacks has no facts"
    assert fmt.partition_facts(shadow, "ds") is None, "nor has a table that does not exist"

    fmt.create_like(live, shadow)
    assert _columns(fmt.schema(shadow)) == SEEDED_COLUMNS
    assert fmt.partition_columns(shadow) == ["ds"]
    assert fmt.partition_facts(shadow, "ds") == PartitionFacts("date")

    drifted = f"{shadow}_drift" if "/" not in shadow else f"{shadow}-drift"
    extra = StructType([*fmt.schema(live).fields[:3], StructField("extra", StringType()), fmt.schema(live)["ds"]])
    fmt.create_like(live, drifted, schema=extra)
    assert _columns(fmt.schema(drifted)) == [*SEEDED_COLUMNS[:3], ("extra", "string"), ("ds", "date")]
    assert _columns(fmt.schema(live)) == SEEDED_COLUMNS, "live is as it was"


def test_a_missing_or_dropped_table_is_not_there(make: MakeBackfill, backend: Backend) -> None:
    """The commands name a missing live table (`run`, `rollback`, `history`) and a shadow
    dropped after validation (`promote`) from `exists`: a name no table has, and a table its
    owner dropped behind the tool's back, must not exist, and live must stay as it was."""
    bf = make()
    fmt, live, shadow = bf.table_format, bf.live_table, bf.shadow_table
    assert not fmt.exists(backend.missing_table)
    assert fmt.partition_facts(backend.missing_table, "ds") is None
    before = fmt.current_version(live)

    fmt.create_like(live, shadow)
    assert fmt.exists(shadow)
    backend.drop(bf, shadow)
    assert not fmt.exists(shadow), "dropped by its owner"
    assert fmt.exists(live) and fmt.current_version(live) == before
    _same(fmt.read(live), _events(bf, bf.scheme.expand(START, END)))


def test_row_counts_per_partition_follow_each_commit(make: MakeBackfill) -> None:
    """A late-data window's plan shows live's rows per partition from metadata, and a day live
    does not hold yet as none: the counts must be exact after an overwrite that grows one
    partition and empties another, and after another writer appends a day."""
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, bf.scheme.expand(START, END)
    assert fmt.partition_row_counts(live) == dict.fromkeys(keys, t.ROWS_PER_DAY)

    doubled = _events(bf, [A]).unionByName(_events(bf, [A]).withColumn("id", F.col("id") + 100))
    fmt.overwrite_partitions(live, doubled, [A, C])
    expected = {**dict.fromkeys(keys, t.ROWS_PER_DAY), A: 2 * t.ROWS_PER_DAY}
    del expected[C]
    assert fmt.partition_row_counts(live) == expected, "grown, emptied (gone), the rest as they were"

    fmt.append(live, _events(bf, [OUTSIDE]))
    assert fmt.partition_row_counts(live) == {**expected, OUTSIDE: t.ROWS_PER_DAY}
    assert fmt.list_partitions(live) == bf.scheme.sort([*expected, OUTSIDE])


def test_a_canary_then_its_rest_each_commit_their_own_partitions(make: MakeBackfill) -> None:
    """`promote --canary` commits the canary's partitions, checks them on live, then commits
    the rest bound to the version they were validated against, which the canary's own commit
    has since moved past: that commit touched other partitions, so the rest lands on top of
    it, and history tells each commit's partitions apart (what a rollback of either undoes)."""
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, bf.scheme.expand(START, END)
    validated = fmt.current_version(live)
    assert validated is not None

    kind = {"shadow-backfill.kind": "test"}
    canary = fmt.commit_partitions(live, _events(bf, [A], v2=True), [A], kind, validated)
    assert canary.version == fmt.current_version(live) and canary.parent == validated
    rest = fmt.commit_partitions(live, _events(bf, [B, C], v2=True), [B, C], kind, validated)
    assert rest.version == fmt.current_version(live) and rest.parent == canary.version

    touching = [(c.version, hit) for c, hit in fmt.commits_touching(live, validated, keys)]
    assert touching == [(canary.version, [A]), (rest.version, [B, C])]
    assert [c.properties[PARTITIONS_PROPERTY] for c in fmt.history(live)[-2:]] == [A, f"{B},{C}"]
    untouched = [k for k in keys if k not in (A, B, C)]
    _same(fmt.read(live), _events(bf, untouched).unionByName(_events(bf, [A, B, C], v2=True)))
    at_canary = _events(bf, [k for k in keys if k != A]).unionByName(_events(bf, [A], v2=True))
    _same(fmt.read(live, canary.version), at_canary)
