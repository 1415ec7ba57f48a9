"""Drift of every shadow partition against the same live partition, in two Spark jobs.

However many partitions are validated, the work is two jobs over the union of shadow and live:

1. **profile**, grouped by (partition, side): row counts, null counts, mean, std, live deciles
   and the aggregates of the compiled expectations, all in one aggregation;
2. **facts**: every row becomes a handful of small facts — its key (with a hash of each compared
   column), its bin on the live deciles of its partition per numeric column, its value per
   categorical column, its value per uniqueness expectation. One grouping of
   the facts by (partition, fact, value) and one by (partition, fact) give the key-level diff
   (added, removed, changed, duplicates), the histograms for PSI/KS, category frequencies and
   uniqueness counts.

Why two and not one job per metric: on small partitions every Spark job costs a scan, a
shuffle and scheduling, which dwarfs the arithmetic; the key diff no longer needs a join
(a group by key of the union does the same work with one shuffle).

Only aggregates reach the driver: a few rows per partition and column, never data rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
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
    unique: dict[str, tuple[int, int]] = field(default_factory=dict)  # column -> (non-null, not unique)

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


_array_percentiles_work: bool | None = None  # Sail (DataFusion) has only the scalar form


def _live_deciles(x: Column, *, array_form: bool) -> Column:
    if array_form:
        return F.percentile_approx(x, QUANTILES, 10000)
    return F.array(*[F.percentile_approx(x, q, 10000) for q in QUANTILES])


@dataclass(frozen=True)
class _Fact:
    kind: str  # "key", "bin", "category", "unique"
    column: str | None
    value: Column  # the string the fact is grouped by; null = no fact for this row


class DriftProfiler:
    """Runs the two grouped jobs for one (shadow, live) pair of partition sets."""

    def __init__(
        self,
        shadow: DataFrame,
        live: DataFrame,
        *,
        partition: str,
        keys: Sequence[str],
        max_categories: int,
        extra_aggs: Mapping[str, Column] | None = None,
        unique_columns: Sequence[str] = (),
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
        self.unique_columns = list(dict.fromkeys(unique_columns))
        self.jobs = 0  # Spark jobs run, for benchmarks and tests

    def run(self, partition_texts: Sequence[str]) -> dict[str, PartitionProfile]:
        profiles = {t: PartitionProfile(t) for t in partition_texts}
        edges, low_cardinality = self._profile(profiles)
        self._facts(profiles, edges, low_cardinality)
        return profiles

    # ---- job 1: profile -------------------------------------------------------------------------

    def _profile(self, profiles: dict[str, PartitionProfile]) -> tuple[dict[str, dict[str, list[float]]], list[str]]:
        """One aggregation by (partition, side); returns live deciles per partition and column,
        and the categorical columns to compare by frequency."""
        global _array_percentiles_work
        p = self.plan
        is_live = F.col(SIDE) == F.lit("live")
        aggs: list[Column] = [F.count(F.lit(1)).alias("__rows")]
        null_cols = [*p.compared, *p.added]
        for i, c in enumerate(null_cols):
            aggs.append(F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(f"__null_{i}"))
        for i, c in enumerate(p.numeric):
            x = F.col(c).cast("double")
            aggs += [F.avg(x).alias(f"__mean_{i}"), F.stddev_samp(x).alias(f"__std_{i}")]
        aggs += [col.alias(name) for name, col in self.extra_aggs.items()]

        def collect(array_form: bool) -> list[Any]:
            deciles = [
                _live_deciles(F.when(is_live, F.col(c).cast("double")), array_form=array_form).alias(f"__q_{i}")
                for i, c in enumerate(p.numeric)
            ]
            self.jobs += 1
            return self.union.groupBy(K, SIDE).agg(*aggs, *deciles).collect()

        if not p.numeric:
            rows = collect(True)
        elif _array_percentiles_work is not False:
            try:
                rows = collect(True)
                _array_percentiles_work = True
            except Exception:
                if _array_percentiles_work:
                    raise
                _array_percentiles_work = False
                rows = collect(False)
        else:
            rows = collect(False)

        edges: dict[str, dict[str, list[float]]] = {}
        for r in rows:
            prof = profiles.get(r[K])
            if prof is None:
                continue
            side = r[SIDE]
            n = int(r["__rows"])
            if side == "live":
                prof.live_rows = n
                for i, c in enumerate(p.numeric):
                    qs = r[f"__q_{i}"]
                    if qs is not None and None not in qs:  # all-null live column: no bins to compare on
                        edges.setdefault(r[K], {})[c] = [float(q) for q in qs]
            else:
                prof.shadow_rows = n
                prof.shadow_aggs = {name: r[name] for name in self.extra_aggs}
            for i, c in enumerate(null_cols):
                if side == "live" and c in p.added:
                    continue  # not a live column: its nulls there come from the union, not from live
                col = prof.columns.setdefault(c, {})
                col[f"{side}_null_rate"] = (int(r[f"__null_{i}"]) / n) if n else 0.0
            for i, c in enumerate(p.numeric):
                col = prof.columns.setdefault(c, {})
                col[f"{side}_mean"] = r[f"__mean_{i}"]
                col[f"{side}_std"] = r[f"__std_{i}"]
        return edges, list(p.categorical)

    # ---- job 2: facts ---------------------------------------------------------------------------

    def _edges_frame(self, edges: dict[str, dict[str, list[float]]]) -> DataFrame:
        """The live deciles as a small frame to broadcast: one JSON literal parsed in Spark, so
        the plan holds one value however many partitions, and no Python worker is started."""
        numeric = self.plan.numeric
        rows = [{"k": k, **{f"e{i}": by_col.get(c) for i, c in enumerate(numeric)}} for k, by_col in edges.items()]
        schema = "array<struct<k:string," + ",".join(f"e{i}:array<double>" for i in range(len(numeric))) + ">>"
        spark = self.union.sparkSession
        parsed = spark.range(1).select(F.explode(F.from_json(F.lit(json.dumps(rows)), schema)).alias("r"))
        return parsed.select(F.col("r.k").alias(K), *[F.col(f"r.e{i}").alias(f"__e_{i}") for i in range(len(numeric))])

    def _fact_list(self, with_edges: bool, categories: list[str]) -> list[_Fact]:
        facts: list[_Fact] = []
        if self.keys:
            facts.append(_Fact("key", None, F.to_json(F.struct(*[F.col(k) for k in self.keys]))))
        if with_edges:
            n_edges = len(QUANTILES)
            for i, c in enumerate(self.plan.numeric):
                x, e = F.col(c).cast("double"), F.col(f"__e_{i}")
                above = sum((F.when(x > F.element_at(e, j + 1), 1).otherwise(0) for j in range(n_edges)), F.lit(0))
                facts.append(_Fact("bin", c, F.when(x.isNotNull() & e.isNotNull(), above)))
        for c in categories:
            facts.append(_Fact("category", c, F.col(c)))  # nulls are judged by the null-rate check
        for c in self.unique_columns:
            facts.append(_Fact("unique", c, F.when(F.col(SIDE) == F.lit("shadow"), F.col(c))))
        return facts

    def _facts(
        self,
        profiles: dict[str, PartitionProfile],
        edges: dict[str, dict[str, list[float]]],
        categories: list[str],
    ) -> None:
        source = self.union
        if edges:
            source = source.join(F.broadcast(self._edges_frame(edges)), on=K, how="left")
        facts = self._fact_list(bool(edges), categories)
        if not facts:
            return
        compared = self.plan.compared if self.keys else []
        key_fact = F.col("__fi") == F.lit(0) if self.keys else F.lit(False)
        # Each fact's value is computed once per row, below the explode, which then only picks
        # one: this keeps the per-fact work (and the generated code) small.
        per_row = source.select(
            K,
            SIDE,
            *[f.value.cast("string").alias(f"__f_{i}") for i, f in enumerate(facts)],
            *[F.xxhash64(F.col(c)).alias(f"__x_{j}") for j, c in enumerate(compared)],
        )
        fi = F.col("__fi")
        value = F.when(fi == F.lit(0), F.col("__f_0"))
        for i in range(1, len(facts)):
            value = value.when(fi == F.lit(i), F.col(f"__f_{i}"))
        exploded = (
            per_row.withColumn("__fi", F.explode(F.array(*[F.lit(i) for i in range(len(facts))])))
            .select(
                K,
                SIDE,
                fi,
                value.alias("__v"),
                *[F.when(key_fact, F.col(f"__x_{j}")).alias(f"__h_{j}") for j in range(len(compared))],
            )
            .filter(F.col("__v").isNotNull())
        )

        shadow, live = F.col(SIDE) == F.lit("shadow"), F.col(SIDE) == F.lit("live")
        by_value = exploded.groupBy(K, "__fi", "__v").agg(
            F.sum(F.when(shadow, 1).otherwise(0)).alias("ns"),
            F.sum(F.when(live, 1).otherwise(0)).alias("nl"),
            *[F.max(F.when(shadow, F.col(f"__h_{j}"))).alias(f"__sh_{j}") for j in range(len(compared))],
            *[F.max(F.when(live, F.col(f"__h_{j}"))).alias(f"__lh_{j}") for j in range(len(compared))],
        )
        ns, nl = F.col("ns"), F.col("nl")
        both = (ns > 0) & (nl > 0)
        diffs = [~F.col(f"__sh_{j}").eqNullSafe(F.col(f"__lh_{j}")) for j in range(len(compared))]
        any_diff = F.lit(False)
        for d in diffs:
            any_diff = any_diff | d
        per_value = [i for i, f in enumerate(facts) if f.kind in ("bin", "category")]
        kept = F.when(fi.isin([F.lit(i) for i in per_value]), F.col("__v")) if per_value else F.lit(None).cast("string")
        grouped = by_value.groupBy(K, "__fi", kept.alias("__v")).agg(
            F.sum(ns).alias("ns"),
            F.sum(nl).alias("nl"),
            F.sum(F.when(nl == 0, ns).otherwise(0)).alias("added"),
            F.sum(F.when(ns == 0, nl).otherwise(0)).alias("removed"),
            F.sum(F.when(both, 1).otherwise(0)).alias("matched"),
            F.sum(F.when(both & any_diff, 1).otherwise(0)).alias("changed"),
            F.sum(F.greatest(ns - 1, F.lit(0))).alias("duplicates"),
            F.sum(F.when(ns > 1, ns).otherwise(0)).alias("not_unique"),
            *[F.sum(F.when(both & d, 1).otherwise(0)).alias(f"__c_{j}") for j, d in enumerate(diffs)],
        )
        # A categorical column with more than max_categories values in a partition is not
        # compared by frequency: only its count and one of its values reach the driver.
        category_ids = [i for i, f in enumerate(facts) if f.kind == "category"]
        if category_ids:
            per_fact = Window.partitionBy(K, "__fi")
            is_category = fi.isin([F.lit(i) for i in category_ids])
            grouped = (
                grouped.withColumn("__nd", F.count(F.lit(1)).over(per_fact))
                .withColumn("__rn", F.row_number().over(per_fact.orderBy("__v")))
                .filter(~is_category | (F.col("__nd") <= F.lit(self.max_categories)) | (F.col("__rn") == F.lit(1)))
            )
        else:
            grouped = grouped.withColumn("__nd", F.lit(0))
        rows = grouped.collect()
        self.jobs += 1

        high_cardinality = {
            str(facts[r["__fi"]].column)
            for r in rows
            if facts[r["__fi"]].kind == "category" and r["__nd"] > self.max_categories
        }
        categories = [c for c in categories if c not in high_cardinality]
        n_bins = len(QUANTILES) + 1
        hist: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        freq: dict[tuple[str, str], tuple[dict[str, int], dict[str, int]]] = {}
        for r in rows:
            prof = profiles.get(r[K])
            if prof is None:
                continue
            f = facts[r["__fi"]]
            if f.kind == "key":
                prof.keys.update(
                    added=int(r["added"]),
                    removed=int(r["removed"]),
                    matched=int(r["matched"]),
                    changed=int(r["changed"]),
                    duplicates=int(r["duplicates"]),
                    changed_by_column={c: int(r[f"__c_{j}"]) for j, c in enumerate(compared)},
                )
            elif f.kind == "unique":
                prof.unique[str(f.column)] = (int(r["ns"]), int(r["not_unique"]))
            elif f.kind == "bin":
                lh, sh = hist.setdefault((r[K], str(f.column)), ([0.0] * n_bins, [0.0] * n_bins))
                lh[int(r["__v"])] += float(r["nl"])
                sh[int(r["__v"])] += float(r["ns"])
            elif f.column not in high_cardinality:
                lf, sf = freq.setdefault((r[K], str(f.column)), ({}, {}))
                if r["nl"]:
                    lf[r["__v"]] = int(r["nl"])
                if r["ns"]:
                    sf[r["__v"]] = int(r["ns"])

        for text, prof in profiles.items():
            if self.keys:
                prof.keys.setdefault("duplicates", 0)
                for name in ("added", "removed", "matched", "changed"):
                    prof.keys.setdefault(name, 0)
                prof.keys.setdefault("changed_by_column", {c: 0 for c in compared})
            for c in self.unique_columns:
                prof.unique.setdefault(c, (0, 0))
            for c, e in edges.get(text, {}).items():
                lh, sh = hist.get((text, c), ([0.0] * n_bins, [0.0] * n_bins))
                col = prof.columns.setdefault(c, {})
                col["hist"] = {"edges": e, "live": lh, "shadow": sh}
                col["psi"] = _psi(lh, sh)
                col["ks"] = _ks(lh, sh)
            for c in categories:
                lf, sf = freq.get((text, c), ({}, {}))
                col = prof.columns.setdefault(c, {})
                col["categories"] = {"live": lf, "shadow": sf}
                if lf and sf:
                    col["js_distance"] = _js_distance(lf, sf)
                col["new"] = sorted(set(sf) - set(lf)) if lf else []
                col["vanished"] = sorted(set(lf) - set(sf)) if sf or lf else []
