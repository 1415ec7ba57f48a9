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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    numeric: Sequence[str] = ()  # binned on the live deciles; compared by value within tolerance
    compared: Sequence[str] = ()
    categories: Sequence[str] = ()
    unique_columns: Sequence[str] = ()
    max_categories: int = 0
    tolerance: tuple[float, float] = (0.0, 0.0)  # (abs, rel): |s - l| <= abs + rel * |l| is equal
    sample_rows: int = 0  # changed (key, column) values per partition brought back as samples
    sample_first: Sequence[str] = ()  # columns whose samples come first (unexpected changes)
    integral: Sequence[str] = ()  # numeric columns shown as integers in samples

    def within(self, shadow: Column, live: Column) -> Column:
        """shadow equals live within tolerance (Spark's NaN = NaN and inf = inf hold)."""
        tol_abs, tol_rel = self.tolerance
        close = F.abs(shadow - live) <= F.lit(tol_abs) + F.lit(tol_rel) * F.abs(live)
        return shadow.eqNullSafe(live) | (shadow.isNotNull() & live.isNotNull() & close)


def edges_frame(spark: SparkSession, spec: FactsSpec, edges: Edges) -> DataFrame:
    """Per partition, the bin thresholds of every numeric column as plain double columns, in a
    small frame to broadcast: one JSON literal parsed in Spark, so the plan holds one value
    however many partitions, and no Python worker is started.

    A threshold is a live decile plus the tolerance (a value within tolerance of an edge counts
    as on it, so float noise cannot move it across), computed here with the same double
    arithmetic Spark would use. Per-row array lookups and tolerance arithmetic made the bin
    expressions of four columns too large for the JVM to compile: 10.8 s against 0.9 s for
    1.2 M rows."""
    tol_abs, tol_rel = spec.tolerance
    rows = []
    for k, by_col in edges.items():
        row: dict[str, Any] = {"k": k}
        for i, c in enumerate(spec.numeric):
            for j, q in enumerate(by_col.get(c) or []):
                row[f"t{i}_{j}"] = q + tol_abs + tol_rel * abs(q)
        rows.append(row)
    names = [f"t{i}_{j}" for i in range(len(spec.numeric)) for j in range(len(QUANTILES))]
    schema = "array<struct<k:string," + ",".join(f"{n}:double" for n in names) + ">>"
    parsed = spark.range(1).select(F.explode(F.from_json(F.lit(json.dumps(rows)), schema)).alias("r"))
    return parsed.select(F.col("r.k").alias(K), *[F.col(f"r.{n}").alias(f"__e_{n}") for n in names])


def fact_list(spec: FactsSpec, with_edges: bool) -> list[Fact]:
    facts: list[Fact] = []
    if spec.keys:  # first, at index 0: the key-diff hashes ride only on this fact
        facts.append(Fact("key", None, F.to_json(F.struct(*[F.col(k) for k in spec.keys]))))
    if with_edges:
        for i, c in enumerate(spec.numeric):
            x = F.col(c).cast("double")
            thresholds = [F.col(f"__e_t{i}_{j}") for j in range(len(QUANTILES))]
            above = sum((F.when(x > t, 1).otherwise(0) for t in thresholds), F.lit(0))
            facts.append(Fact("bin", c, F.when(x.isNotNull() & thresholds[0].isNotNull(), above)))
    for c in spec.categories:
        facts.append(Fact("category", c, F.col(c)))  # nulls are judged by the null-rate check
    for c in spec.unique_columns:
        facts.append(Fact("unique", c, F.when(is_side("shadow"), F.col(c))))
    return facts


