"""What the two drift jobs measure and where they put it.

Shared by the profile job and the facts job: which columns get which metrics (decided once,
from the two schemas, before any Spark work) and how a row of the shadow/live union is tagged
with its partition and side. What they fill in is in `measurements.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, NumericType, StringType, StructType

from shadow_backfill.schema import diff_schemas
from shadow_backfill.validate.measurements import ColumnPlan

# Columns the jobs add to every row: its partition's value (see `tag`), and true on shadow rows.
PARTITION_COLUMN, SHADOW_FLAG = "__sb_k", "__sb_shadow"


def plan_columns(
    shadow: StructType, live: StructType, partition: str, keys: Sequence[str], declared_added: Sequence[str] = ()
) -> ColumnPlan:
    """`declared_added`: columns the logic change adds. One that live has too (a promotion of
    other partitions added it there, null elsewhere) is still measured as added: live holds no
    earlier value of it to compare with."""
    s = {f.name: f.dataType for f in shadow.fields}
    diff = diff_schemas(shadow, live)
    skip = {partition, *keys}
    retyped = {c for c, _, _ in diff.retyped}
    added = [*diff.extra, *(c for c in declared_added if c in s and c not in diff.extra and c not in skip)]
    same = [c for c in s if c not in skip and c not in added and c not in retyped]
    return ColumnPlan(
        numeric=[c for c in same if isinstance(s[c], NumericType)],
        categorical=[c for c in same if isinstance(s[c], (StringType, BooleanType))],
        compared=same,
        added=added,
        removed=diff.missing,
        retyped=[r for r in diff.retyped if r[0] not in skip],
        shadow_types={c: t.simpleString() for c, t in s.items()},
        added_numeric=[c for c in added if isinstance(s[c], NumericType)],
    )


def tag(df: DataFrame, side: str, partition_value: Column) -> DataFrame:
    """Mark every row with its partition and side, so one grouping serves both tables.

    The partition is kept as its own value (a date, a number), not as text: every job groups
    and shuffles by it, and a text made per row cost 15-20% of the facts job at 4 M rows per
    side (a date cast to text per row, then hashed and compared as text). Rows name their
    partition as text (`as_text`) only once grouped, on the few rows that reach the driver.
    The side is a boolean for the same reason: the aggregations test it on every row."""
    return df.withColumn(PARTITION_COLUMN, partition_value).withColumn(SHADOW_FLAG, F.lit(side == "shadow"))


def as_text(frame: DataFrame) -> DataFrame:
    """The partition of each grouped row as the text the profiles are keyed by."""
    return frame.withColumn(PARTITION_COLUMN, F.col(PARTITION_COLUMN).cast("string"))


def partition_values(source: DataFrame, texts: Sequence[str]) -> list[Column]:
    """Partition texts from the driver as typed literals of `source`'s partition value, to
    compare with `PARTITION_COLUMN` natively (and let Spark prune partitions by them)."""
    kind = source.schema[PARTITION_COLUMN].dataType
    return [F.lit(t).cast(kind) for t in texts]


def is_side(side: str) -> Column:
    return F.col(SHADOW_FLAG) if side == "shadow" else ~F.col(SHADOW_FLAG)


def side_name(shadow: bool) -> str:
    """The side of a grouped row, by name."""
    return "shadow" if shadow else "live"
