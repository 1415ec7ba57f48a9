"""The samples' cut: a bound per partition and compared column, known before the samples are
ranked, that every one of its `sample_rows` first-ranked changes meets.

Ranking every change sorted all of them (8 M at 4.05 M rows per side, 2 s of the facts job)
to keep ten per partition. The keys of a partition fall into `sample_rows` buckets by a hash
of the key; each bucket's first-ranked change is a change of its own, so at least
`sample_rows` changes rank at or before the last of those, and the `sample_rows` first all do.
The buckets' bests ride in the key counts' aggregation (`key_facts.key_counts`), which runs
anyway; the bound is null (nothing is cut) where a bucket has no change.

A number's changes rank by size (a missing difference first): the bound is the smallest of
the buckets' largest changes. Any other column's changes all rank alike and are then taken by
key: the bound is the largest of the buckets' smallest first key columns, when that column is
a number; a column with no bound is ranked whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import NumericType

from shadow_backfill.validate.measure.facts_spec import Diff, FactsSpec
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN

MAX_BUCKETS = 64  # above this many samples per partition there is no cut: every change is ranked
# Below this many live rows in all, every change is ranked: the cut's extra stages and its wait
# for the counts cost about 0.6 s, the sort it saves 2 s at 8 M changes (4.05 M rows per side)
# and 0.5 s at 1.8 M (measured: the facts job at 180,000 rows per side 4.4 s without, 5.1 with).
FROM_ROWS = 1_000_000
_INF = float("inf")


@dataclass(frozen=True)
class Cuts:
    """Which compared columns (by index) are cut by their change, and which by the first key."""

    buckets: int = 0
    by_change: Sequence[int] = ()
    by_key: Sequence[int] = ()

    @property
    def any(self) -> bool:
        return self.buckets > 0 and bool(self.by_change or self.by_key)


def cuts_for(spec: FactsSpec, per_key: DataFrame, keys: Sequence[str], live_rows: int) -> Cuts:
    """The cuts the per-key rows `per_key` (key columns named `keys`) allow, once there are
    `FROM_ROWS` live rows to validate."""
    if not spec.compared or not 0 < spec.sample_rows <= MAX_BUCKETS or live_rows < FROM_ROWS:
        return Cuts()
    numeric_key = isinstance(per_key.schema[keys[0]].dataType, NumericType)
    others = [j for j, c in enumerate(spec.compared) if c not in spec.numeric]
    return Cuts(
        buckets=spec.sample_rows,
        by_change=[j for j, c in enumerate(spec.compared) if c in spec.numeric],
        by_key=others if numeric_key else [],
    )


Agg = Callable[[Column], Column]


def bests(cuts: Cuts, ds: Sequence[Diff], first_key: Column, matched: Column) -> dict[str, tuple[Column, Agg, Agg]]:
    """Per cut column: its per-key rank value where it changed, how a bucket keeps its best,
    and how the partition's bound is taken from the buckets' bests."""
    out: dict[str, tuple[Column, Agg, Agg]] = {}
    for j in cuts.by_change:
        out[f"__t_{j}"] = (F.when(matched & ds[j].changed, F.coalesce(ds[j].abs_diff, F.lit(_INF))), F.max, F.min)
    for j in cuts.by_key:
        out[f"__t_{j}"] = (F.when(matched & ds[j].changed, first_key.cast("double")), F.min, F.max)
    return out


def bound(name: str, buckets: int, of_bests: Agg) -> Column:
    """The partition's bound from the buckets' bests: null unless every bucket had a change."""
    return F.when(F.count(name) == F.lit(buckets), of_bests(F.col(name))).alias(name.replace("__t_", "__cut_"))


def with_bounds(per_key: DataFrame, counts: DataFrame, cuts: Cuts) -> DataFrame:
    """`per_key` with each cut column's bound of its partition, from `counts` broadcast (one row
    per partition).

    `counts` is read as a whole, as the job collects it (`read_whole`). The join is null-safe so
    Spark infers no filter on the partition that would change that plan too."""
    names = [f"__cut_{j}" for j in (*cuts.by_change, *cuts.by_key)]
    right = F.broadcast(read_whole(counts).select(F.col(PARTITION_COLUMN).alias("__ck"), *names))
    return per_key.join(right, F.col(PARTITION_COLUMN).eqNullSafe(F.col("__ck")), how="left").drop("__ck")


def read_whole(counts: DataFrame) -> DataFrame:
    """`counts` behind an always-true filter that reads every column of it (a hash modulo 2 is
    below 2), on one row per partition. Pruned to the few bound columns the join needs, the
    counts would be a plan of their own, and Spark would run the key grouping and the counts a
    second time instead of reusing the ones the job collects. `tests/e2e/test_speed_plans.py`
    fails if the filter stops saving that grouping."""
    every_column = F.xxhash64(*[F.col(c) for c in counts.columns])
    return counts.filter(F.pmod(every_column, F.lit(2)) < F.lit(2))


def kept(cuts: Cuts, j: int, d: Diff, first_key: Column) -> Column:
    """Column j's change on a key is ranked: it changed, and meets the bound where there is one."""
    c = F.col(f"__cut_{j}")
    if j in cuts.by_change:
        return d.changed & (c.isNull() | (F.coalesce(d.abs_diff, F.lit(_INF)) >= c))
    if j in cuts.by_key:
        return d.changed & (c.isNull() | first_key.isNull() | (first_key.cast("double") <= c))
    return d.changed