def _exploded(source: DataFrame, facts: list[Fact], spec: FactsSpec, keyed: bool) -> DataFrame:
    """One row per (input row, fact) with a non-null value. Each fact's value is computed once
    per row, below the explode, which then only picks one: the generated code stays small.

    The key fact carries, per compared column, the value (numbers, compared within tolerance)
    or a hash (other types), plus a short text of non-numeric values when samples are asked."""
    compared = _compared(spec, keyed)
    carried = [
        (F.col(c).cast("double") if c in spec.numeric else F.xxhash64(F.col(c))).alias(f"__x_{j}")
        for j, c in enumerate(compared)
    ]
    shown = [j for j, c in enumerate(compared) if spec.sample_rows and c not in spec.numeric]
    per_row = source.select(
        K,
        SIDE,
        *[f.value.cast("string").alias(f"__f_{i}") for i, f in enumerate(facts)],
        *carried,
        *[F.substring(F.col(compared[j]).cast("string"), 1, 64).alias(f"__t_{j}") for j in shown],
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
            *[F.when(key_fact, F.col(f"__t_{j}")).alias(f"__t_{j}") for j in shown],
        )
        .filter(F.col("__v").isNotNull())
    )


def _compared(spec: FactsSpec, keyed: bool) -> list[str]:
    return list(spec.compared) if keyed else []


@dataclass(frozen=True)
class _Diff:
    """One compared column on one key: whether it changed, and by how much (numbers only)."""

    changed: Column
    abs_diff: Column
    live: Column
    shadow: Column


def _diffs(spec: FactsSpec, compared: Sequence[str]) -> list[_Diff]:
    out = []
    for j, c in enumerate(compared):
        sh, lh = F.col(f"__sh_{j}"), F.col(f"__lh_{j}")
        if c in spec.numeric:
            out.append(_Diff(~spec.within(sh, lh), F.abs(sh - lh), lh.cast("string"), sh.cast("string")))
        else:
            shown = F.col(f"__lt_{j}") if spec.sample_rows else F.lit(None).cast("string")
            out.append(
                _Diff(
                    ~sh.eqNullSafe(lh),
                    F.lit(None).cast("double"),
                    shown,
                    F.col(f"__st_{j}") if spec.sample_rows else shown,
                )
            )
    return out


def _by_value(exploded: DataFrame, spec: FactsSpec, compared: Sequence[str]) -> DataFrame:
    """Counts by (partition, fact, value): for the key fact, one row per key with each side's
    carried values."""
    shadow, live = is_side("shadow"), is_side("live")
    shown = [j for j, c in enumerate(compared) if spec.sample_rows and c not in spec.numeric]
    return exploded.groupBy(K, "__fi", "__v").agg(
        F.sum(F.when(shadow, 1).otherwise(0)).alias("ns"),
        F.sum(F.when(live, 1).otherwise(0)).alias("nl"),
        *[F.max(F.when(shadow, F.col(f"__h_{j}"))).alias(f"__sh_{j}") for j in range(len(compared))],
        *[F.max(F.when(live, F.col(f"__h_{j}"))).alias(f"__lh_{j}") for j in range(len(compared))],
        *[F.max(F.when(shadow, F.col(f"__t_{j}"))).alias(f"__st_{j}") for j in shown],
        *[F.max(F.when(live, F.col(f"__t_{j}"))).alias(f"__lt_{j}") for j in shown],
    )


def _grouped(by_value: DataFrame, facts: list[Fact], spec: FactsSpec, compared: Sequence[str]) -> DataFrame:
    """Counts by (partition, fact) — keeping the value only for bins and categories, whose
    per-value counts are the histograms — with the per-column change metrics of the key fact."""
    fi = F.col("__fi")
    ns, nl = F.col("ns"), F.col("nl")
    both = (ns > 0) & (nl > 0)
    diffs = _diffs(spec, compared)
    any_diff = F.lit(False)
    for d in diffs:
        any_diff = any_diff | d.changed
    numeric = [(j, d) for j, (c, d) in enumerate(zip(compared, diffs, strict=True)) if c in spec.numeric]
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
        *[F.sum(F.when(both & d.changed, 1).otherwise(0)).alias(f"__c_{j}") for j, d in enumerate(diffs)],
        *[F.max(F.when(both, d.abs_diff)).alias(f"__m_{j}") for j, d in numeric],
        *[F.sum(F.when(both, d.abs_diff)).alias(f"__a_{j}") for j, d in numeric],
        *[F.sum(F.when(both & d.abs_diff.isNotNull(), 1).otherwise(0)).alias(f"__n_{j}") for j, d in numeric],
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
        .filter(~fi.isin(category_ids) | (F.col("__nd") <= F.lit(spec.max_categories)) | (F.col("__rn") == F.lit(1)))
    )


