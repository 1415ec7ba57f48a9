"""The reference measurer: the measurements of `measurements.py` from the plainest queries that
compute them, as a diff tool would (datacompy's Spark comparison joins both tables on their keys).

- Per side, one grouping by partition: rows, non-null values, mean, std and sum per column.
- The key diff: each side grouped to one row per (partition, key), then a null-safe full outer
  join of shadow and live on partition and key columns. A repeated key's value on a side is its
  largest: for a number its largest value, for any other value its largest 64-bit hash (a null
  hashes too), the rule the fast jobs keep (a fan-out duplicate repeats the same value, so it
  is no change; rows of one key that differ compare by the one the rule keeps).
- The histograms: live's exact deciles by rank (the value of rank ceil(q * n), what
  `percentile_approx` returns exactly below its accuracy of 10,000 rows), then every row of
  both sides counted into the bins of those deciles plus the tolerance.
- The categories and the uniqueness counts: a grouping by value.

It runs a job or more per kind of measurement and a join of both tables: it is the oracle the
fast jobs (`fast.FastMeasurer`) are held to on every backend
(`tests/formats/test_measure_reference.py`), never a path of a validation. It measures neither
the samples (a ranking, not a count) nor the expectations' aggregates (held to GX by
`tests/e2e/test_fast_vs_gx.py`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure.bins import QUANTILES
from shadow_backfill.validate.measure.plan import plan_columns
from shadow_backfill.validate.measurements import (
    Categories,
    ColumnDiff,
    ColumnPlan,
    Histogram,
    KeyDiff,
    Moments,
    PartitionProfile,
    SideStats,
    Uniqueness,
)

Edges = Mapping[str, Mapping[str, Sequence[float]]]  # partition text -> numeric column -> deciles
N_BINS = len(QUANTILES) + 1


@dataclass(frozen=True)
class ReferenceMeasurer:
    """Shadow and live partitions by the plain queries; `partition` names the partition column
    and each partition is named by that column's value as text (so a partition column that
    holds a timestamp within a period, a ranged scheme, is not for this measurer)."""

    partition: str
    keys: Sequence[str]
    max_categories: int
    tolerance: Tolerance = EXACT
    unique_columns: Sequence[str] = ()

    def measure(
        self, shadow: DataFrame, live: DataFrame, texts: Sequence[str], edges: Edges | None = None
    ) -> dict[str, PartitionProfile]:
        """Every partition of `texts`; the histograms on `edges` when given (to count on the
        same bins as the fast path found), else on live's exact deciles."""
        plan = plan_columns(shadow.schema, live.schema, self.partition, self.keys)
        profiles = {t: PartitionProfile(t) for t in texts}
        for side, df, columns in (("shadow", shadow, [*plan.compared, *plan.added]), ("live", live, plan.compared)):
            self._side_stats(side, df, columns, plan, profiles)
        if self.keys:
            self._key_diff(shadow, live, plan, profiles)
        found = self.exact_deciles(live, plan) if edges is None else edges
        self._histograms(shadow, live, plan.numeric, found, profiles)
        self._categories(shadow, live, plan.categorical, profiles)
        self._uniqueness(shadow, profiles)
        return profiles

    def _text(self) -> Column:
        return F.col(self.partition).cast("string").alias("p")

    def _side_stats(
        self, side: str, df: DataFrame, columns: list[str], plan: ColumnPlan, profiles: dict[str, PartitionProfile]
    ) -> None:
        aggs = [F.count(F.lit(1)).alias("rows")]
        aggs += [F.count(F.col(c)).alias(f"n{i}") for i, c in enumerate(columns)]
        measured = [*plan.numeric, *(c for c in plan.added_numeric if c in columns)]
        for i, c in enumerate(measured):
            x = F.col(c).cast("double")
            aggs += [F.avg(x).alias(f"mean{i}"), F.stddev_samp(x).alias(f"std{i}"), F.sum(x).alias(f"sum{i}")]
            aggs += [F.min(x).alias(f"min{i}"), F.max(x).alias(f"max{i}")] if c in plan.added_numeric else []
        for r in df.groupBy(self._text()).agg(*aggs).collect():
            if (prof := profiles.get(r["p"])) is None:
                continue
            rows = int(r["rows"])
            setattr(prof, f"{side}_rows", rows)
            for i, c in enumerate(columns):
                moments, extremes = None, None
                if c in measured:
                    j = measured.index(c)
                    moments = Moments(r[f"mean{j}"], r[f"std{j}"], r[f"sum{j}"])
                    extremes = (r[f"min{j}"], r[f"max{j}"]) if c in plan.added_numeric else None
                count = int(r[f"n{i}"])
                prof.set_column(c, **{side: SideStats(count, (rows - count) / rows, moments, extremes)})

    def _one_row_per_key(self, df: DataFrame, plan: ColumnPlan) -> DataFrame:
        values = [
            F.max(F.col(c).cast("double") if c in plan.numeric else F.xxhash64(F.col(c))).alias(f"v{j}")
            for j, c in enumerate(plan.compared)
        ]
        keys = [F.col(k).alias(f"k{i}") for i, k in enumerate(self.keys)]
        return df.groupBy(self._text(), *keys).agg(F.count(F.lit(1)).alias("rows"), *values)

    def _equal(self, s: Column, lv: Column, numeric: bool) -> Column:
        """Null-safe equality (of hashes for non-numbers), numbers within |s - l| <= abs + rel * |l|."""
        if not numeric:
            return s.eqNullSafe(lv)
        close = self.tolerance.close(s, lv, F.abs)
        return s.eqNullSafe(lv) | (s.isNotNull() & lv.isNotNull() & close)

    def _key_diff(
        self, shadow: DataFrame, live: DataFrame, plan: ColumnPlan, profiles: dict[str, PartitionProfile]
    ) -> None:
        s, lv = self._one_row_per_key(shadow, plan).alias("s"), self._one_row_per_key(live, plan).alias("l")
        on = F.col("s.p").eqNullSafe(F.col("l.p"))
        for i in range(len(self.keys)):
            on = on & F.col(f"s.k{i}").eqNullSafe(F.col(f"l.k{i}"))
        joined = s.join(lv, on, "full_outer")
        matched = F.col("s.rows").isNotNull() & F.col("l.rows").isNotNull()
        changed = [
            matched & ~self._equal(F.col(f"s.v{j}"), F.col(f"l.v{j}"), c in plan.numeric)
            for j, c in enumerate(plan.compared)
        ]
        any_change = F.lit(False)
        for ch in changed:
            any_change = any_change | ch
        aggs = [
            F.sum(F.when(F.col("l.rows").isNull(), F.col("s.rows")).otherwise(0)).alias("added"),
            F.sum(F.when(F.col("s.rows").isNull(), F.col("l.rows")).otherwise(0)).alias("removed"),
            F.count(F.when(matched, 1)).alias("matched"),
            F.count(F.when(any_change, 1)).alias("changed"),
            F.sum(F.greatest(F.coalesce(F.col("s.rows"), F.lit(0)) - 1, F.lit(0))).alias("duplicates"),
            *[F.count(F.when(ch, 1)).alias(f"c{j}") for j, ch in enumerate(changed)],
        ]
        for j, c in enumerate(plan.compared):
            if c in plan.numeric:
                s_value, l_value = F.col(f"s.v{j}"), F.col(f"l.v{j}")
                same = s_value.isNotNull() & l_value.isNotNull() & (s_value == l_value)  # inf - inf: no difference
                diff = F.when(matched, F.when(same, F.lit(0.0)).otherwise(F.abs(s_value - l_value)))
                aggs += [F.max(diff).alias(f"max{j}"), F.avg(diff).alias(f"mean{j}")]
        for r in joined.groupBy(F.coalesce(F.col("s.p"), F.col("l.p")).alias("p")).agg(*aggs).collect():
            if (prof := profiles.get(r["p"])) is None:
                continue
            by_column = {
                c: ColumnDiff(int(r[f"c{j}"]), (r[f"max{j}"], r[f"mean{j}"]) if c in plan.numeric else None)
                for j, c in enumerate(plan.compared)
            }
            counts = {n: int(r[n]) for n in ("added", "removed", "matched", "changed", "duplicates")}
            prof.keys = KeyDiff(**counts, by_column=by_column)
        for prof in profiles.values():
            if prof.keys is None:  # no key on either side
                prof.keys = KeyDiff(by_column={c: ColumnDiff(0) for c in plan.compared})

    def _long(self, df: DataFrame, columns: Sequence[str], numeric: bool) -> DataFrame:
        """One row per (row, column): partition `p`, column name `c`, value `x` (a double for
        numbers, else text); nulls left out. One job then serves every column."""
        value = (lambda c: F.col(c).cast("double")) if numeric else (lambda c: F.col(c).cast("string"))
        cells = F.array(*[F.struct(F.lit(c).alias("c"), value(c).alias("x")) for c in columns])
        return (
            df.select(self._text(), F.explode(cells).alias("cell"))
            .select("p", "cell.c", "cell.x")
            .filter(F.col("x").isNotNull())
        )

    def exact_deciles(self, live: DataFrame, plan: ColumnPlan) -> dict[str, dict[str, list[float]]]:
        """Per partition and numeric column, live's value of rank ceil(q * n) for each decile q
        (rank 1 at least), n its non-null values; nothing for a column with no such value."""
        if not plan.numeric:
            return {}
        per_column = Window.partitionBy("p", "c")
        ranked = (
            self._long(live, plan.numeric, numeric=True)
            .withColumn("r", F.row_number().over(per_column.orderBy("x")))
            .withColumn("n", F.count(F.lit(1)).over(per_column))
        )
        wanted = F.lit(False)
        for q in QUANTILES:
            wanted = wanted | (F.col("r") == F.greatest(F.ceil(F.lit(q) * F.col("n")), F.lit(1)))
        by_rank: dict[tuple[str, str], dict[int, float]] = {}
        n_of: dict[tuple[str, str], int] = {}
        for r in ranked.filter(wanted).collect():
            by_rank.setdefault((r["p"], r["c"]), {})[int(r["r"])] = float(r["x"])
            n_of[(r["p"], r["c"])] = int(r["n"])
        out: dict[str, dict[str, list[float]]] = {}
        for (p, c), values in by_rank.items():
            out.setdefault(p, {})[c] = [values[max(1, math.ceil(q * n_of[(p, c)]))] for q in QUANTILES]
        return out

    def _thresholds(self, deciles: Sequence[float]) -> list[float]:
        """Each decile plus the tolerance, kept ascending (a value within tolerance of an edge
        is on it)."""
        out: list[float] = []
        for q in deciles:
            t = self.tolerance.upper(q)
            out.append(out[-1] if out and t < out[-1] else t)
        return out

    def _histograms(
        self,
        shadow: DataFrame,
        live: DataFrame,
        numeric: Sequence[str],
        edges: Edges,
        profiles: dict[str, PartitionProfile],
    ) -> None:
        """Every row of both sides counted into the bins of its partition's thresholds: its bin
        is the number of thresholds it lies above."""
        binned = [(p, c) for p, by_col in edges.items() if p in profiles for c in numeric if by_col.get(c)]
        if not binned:
            return
        names = [f"t{j}" for j in range(len(QUANTILES))]
        rows = [(p, c, *self._thresholds(edges[p][c])) for p, c in binned]
        schema = "p string, c string, " + ", ".join(f"{n} double" for n in names)
        thresholds = shadow.sparkSession.createDataFrame(rows, schema)
        bin_of = sum((F.when(F.col("x") > F.col(n), 1).otherwise(0) for n in names), F.lit(0))
        both = self._long(shadow, numeric, numeric=True).withColumn("side", F.lit("shadow"))
        both = both.unionByName(self._long(live, numeric, numeric=True).withColumn("side", F.lit("live")))
        counts: dict[tuple[str, str, str], list[float]] = {}
        for r in both.join(thresholds, ["p", "c"]).groupBy("p", "c", "side", bin_of.alias("b")).count().collect():
            counts.setdefault((r["p"], r["c"], r["side"]), [0.0] * N_BINS)[int(r["b"])] += float(r["count"])
        for p, c in binned:
            live_bins, shadow_bins = (tuple(counts.get((p, c, side), [0.0] * N_BINS)) for side in ("live", "shadow"))
            profiles[p].set_column(c, histogram=Histogram(tuple(edges[p][c]), live_bins, shadow_bins))

    def _value_counts(self, df: DataFrame, columns: Sequence[str]) -> dict[tuple[str, str], dict[str, int]]:
        """(partition, column) -> value (as text) -> rows."""
        found: dict[tuple[str, str], dict[str, int]] = {}
        if columns:
            for r in self._long(df, columns, numeric=False).groupBy("p", "c", "x").count().collect():
                found.setdefault((r["p"], r["c"]), {})[r["x"]] = int(r["count"])
        return found

    def _categories(
        self, shadow: DataFrame, live: DataFrame, categorical: Sequence[str], profiles: dict[str, PartitionProfile]
    ) -> None:
        """Both sides' value counts; a column with more than `max_categories` values in any
        partition is not compared by frequency anywhere."""
        s, lv = self._value_counts(shadow, categorical), self._value_counts(live, categorical)
        too_many = {
            c for p, c in {*s, *lv} if len(set(s.get((p, c), {})) | set(lv.get((p, c), {}))) > self.max_categories
        }
        for c in categorical:
            if c in too_many:
                continue
            for p, prof in profiles.items():
                prof.set_column(c, categories=Categories(lv.get((p, c), {}), s.get((p, c), {})))

    def _uniqueness(self, shadow: DataFrame, profiles: dict[str, PartitionProfile]) -> None:
        """Per column of `unique_columns`, shadow's non-null values and the values that repeat."""
        for (p, c), counts in self._value_counts(shadow, self.unique_columns).items():
            if p in profiles:
                not_unique = sum(n for n in counts.values() if n > 1)
                profiles[p].unique[c] = Uniqueness(sum(counts.values()), not_unique)
        for prof in profiles.values():
            for c in self.unique_columns:
                prof.unique.setdefault(c, Uniqueness())
