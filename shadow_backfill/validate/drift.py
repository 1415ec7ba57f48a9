"""Drift of every shadow partition against the same live partition, in grouped passes.

However many partitions are validated, the work is a fixed number of Spark jobs over the
union of shadow and live, each grouped by (partition, side):

1. profile: row counts, null counts, mean, std, live deciles, distinct counts, and the
   aggregates of the compiled expectations;
2. histograms of numeric columns on the live deciles of the same partition (for PSI and KS);
3. category frequencies of low-cardinality string/boolean columns;
4. a key-level diff (full outer join on keys + partition): added, removed, changed rows and
   changed counts per column.

Only these aggregates reach the driver: a few rows per partition and column, never data rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, NumericType, StringType, StructType

K, SIDE = "__sb_k", "__sb_side"
QUANTILES = [i / 10 for i in range(1, 10)]
EPS = 1e-4


@dataclass
class ColumnPlan:
    """Which columns get which drift metrics (derived from the two schemas)."""

    numeric: list[str]
    categorical: list[str]
    compared: list[str]  # same name and type on both sides: key-diff comparison
    added: list[str]
    removed: list[str]
    retyped: list[tuple[str, str, str]]


def plan_columns(shadow: StructType, live: StructType, partition: str, keys: Sequence[str]) -> ColumnPlan:
    s = {f.name: f.dataType for f in shadow.fields}
    lv = {f.name: f.dataType for f in live.fields}
    skip = {partition, *keys}
    common = [c for c in s if c in lv and c not in skip]
    same = [c for c in common if s[c] == lv[c]]
    return ColumnPlan(
        numeric=[c for c in same if isinstance(s[c], NumericType)],
        categorical=[c for c in same if isinstance(s[c], (StringType, BooleanType))],
        compared=same,
        added=[c for c in s if c not in lv],
        removed=[c for c in lv if c not in s],
        retyped=[(c, lv[c].simpleString(), s[c].simpleString()) for c in common if s[c] != lv[c]],
    )


@dataclass
class PartitionProfile:
    """Everything measured for one partition; `metrics` is what reports and verdicts read."""

    key: str
    live_rows: int = 0
    shadow_rows: int = 0
    shadow_aggs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)

    @property
    def live_missing(self) -> bool:
        return self.live_rows == 0


def _tag(df: DataFrame, side: str, partition: str) -> DataFrame:
    return df.withColumn(K, F.col(partition).cast("string")).withColumn(SIDE, F.lit(side))


def _psi(live: Sequence[float], shadow: Sequence[float]) -> float:
    lt, st = sum(live), sum(shadow)
    if lt == 0 or st == 0:
        return 0.0
    total = 0.0
    for lc, sc in zip(live, shadow, strict=True):
        lp, sp = max(lc / lt, EPS), max(sc / st, EPS)
        total += (sp - lp) * math.log(sp / lp)
    return total


def _ks(live: Sequence[float], shadow: Sequence[float]) -> float:
    lt, st = sum(live), sum(shadow)
    if lt == 0 or st == 0:
        return 0.0
    cl = cs = best = 0.0
    for lc, sc in zip(live, shadow, strict=True):
        cl += lc / lt
        cs += sc / st
        best = max(best, abs(cl - cs))
    return best


def _js_distance(live: Mapping[str, int], shadow: Mapping[str, int]) -> float:
    lt, st = sum(live.values()), sum(shadow.values())
    if lt == 0 or st == 0:
        return 0.0
    js = 0.0
    for v in set(live) | set(shadow):
        p, q = live.get(v, 0) / lt, shadow.get(v, 0) / st
        m = (p + q) / 2
        if p > 0:
            js += 0.5 * p * math.log2(p / m)
        if q > 0:
            js += 0.5 * q * math.log2(q / m)
    return math.sqrt(max(js, 0.0))


class DriftProfiler:
    """Runs the grouped passes for one (shadow, live) pair of partition sets."""

    def __init__(
        self,
        shadow: DataFrame,
        live: DataFrame,
        *,
        partition: str,
        keys: Sequence[str],
        max_categories: int,
        extra_aggs: Mapping[str, Column] | None = None,
    ) -> None:
        self.partition = partition
        self.keys = list(keys)
        self.max_categories = max_categories
        self.plan = plan_columns(shadow.schema, live.schema, partition, keys)
        self.shadow = shadow
        self.live = live
        self.union = _tag(shadow, "shadow", partition).unionByName(
            _tag(live, "live", partition), allowMissingColumns=True
        )
        self.extra_aggs = dict(extra_aggs or {})

    def run(self, partition_texts: Sequence[str]) -> dict[str, PartitionProfile]:
        profiles = {t: PartitionProfile(t) for t in partition_texts}
        self._profile(profiles)
        self._histograms(profiles)
        self._categories(profiles)
        self._key_diff(profiles)
        return profiles

    # ---- pass 1 ---------------------------------------------------------------------------------

    def _profile(self, profiles: dict[str, PartitionProfile]) -> None:
        p = self.plan
        aggs: list[Column] = [F.count(F.lit(1)).alias("__rows")]
        null_cols = [*p.compared, *p.added]
        for i, c in enumerate(null_cols):
            aggs.append(F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(f"__null_{i}"))
        for i, c in enumerate(p.numeric):
            x = F.col(c).cast("double")
            aggs += [F.avg(x).alias(f"__mean_{i}"), F.stddev_samp(x).alias(f"__std_{i}")]
        for i, c in enumerate(p.categorical):
            aggs.append(F.approx_count_distinct(F.col(c)).alias(f"__nd_{i}"))
        if self.keys:
            aggs.append(F.countDistinct(*[F.col(k) for k in self.keys]).alias("__keys_distinct"))
        aggs += [col.alias(name) for name, col in self.extra_aggs.items()]
        rows = self.union.groupBy(K, SIDE).agg(*aggs).collect()

        self._high_cardinality: set[str] = set()
        for r in rows:
            prof = profiles.get(r[K])
            if prof is None:
                continue
            side = r[SIDE]
            n = int(r["__rows"])
            if side == "live":
                prof.live_rows = n
            else:
                prof.shadow_rows = n
                prof.shadow_aggs = {name: r[name] for name in self.extra_aggs}
                if self.keys:
                    prof.keys["duplicates"] = n - int(r["__keys_distinct"])
            for i, c in enumerate(null_cols):
                if side == "live" and c in p.added:
                    continue  # not a live column: its nulls there come from the union, not from live
                col = prof.columns.setdefault(c, {})
                col[f"{side}_null_rate"] = (int(r[f"__null_{i}"]) / n) if n else 0.0
            for i, c in enumerate(p.numeric):
                col = prof.columns.setdefault(c, {})
                col[f"{side}_mean"] = r[f"__mean_{i}"]
                col[f"{side}_std"] = r[f"__std_{i}"]
            for i, c in enumerate(p.categorical):
                if (r[f"__nd_{i}"] or 0) > self.max_categories:
                    self._high_cardinality.add(c)

    # ---- pass 2 ---------------------------------------------------------------------------------

    def _histograms(self, profiles: dict[str, PartitionProfile]) -> None:
        """Live deciles per partition stay in Spark (a small broadcast join), so no edge list is
        shipped back as literals however many partitions there are."""
        numeric = self.plan.numeric
        if not numeric:
            return
        xs = [F.col(c).cast("double") for c in numeric]
        edges_df = (
            self.union.filter(F.col(SIDE) == F.lit("live"))
            .groupBy(K)
            # One scalar percentile per decile: Sail (DataFusion) has no array form of it.
            .agg(
                *[
                    F.array(*[F.percentile_approx(x, q, 10000) for q in QUANTILES]).alias(f"__q_{i}")
                    for i, x in enumerate(xs)
                ]
            )
        )
        edges: dict[tuple[str, str], list[float]] = {}
        for r in edges_df.collect():
            for i, c in enumerate(numeric):
                qs = r[f"__q_{i}"]
                if qs is not None and None not in qs:  # all-null live column: no bins to compare on
                    edges[(r[K], c)] = [float(q) for q in qs]
        if not edges:
            return
        n_edges = len(QUANTILES)
        bins = [
            F.struct(
                F.lit(i).alias("i"),
                F.when(
                    x.isNotNull() & F.col(f"__q_{i}").isNotNull(),
                    sum(
                        (F.when(x > F.element_at(F.col(f"__q_{i}"), j + 1), 1).otherwise(0) for j in range(n_edges)),
                        F.lit(0),
                    ),
                ).alias("b"),
            )
            for i, x in enumerate(xs)
        ]
        rows = (
            self.union.join(F.broadcast(edges_df), on=K, how="inner")
            .select(K, SIDE, F.explode(F.array(*bins)).alias("ib"))
            .filter(F.col("ib.b").isNotNull())
            .groupBy(K, SIDE, F.col("ib.i").alias("i"), F.col("ib.b").alias("b"))
            .count()
            .collect()
        )
        hist: dict[tuple[str, str, str], list[float]] = {}
        for r in rows:
            key = (r[K], r[SIDE], numeric[r["i"]])
            hist.setdefault(key, [0.0] * (n_edges + 1))[r["b"]] = float(r["count"])
        empty = [0.0] * (n_edges + 1)
        for text, prof in profiles.items():
            for c in numeric:
                e = edges.get((text, c))
                if e is None:
                    continue
                lh, sh = hist.get((text, "live", c), empty), hist.get((text, "shadow", c), empty)
                col = prof.columns.setdefault(c, {})
                col["hist"] = {"edges": e, "live": lh, "shadow": sh}
                col["psi"] = _psi(lh, sh)
                col["ks"] = _ks(lh, sh)

    # ---- pass 3 ---------------------------------------------------------------------------------

    def _categories(self, profiles: dict[str, PartitionProfile]) -> None:
        cats = [c for c in self.plan.categorical if c not in getattr(self, "_high_cardinality", set())]
        if not cats:
            return
        pairs = F.explode(
            F.array(*[F.struct(F.lit(c).alias("c"), F.col(c).cast("string").alias("v")) for c in cats])
        ).alias("cv")
        rows = (
            self.union.select(K, SIDE, pairs)
            .groupBy(K, SIDE, F.col("cv.c").alias("c"), F.col("cv.v").alias("v"))
            .count()
            .collect()
        )
        freq: dict[tuple[str, str, str], dict[str, int]] = {}
        for r in rows:
            if r["v"] is None:
                continue  # nulls are judged by the null-rate check
            freq.setdefault((r[K], r[SIDE], r["c"]), {})[r["v"]] = int(r["count"])
        for text, prof in profiles.items():
            for c in cats:
                lf, sf = freq.get((text, "live", c), {}), freq.get((text, "shadow", c), {})
                col = prof.columns.setdefault(c, {})
                col["categories"] = {"live": lf, "shadow": sf}
                if lf and sf:
                    col["js_distance"] = _js_distance(lf, sf)
                col["new"] = sorted(set(sf) - set(lf)) if lf else []
                col["vanished"] = sorted(set(lf) - set(sf)) if sf or lf else []

    # ---- pass 4 ---------------------------------------------------------------------------------

    def _key_diff(self, profiles: dict[str, PartitionProfile]) -> None:
        if not self.keys:
            return
        join_cols = [*self.keys, self.partition]
        compared = self.plan.compared
        s = self.shadow.select(
            *[F.col(c).alias(f"s__{c}") for c in join_cols],
            *[F.col(c).alias(f"s_{c}") for c in compared],
            F.lit(1).alias("s__present"),
        )
        lv = self.live.select(
            *[F.col(c).alias(f"l__{c}") for c in join_cols],
            *[F.col(c).alias(f"l_{c}") for c in compared],
            F.lit(1).alias("l__present"),
        )
        cond = [F.col(f"s__{c}").eqNullSafe(F.col(f"l__{c}")) for c in join_cols]
        joined = s.join(lv, on=cond, how="full_outer")
        both = F.col("s__present").isNotNull() & F.col("l__present").isNotNull()
        diffs = [~F.col(f"s_{c}").eqNullSafe(F.col(f"l_{c}")) for c in compared]
        any_diff = F.lit(False)
        for d in diffs:
            any_diff = any_diff | d
        k = F.coalesce(F.col(f"s__{self.partition}"), F.col(f"l__{self.partition}")).cast("string")
        aggs = [
            F.sum(F.when(F.col("l__present").isNull(), 1).otherwise(0)).alias("added"),
            F.sum(F.when(F.col("s__present").isNull(), 1).otherwise(0)).alias("removed"),
            F.sum(F.when(both, 1).otherwise(0)).alias("matched"),
            F.sum(F.when(both & any_diff, 1).otherwise(0)).alias("changed"),
            *[F.sum(F.when(both & d, 1).otherwise(0)).alias(f"__c_{i}") for i, d in enumerate(diffs)],
        ]
        for r in joined.groupBy(k.alias(K)).agg(*aggs).collect():
            prof = profiles.get(r[K])
            if prof is None:
                continue
            prof.keys.update(
                added=int(r["added"]),
                removed=int(r["removed"]),
                matched=int(r["matched"]),
                changed=int(r["changed"]),
                changed_by_column={c: int(r[f"__c_{i}"]) for i, c in enumerate(compared)},
            )
