"""Drift job 2, the facts: every row of the shadow/live union becomes a few small facts.

A fact is (kind, column, value): a row's key (with a hash of each compared column), its bin on
its partition's live deciles per numeric column, its category per string/boolean column, its
value per uniqueness expectation. One grouping by (partition, fact, value) and one by
(partition, fact) give the key-level diff (added, removed, changed, duplicates: a group by key
of the union, so no join), histograms for PSI/KS, category frequencies and uniqueness counts.
Only those per-partition counts reach the driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from shadow_backfill.validate import stats
from shadow_backfill.validate.plan import QUANTILES, SIDE, K, PartitionProfile, is_side, tag

Edges = Mapping[str, Mapping[str, list[float]]]
N_BINS = len(QUANTILES) + 1


@dataclass(frozen=True)
class Fact:
    kind: str  # "key", "bin", "category", "unique"
    column: str | None
    value: Column  # the string the fact is grouped by; null = no fact for this row


@dataclass(frozen=True)
class FactsSpec:
    """What the facts job looks at; `compared` is empty when there are no keys to diff on."""

    keys: Sequence[str] = ()
    numeric: Sequence[str] = ()  # binned on the live deciles when edges are given
    compared: Sequence[str] = ()
    categories: Sequence[str] = ()
    unique_columns: Sequence[str] = ()
    max_categories: int = 0


def edges_frame(spark: SparkSession, numeric: Sequence[str], edges: Edges) -> DataFrame:
    """The live deciles as a small frame to broadcast: one JSON literal parsed in Spark, so
    the plan holds one value however many partitions, and no Python worker is started."""
    rows = [{"k": k, **{f"e{i}": by_col.get(c) for i, c in enumerate(numeric)}} for k, by_col in edges.items()]
    schema = "array<struct<k:string," + ",".join(f"e{i}:array<double>" for i in range(len(numeric))) + ">>"
    parsed = spark.range(1).select(F.explode(F.from_json(F.lit(json.dumps(rows)), schema)).alias("r"))
    return parsed.select(F.col("r.k").alias(K), *[F.col(f"r.e{i}").alias(f"__e_{i}") for i in range(len(numeric))])


def fact_list(spec: FactsSpec, with_edges: bool) -> list[Fact]:
    facts: list[Fact] = []
    if spec.keys:  # first, at index 0: the key-diff hashes ride only on this fact
        facts.append(Fact("key", None, F.to_json(F.struct(*[F.col(k) for k in spec.keys]))))
    if with_edges:
        for i, c in enumerate(spec.numeric):
            x, e = F.col(c).cast("double"), F.col(f"__e_{i}")
            above = sum((F.when(x > F.element_at(e, j + 1), 1).otherwise(0) for j in range(len(QUANTILES))), F.lit(0))
            facts.append(Fact("bin", c, F.when(x.isNotNull() & e.isNotNull(), above)))
    for c in spec.categories:
        facts.append(Fact("category", c, F.col(c)))  # nulls are judged by the null-rate check
    for c in spec.unique_columns:
        facts.append(Fact("unique", c, F.when(is_side("shadow"), F.col(c))))
    return facts


def _exploded(source: DataFrame, facts: list[Fact], compared: Sequence[str], keyed: bool) -> DataFrame:
    """One row per (input row, fact) with a non-null value. Each fact's value is computed once
    per row, below the explode, which then only picks one: the generated code stays small."""
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
    key_fact = fi == F.lit(0) if keyed else F.lit(False)
    return (
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


def _grouped(exploded: DataFrame, facts: list[Fact], compared: Sequence[str], max_categories: int) -> DataFrame:
    """Counts by (partition, fact, value), then by (partition, fact) — keeping the value only
    for bins and categories, whose per-value counts are the histograms."""
    shadow, live, fi = is_side("shadow"), is_side("live"), F.col("__fi")
    n = len(compared)
    by_value = exploded.groupBy(K, "__fi", "__v").agg(
        F.sum(F.when(shadow, 1).otherwise(0)).alias("ns"),
        F.sum(F.when(live, 1).otherwise(0)).alias("nl"),
        *[F.max(F.when(shadow, F.col(f"__h_{j}"))).alias(f"__sh_{j}") for j in range(n)],
        *[F.max(F.when(live, F.col(f"__h_{j}"))).alias(f"__lh_{j}") for j in range(n)],
    )
    ns, nl = F.col("ns"), F.col("nl")
    both = (ns > 0) & (nl > 0)
    diffs = [~F.col(f"__sh_{j}").eqNullSafe(F.col(f"__lh_{j}")) for j in range(n)]
    any_diff = F.lit(False)
    for d in diffs:
        any_diff = any_diff | d
    per_value = [F.lit(i) for i, f in enumerate(facts) if f.kind in ("bin", "category")]
    kept = F.when(fi.isin(per_value), F.col("__v")) if per_value else F.lit(None).cast("string")
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
    category_ids = [F.lit(i) for i, f in enumerate(facts) if f.kind == "category"]
    if not category_ids:
        return grouped.withColumn("__nd", F.lit(0))
    per_fact = Window.partitionBy(K, "__fi")
    return (
        grouped.withColumn("__nd", F.count(F.lit(1)).over(per_fact))
        .withColumn("__rn", F.row_number().over(per_fact.orderBy("__v")))
        .filter(~fi.isin(category_ids) | (F.col("__nd") <= F.lit(max_categories)) | (F.col("__rn") == F.lit(1)))
    )


class _Tally:
    """The collected rows, sorted into the per-partition profiles and histograms."""

    def __init__(self, facts: list[Fact], compared: Sequence[str], max_categories: int, rows: list[Row]) -> None:
        self.facts, self.compared = facts, list(compared)
        self.hist: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        self.freq: dict[tuple[str, str], tuple[dict[str, int], dict[str, int]]] = {}
        self.high_cardinality = {
            str(facts[r["__fi"]].column)
            for r in rows
            if facts[r["__fi"]].kind == "category" and r["__nd"] > max_categories
        }

    def add(self, r: Row, prof: PartitionProfile) -> None:
        f = self.facts[r["__fi"]]
        if f.kind == "key":
            prof.keys.update(
                {name: int(r[name]) for name in ("added", "removed", "matched", "changed", "duplicates")},
                changed_by_column={c: int(r[f"__c_{j}"]) for j, c in enumerate(self.compared)},
            )
        elif f.kind == "unique":
            prof.unique[str(f.column)] = (int(r["ns"]), int(r["not_unique"]))
        elif f.kind == "bin":
            lh, sh = self.hist.setdefault((r[K], str(f.column)), ([0.0] * N_BINS, [0.0] * N_BINS))
            lh[int(r["__v"])] += float(r["nl"])
            sh[int(r["__v"])] += float(r["ns"])
        elif f.column not in self.high_cardinality:
            lf, sf = self.freq.setdefault((r[K], str(f.column)), ({}, {}))
            if r["nl"]:
                lf[r["__v"]] = int(r["nl"])
            if r["ns"]:
                sf[r["__v"]] = int(r["ns"])

    def finish(self, text: str, prof: PartitionProfile, spec: FactsSpec, edges: Edges) -> None:
        """Zeros where a partition had no fact of a kind; the statistics from the histograms."""
        if spec.keys:
            for name in ("duplicates", "added", "removed", "matched", "changed"):
                prof.keys.setdefault(name, 0)
            prof.keys.setdefault("changed_by_column", {c: 0 for c in self.compared})
        for c in spec.unique_columns:
            prof.unique.setdefault(c, (0, 0))
        for c, e in edges.get(text, {}).items():
            lh, sh = self.hist.get((text, c), ([0.0] * N_BINS, [0.0] * N_BINS))
            col = prof.columns.setdefault(c, {})
            col.update(hist={"edges": e, "live": lh, "shadow": sh}, psi=stats.psi(lh, sh), ks=stats.ks(lh, sh))
        for c in spec.categories:
            if c in self.high_cardinality:
                continue
            lf, sf = self.freq.get((text, c), ({}, {}))
            col = prof.columns.setdefault(c, {})
            col["categories"] = {"live": lf, "shadow": sf}
            if lf and sf:
                col["js_distance"] = stats.js_distance(lf, sf)
            col["new"] = sorted(set(sf) - set(lf)) if lf else []
            col["vanished"] = sorted(set(lf) - set(sf)) if sf or lf else []


def run_facts(source: DataFrame, spec: FactsSpec, edges: Edges, profiles: Mapping[str, PartitionProfile]) -> bool:
    """Fill key diff, uniqueness, histograms and category frequencies into `profiles` from
    `source` (rows tagged by `plan.tag`); returns whether a Spark job ran."""
    if edges:
        source = source.join(F.broadcast(edges_frame(source.sparkSession, spec.numeric, edges)), on=K, how="left")
    facts = fact_list(spec, bool(edges))
    if not facts:
        return False
    compared = spec.compared if spec.keys else []
    exploded = _exploded(source, facts, compared, keyed=bool(spec.keys))
    rows = _grouped(exploded, facts, compared, spec.max_categories).collect()
    tally = _Tally(facts, compared, spec.max_categories, rows)
    for r in rows:
        prof = profiles.get(r[K])
        if prof is not None:
            tally.add(r, prof)
    for text, prof in profiles.items():
        tally.finish(text, prof, spec, edges)
    return True


def unique_counts(
    df: DataFrame, partition_text: Column, columns: Sequence[str], texts: Sequence[str]
) -> dict[str, dict[str, tuple[int, int]]]:
    """Per partition and column, (non-null values, values that are not unique) — GX's domain
    and 'unexpected' for expect_column_values_to_be_unique — from the facts job over `df` alone,
    the same computation the validator runs over the shadow side of the union."""
    profiles = {t: PartitionProfile(t) for t in texts}
    run_facts(tag(df, "shadow", partition_text), FactsSpec(unique_columns=list(dict.fromkeys(columns))), {}, profiles)
    return {t: p.unique for t, p in profiles.items()}