def _samples(by_value: DataFrame, spec: FactsSpec, compared: Sequence[str]) -> DataFrame:
    """Up to `sample_rows` changed (key, column) values per partition: within each column the
    largest differences first (then by key, so the choice is deterministic), taken in turns
    across columns, `sample_first` columns first in each turn."""
    ns, nl = F.col("ns"), F.col("nl")
    diffs = _diffs(spec, compared)
    first = set(spec.sample_first)
    items = F.array(
        *[
            F.struct(
                F.lit(j).alias("j"),
                d.changed.alias("d"),
                d.abs_diff.cast("double").alias("a"),
                d.live.alias("l"),
                d.shadow.alias("s"),
                F.lit(0 if c in first else 1).alias("p"),
            )
            for j, (c, d) in enumerate(zip(compared, diffs, strict=True))
        ]
    )
    per_column = Window.partitionBy(K, "__sj").orderBy(
        F.coalesce(F.col("__sa"), F.lit(float("inf"))).desc(), F.col("__key")
    )
    per_partition = Window.partitionBy(K).orderBy("__rc", "__sp", "__sj")
    return (
        by_value.filter((F.col("__fi") == F.lit(0)) & (ns > 0) & (nl > 0))
        .select(K, F.col("__v").alias("__key"), F.explode(items).alias("__s"))
        .filter(F.col("__s.d"))
        .select(
            K,
            "__key",
            F.col("__s.j").alias("__sj"),
            F.col("__s.a").alias("__sa"),
            F.col("__s.l").alias("__sl"),
            F.col("__s.s").alias("__ss"),
            F.col("__s.p").alias("__sp"),
        )
        .withColumn("__rc", F.row_number().over(per_column))
        # Past the first `sample_rows` of its column an item cannot be taken in the turns; with
        # this filter Spark keeps only those per task before shuffling (a window group limit).
        .filter(F.col("__rc") <= F.lit(spec.sample_rows))
        .withColumn("__srn", F.row_number().over(per_partition))
        .filter(F.col("__srn") <= F.lit(spec.sample_rows))
    )


class _Tally:
    """The collected rows, sorted into the per-partition profiles and histograms."""

    def __init__(self, facts: list[Fact], spec: FactsSpec, compared: Sequence[str], rows: list[Row]) -> None:
        self.facts, self.spec, self.compared = facts, spec, list(compared)
        self.hist: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        self.freq: dict[tuple[str, str], tuple[dict[str, int], dict[str, int]]] = {}
        self.high_cardinality = {
            str(facts[r["__fi"]].column)
            for r in rows
            if facts[r["__fi"]].kind == "category" and r["__nd"] > spec.max_categories
        }

    def add(self, r: Row, prof: PartitionProfile) -> None:
        f = self.facts[r["__fi"]]
        if f.kind == "key":
            prof.keys.update({name: int(r[name]) for name in ("added", "removed", "matched", "changed", "duplicates")})
            self._key_columns(r, prof)
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

    def _key_columns(self, r: Row, prof: PartitionProfile) -> None:
        """Per compared column: keys changed beyond tolerance and, for numbers, the differences."""
        by_column: dict[str, dict[str, float | int | None]] = {}
        for j, c in enumerate(self.compared):
            entry: dict[str, float | int | None] = {"changed": int(r[f"__c_{j}"])}
            if c in self.spec.numeric:
                n = int(r[f"__n_{j}"] or 0)
                entry["max_abs_diff"] = r[f"__m_{j}"]
                entry["mean_abs_diff"] = (float(r[f"__a_{j}"]) / n) if n else None
            by_column[c] = entry
        prof.keys["changed_by_column"] = {c: e["changed"] for c, e in by_column.items()}
        prof.keys["by_column"] = by_column

    def sample(self, r: Row, prof: PartitionProfile) -> None:
        c = self.compared[int(r["__sj"])]
        prof.samples.append(
            {
                "keys": json.loads(r["__key"]),
                "column": c,
                "live": self._shown(c, r["__sl"]),
                "shadow": self._shown(c, r["__ss"]),
                "__rank": int(r["__srn"]),
            }
        )

    def _shown(self, column: str, text: str | None) -> Any:
        """A sampled value as JSON: numbers as numbers (integers for integral columns)."""
        if text is None or column not in self.spec.numeric:
            return text
        x = float(text)
        return int(x) if column in self.spec.integral and math.isfinite(x) else x

    def finish(self, text: str, prof: PartitionProfile, edges: Edges) -> None:
        """Zeros where a partition had no fact of a kind; the statistics from the histograms."""
        spec = self.spec
        if spec.keys:
            for name in ("duplicates", "added", "removed", "matched", "changed"):
                prof.keys.setdefault(name, 0)
            prof.keys.setdefault("changed_by_column", {c: 0 for c in self.compared})
            prof.keys.setdefault("by_column", {c: {"changed": 0} for c in self.compared})
        prof.samples.sort(key=lambda s: s.pop("__rank"))
        for c in spec.unique_columns:
            prof.unique.setdefault(c, (0, 0))
        for c, e in edges.get(text, {}).items():
            lh, sh = self.hist.get((text, c), ([0.0] * N_BINS, [0.0] * N_BINS))
            col = prof.columns.setdefault(c, {})
            col.update(
                hist={"edges": e, "live": lh, "shadow": sh},
                psi=stats.psi(lh, sh),
                ks=stats.ks(lh, sh),
                drift_pvalue=stats.ks_pvalue(lh, sh),
            )
        for c in spec.categories:
            if c in self.high_cardinality:
                continue
            lf, sf = self.freq.get((text, c), ({}, {}))
            col = prof.columns.setdefault(c, {})
            col["categories"] = {"live": lf, "shadow": sf}
            if lf and sf:
                col["js_distance"] = stats.js_distance(lf, sf)
                col["drift_pvalue"] = stats.chi2_pvalue(lf, sf)
            col["new"] = sorted(set(sf) - set(lf)) if lf else []
            col["vanished"] = sorted(set(lf) - set(sf)) if sf or lf else []


def run_facts(source: DataFrame, spec: FactsSpec, edges: Edges, profiles: Mapping[str, PartitionProfile]) -> bool:
    """Fill key diff, change metrics, samples, uniqueness, histograms and category frequencies
    into `profiles` from `source` (rows tagged by `plan.tag`); returns whether a Spark job ran.

    The samples ride in the same job, a union of the grouped counts and the top changed values
    per partition. Spark does not reuse the grouping's shuffle between the two branches (the
    samples' filter on the key fact is pushed below it), so the samples run it again: measured,
    and the next thing to remove (issue 16)."""
    if edges:
        source = source.join(F.broadcast(edges_frame(source.sparkSession, spec, edges)), on=K, how="left")
    facts = fact_list(spec, bool(edges))
    if not facts:
        return False
    keyed = bool(spec.keys)
    compared = _compared(spec, keyed)
    by_value = _by_value(_exploded(source, facts, spec, keyed), spec, compared)
    result = _grouped(by_value, facts, spec, compared)
    if keyed and compared and spec.sample_rows:
        result = result.unionByName(_samples(by_value, spec, compared), allowMissingColumns=True)
    rows = result.collect()
    counted = [r for r in rows if r["__fi"] is not None]
    tally = _Tally(facts, spec, compared, counted)
    for r in rows:
        prof = profiles.get(r[K])
        if prof is not None:
            (tally.add if r["__fi"] is not None else tally.sample)(r, prof)
    for text, prof in profiles.items():
        tally.finish(text, prof, edges)
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
