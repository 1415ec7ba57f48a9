"""Drift job 2, the facts: key diff, change metrics, samples, uniqueness, histograms for
PSI/KS and category frequencies, per partition, in one Spark job (and a small second one only
where a key repeats in a partition or a non-numeric value is sampled).

With keys, the key diff, the change metrics, the samples and the histograms of the columns it
carries come from one grouping of the union by (partition, key) (`key_facts.py`) of only the
columns that changed somewhere; the histograms of the other numeric columns from the rows, in
one aggregation by partition (`_row_bins`); and each row's category per string/boolean column
and value per uniqueness expectation become small facts counted by (partition, fact, value)
(`_value_rows`; without keys, and to count exactly the partitions where a key repeats, the
bins too). Only those per-partition counts, and a bounded number of samples, reach the driver.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Row, Window
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.facts_spec import (
    FACT_INDEX,
    N_BINS,
    Edges,
    Fact,
    FactsSpec,
    edges_frame,
    fact_list,
)
from shadow_backfill.validate.measure.key_facts import (
    SampleRow,
    by_key,
    grouped_bins,
    key_bins,
    key_counts,
    key_names,
    key_repeats,
    key_samples,
    read_bin_pair,
    read_key_facts,
    read_sample,
)
from shadow_backfill.validate.measure.plan import (
    PARTITION_COLUMN,
    SHADOW_FLAG,
    as_text,
    is_side,
    partition_values,
    side_name,
    tag,
)
from shadow_backfill.validate.measure.sample_cut import cuts_for
from shadow_backfill.validate.measurements import (
    Categories,
    ColumnDiff,
    Histogram,
    KeyDiff,
    PartitionProfile,
    Sample,
    Uniqueness,
)

__all__ = ["FactsSpec", "rows_to_count", "run_facts", "unique_counts"]

_PER_VALUE = ("bin", "category")  # facts whose counts are kept per value: the histograms
_TEXT = 64  # characters of a non-numeric sampled value shown


def _value_rows(source: DataFrame, facts: Sequence[Fact], spec: FactsSpec, wanted: Sequence[int]) -> DataFrame:
    """Counts by (partition, fact, value) of the facts `wanted`, from every row: one row per
    (input row, fact) with a non-null value, each fact's value computed once per row below the
    explode (which then only picks one), so the generated code stays small."""
    per_row = source.select(
        PARTITION_COLUMN, SHADOW_FLAG, *[facts[i].value.cast("string").alias(f"__f_{i}") for i in wanted]
    )
    fact_index = F.col(FACT_INDEX)
    value = F.when(fact_index == F.lit(wanted[0]), F.col(f"__f_{wanted[0]}"))
    for i in wanted[1:]:
        value = value.when(fact_index == F.lit(i), F.col(f"__f_{i}"))
    shadow, live = is_side("shadow"), is_side("live")
    by_value = (
        per_row.withColumn(FACT_INDEX, F.explode(F.array(*[F.lit(i) for i in wanted])))
        .select(PARTITION_COLUMN, SHADOW_FLAG, fact_index, value.alias("__v"))
        .filter(F.col("__v").isNotNull())
        .groupBy(PARTITION_COLUMN, FACT_INDEX, "__v")
        .agg(
            F.sum(F.when(shadow, 1).otherwise(0)).alias("shadow_n"), F.sum(F.when(live, 1).otherwise(0)).alias("live_n")
        )
    )
    per_value = [F.lit(i) for i in wanted if facts[i].kind in _PER_VALUE]
    kept = F.when(fact_index.isin(per_value), F.col("__v")) if per_value else F.lit(None).cast("string")
    shadow_n = F.col("shadow_n")
    grouped = by_value.groupBy(PARTITION_COLUMN, FACT_INDEX, kept.alias("__v")).agg(
        F.sum(shadow_n).alias("shadow_n"),
        F.sum("live_n").alias("live_n"),
        F.sum(F.when(shadow_n > 1, shadow_n).otherwise(0)).alias("not_unique"),
    )
    return _cap_categories(grouped, facts, spec.max_categories)


def _cap_categories(grouped: DataFrame, facts: Sequence[Fact], max_categories: int) -> DataFrame:
    """Counts by (partition, fact, value) with `__nd`, the fact's number of values there. A
    categorical column with more than `max_categories` values in a partition is not compared by
    frequency: only its count and one of its values reach the driver."""
    fact_index = F.col(FACT_INDEX)
    category_ids = [F.lit(i) for i, f in enumerate(facts) if f.kind == "category"]
    if not category_ids:
        return grouped.withColumn("__nd", F.lit(0).cast("long"))
    per_fact = Window.partitionBy(PARTITION_COLUMN, FACT_INDEX)
    return (
        grouped.withColumn("__nd", F.count(F.lit(1)).over(per_fact))
        .withColumn("__rn", F.row_number().over(per_fact.orderBy("__v")))
        .filter(~fact_index.isin(category_ids) | (F.col("__nd") <= F.lit(max_categories)) | (F.col("__rn") == F.lit(1)))
        .drop("__rn")
    )


class _Tally:
    """The collected rows, sorted into the per-partition profiles and histograms."""

    def __init__(self, facts: list[Fact], spec: FactsSpec, derived: Sequence[str], rows: list[Row]) -> None:
        self.facts, self.spec, self.derived = facts, spec, list(derived)
        self.sample_rows: list[SampleRow] = []
        self.hist: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        self.freq: dict[tuple[str, str], tuple[dict[str, int], dict[str, int]]] = {}
        self.ranked: dict[str, list[tuple[int, Sample]]] = {}  # partition -> (rank, sample)
        self.high_cardinality = {
            str(facts[r[FACT_INDEX]].column)
            for r in rows
            if facts[r[FACT_INDEX]].kind == "category" and r["__nd"] > spec.max_categories
        }

    def add(self, r: Row, prof: PartitionProfile) -> None:
        f = self.facts[r[FACT_INDEX]]
        if f.kind == "key":
            key_facts = read_key_facts(r, self.spec, bool(self.derived))
            prof.keys = key_facts.diff
            for c in self.derived:
                prof.unique[c] = key_facts.unique or Uniqueness()
        elif f.kind == "unique":
            prof.unique[str(f.column)] = Uniqueness(int(r["shadow_n"]), int(r["not_unique"]))
        elif f.kind == "bin":
            lh, sh = self.hist.setdefault((r[PARTITION_COLUMN], str(f.column)), ([0.0] * N_BINS, [0.0] * N_BINS))
            pair = read_bin_pair(r)  # counted per key (key_facts.key_bins)
            if pair is None:  # counted from the rows
                lh[int(r["__v"])] += float(r["live_n"])
                sh[int(r["__v"])] += float(r["shadow_n"])
                return
            for hist, b in ((sh, pair.shadow), (lh, pair.live)):
                if b is not None:
                    hist[b] += pair.keys
        elif f.column not in self.high_cardinality:
            lf, sf = self.freq.setdefault((r[PARTITION_COLUMN], str(f.column)), ({}, {}))
            if r["live_n"]:
                lf[r["__v"]] = int(r["live_n"])
            if r["shadow_n"]:
                sf[r["__v"]] = int(r["shadow_n"])

    def sample(self, r: SampleRow, prof: PartitionProfile) -> None:
        c = self.spec.compared[r.column]
        sample = Sample(json.loads(r.key), c, self._shown(c, r.live), self._shown(c, r.shadow))
        self.ranked.setdefault(prof.key, []).append((r.rank, sample))

    def _shown(self, column: str, text: str | None) -> Any:
        """A sampled value as JSON: numbers as numbers (integers for integral columns)."""
        if text is None or column not in self.spec.numeric:
            return text
        x = float(text)
        return int(x) if column in self.spec.integral and math.isfinite(x) else x

    def finish(self, text: str, prof: PartitionProfile, edges: Edges, edges_every: int) -> None:
        """Zeros where a partition had no fact of a kind; the histograms and category counts
        (the judge computes their statistics: `distributions.py`)."""
        spec = self.spec
        if spec.keys and prof.keys is None:  # no key in this partition on either side
            prof.keys = KeyDiff(by_column={c: ColumnDiff(0) for c in spec.compared})
        prof.samples = [sample for _, sample in sorted(self.ranked.get(prof.key, []), key=lambda r: r[0])]
        for c in spec.unique_columns:
            prof.unique.setdefault(c, Uniqueness())
        agreed = spec.agreed.get(text, frozenset())
        gridded = spec.live_counts.get(text, {})
        for c, e in edges.get(text, {}).items():
            lh, sh = self.hist.get((text, c), ([0.0] * N_BINS, [0.0] * N_BINS))
            if c not in spec.compared and c in gridded:  # not counted from the rows: the profile's
                lh = list(gridded[c])
            if c in agreed:  # the same (key, value) pairs on both sides: the same histogram
                sh = list(lh)
            prof.set_column(c, histogram=Histogram(tuple(e), tuple(lh), tuple(sh), edges_every))
        for c in spec.categories:
            if c not in self.high_cardinality:
                live, shadow = self.freq.get((text, c), ({}, {}))
                prof.set_column(c, categories=Categories(live, dict(live) if c in agreed else shadow))


def _derived_unique(spec: FactsSpec) -> list[str]:
    """Uniqueness of the one key column is read off the key grouping; other columns need a
    grouping by their value."""
    return [c for c in spec.unique_columns if list(spec.keys) == [c]]


def _with_edges(source: DataFrame, edges: DataFrame | None) -> DataFrame:
    return source if edges is None else source.join(F.broadcast(edges), on=PARTITION_COLUMN, how="left")


def _row_bins(
    source: DataFrame, facts: Sequence[Fact], spec: FactsSpec, edges: DataFrame, bins: Sequence[int]
) -> DataFrame | None:
    """Per partition, bin fact and bin, each side's rows in that bin, in the rows' form of
    `_value_rows`: one aggregation by partition of a count per (fact, bin, side), which Spark
    adds up in each task before its shuffle (a few rows per task), each row's bin taken once in
    a projection below: for the numeric columns `bins` (fact indexes) that the key grouping
    leaves out because no key changed them.

    The counts are written as SQL text over our own column names (no value of the data is in
    it): built as Column objects, each of the 20 counts per column cost a dozen calls into the
    JVM, 2.8 s of plan building for four columns, as much as the job itself on small
    partitions (365 x 1,000 rows per side). None without such facts, and where the profile
    gave live's histograms (`spec.live_counts`, from its grid): a column the grouping leaves
    out agrees wherever both sides have rows, so its histograms are live's and its copy, or
    shadow has none."""
    if not bins or spec.live_counts:
        return None
    rows = _with_edges(rows_to_count(source, [str(facts[i].column) for i in bins], spec.agreed), edges).select(
        PARTITION_COLUMN, SHADOW_FLAG, *[facts[i].value.alias(f"__b{i}") for i in bins]
    )
    cells = [(i, b, side) for i in bins for b in range(N_BINS) for side in ("shadow", "live")]
    sums = [
        F.expr(
            f"sum(CASE WHEN {'' if side == 'shadow' else 'NOT '}{SHADOW_FLAG} AND __b{i} = {b} THEN 1 ELSE 0 END)"
        ).alias(f"__b{i}_{b}_{side}")
        for i, b, side in cells
    ]
    items = ", ".join(
        f"named_struct('i', {i}, 'v', '{b}', "
        f"'s', CAST(__b{i}_{b}_shadow AS BIGINT), 'l', CAST(__b{i}_{b}_live AS BIGINT))"
        for i in bins
        for b in range(N_BINS)
    )
    return (
        rows.groupBy(PARTITION_COLUMN)
        .agg(*sums)
        .select(PARTITION_COLUMN, F.expr(f"explode(array({items}))").alias("__x"))
        .selectExpr(PARTITION_COLUMN, f"__x.i AS {FACT_INDEX}", "__x.v AS __v", "__x.s AS shadow_n", "__x.l AS live_n")
    )


def rows_to_count(source: DataFrame, columns: Sequence[str], agreed: Mapping[str, frozenset[str]]) -> DataFrame:
    """The rows the row bins and category counts read for `columns`: live's, and shadow's only
    in the partitions where the fingerprints of one of the columns disagree. Where they agree,
    shadow's values are live's, and so are its histogram and category counts (`_Tally.finish`
    copies them): a table that did not change is read once, not twice, by these aggregations.
    Without fingerprints (no keys), every row."""
    if not agreed:
        return source
    need = sorted(p for p, same in agreed.items() if not set(columns) <= same)
    if not need:
        return source.filter(is_side("live"))
    return source.filter(is_side("live") | F.col(PARTITION_COLUMN).isin(partition_values(source, need)))


def _branches(
    source: DataFrame, spec: FactsSpec, facts: list[Fact], edges: DataFrame | None, live_rows: int
) -> list[DataFrame]:
    """The parts of the one job: with keys, the key grouping's counts and samples, and the
    categories and other uniqueness counts from the rows (their values are texts, which would
    slow the key grouping); without keys, all facts from the rows."""
    if not spec.keys:
        return [_value_rows(_with_edges(source, edges), facts, spec, list(range(len(facts))))]
    derived = _derived_unique(spec)
    per_key = by_key(source, spec)
    cuts = cuts_for(spec, per_key, key_names(spec), live_rows)
    counts = key_counts(per_key, spec, bool(derived), cuts)
    out = [counts]
    if edges is not None and (bins := key_bins(per_key, facts, spec, edges)) is not None:
        out.append(bins)
    in_grouping = {i for i, _ in grouped_bins(facts, spec)}
    by_rows = [i for i, f in enumerate(facts) if f.kind == "bin" and i not in in_grouping]
    if edges is not None and (row_bins := _row_bins(source, facts, spec, edges, by_rows)) is not None:
        out.append(row_bins)
    if spec.compared and spec.sample_rows:
        out.append(key_samples(per_key, spec, counts, cuts))
    categories = [i for i, f in enumerate(facts) if f.kind == "category"]
    unique = [i for i, f in enumerate(facts) if f.kind == "unique" and f.column not in derived]
    if unique:  # shadow's every row: the uniqueness of its values
        out.append(_value_rows(source, facts, spec, categories + unique))
    elif categories:
        rows = rows_to_count(source, list(spec.categories), spec.agreed)
        out.append(_value_rows(source if rows is None else rows, facts, spec, categories))
    return out


def facts_frame(
    source: DataFrame, spec: FactsSpec, facts: list[Fact], thresholds: DataFrame | None, live_rows: int
) -> DataFrame:
    """The one job's rows: its branches (`_branches`) in one union, each fact's rows told apart
    by `__fi`. Apart from `run_facts` so that a test can read its query plan."""
    branches = _branches(source, spec, facts, thresholds, live_rows)
    result = branches[0]
    for b in branches[1:]:
        result = result.unionByName(b, allowMissingColumns=True)
    return result


def _recount_repeated(
    source: DataFrame, spec: FactsSpec, facts: list[Fact], edges: DataFrame | None, rows: list[Row]
) -> tuple[list[Row], bool]:
    """Where a key repeats on a side, one value per key undercounts the histograms read off the
    key grouping: count that partition's bins of those columns again from its rows (a second
    job, for those partitions only)."""
    repeated = sorted({r[PARTITION_COLUMN] for r in rows if key_repeats(r)})
    wanted = [i for i, _ in grouped_bins(facts, spec)]
    if not repeated or not wanted:
        return rows, False
    rows_there = _with_edges(source.filter(F.col(PARTITION_COLUMN).isin(partition_values(source, repeated))), edges)
    recounted = as_text(_value_rows(rows_there, facts, spec, wanted)).collect()
    gone = set(repeated)
    recounted_facts = set(wanted)
    kept = [r for r in rows if not (r[PARTITION_COLUMN] in gone and r[FACT_INDEX] in recounted_facts)]
    return kept + recounted, True


def _texts(source: DataFrame, spec: FactsSpec, samples: list[SampleRow]) -> bool:
    """Fill in the texts of sampled non-numeric values (the key grouping carries only their
    hash): one small job over the sampled keys' rows, only when such a value was sampled.
    A repeated key shows its largest text on each side, as its largest hash decided the change."""
    wanted = [s for s in samples if spec.compared[s.column] not in spec.numeric]
    if not wanted:
        return False
    columns = sorted({s.column for s in wanted})
    key_json = F.to_json(F.struct(*[F.col(k) for k in spec.keys]))
    text = [F.max(F.substring(F.col(spec.compared[j]).cast("string"), 1, _TEXT)).alias(f"t{j}") for j in columns]
    grouped = (
        source.filter(F.col(PARTITION_COLUMN).isin(partition_values(source, sorted({s.partition for s in wanted}))))
        .select(PARTITION_COLUMN, SHADOW_FLAG, key_json.alias("__key"), *[F.col(spec.compared[j]) for j in columns])
        .filter(F.col("__key").isin(sorted({s.key for s in wanted})))
        .groupBy(PARTITION_COLUMN, SHADOW_FLAG, "__key")
        .agg(*text)
    )
    found = as_text(grouped).collect()
    texts = {(r[PARTITION_COLUMN], r["__key"], side_name(r[SHADOW_FLAG])): r for r in found}
    for s in wanted:
        live, shadow = (texts.get((s.partition, s.key, side)) for side in ("live", "shadow"))
        s.live = live[f"t{s.column}"] if live is not None else None
        s.shadow = shadow[f"t{s.column}"] if shadow is not None else None
    return True


def run_facts(
    source: DataFrame,
    spec: FactsSpec,
    edges: Edges,
    profiles: Mapping[str, PartitionProfile],
    edges_every: Mapping[str, int] | None = None,
) -> int:
    """Fill key diff, change metrics, samples, uniqueness, histograms and category frequencies
    into `profiles` from `source` (rows tagged by `plan.tag`); returns the Spark jobs run: one,
    plus one where a key repeats (its partition's histograms counted again) and one where a
    non-numeric value is sampled (its text read back)."""
    thresholds = (
        edges_frame(source.sparkSession, spec, edges, source.schema[PARTITION_COLUMN].dataType) if edges else None
    )
    facts = fact_list(spec, bool(edges))
    if not facts:
        return 0
    rows = as_text(facts_frame(source, spec, facts, thresholds, sum(p.live_rows for p in profiles.values()))).collect()
    jobs = 1
    if spec.keys:
        rows, recounted = _recount_repeated(source, spec, facts, thresholds, rows)
        jobs += recounted
    counted = [r for r in rows if r[FACT_INDEX] is not None]
    samples = [read_sample(r) for r in rows if r[FACT_INDEX] is None]
    jobs += _texts(source, spec, samples)
    tally = _Tally(facts, spec, _derived_unique(spec) if spec.keys else [], counted)
    for r in counted:
        if (prof := profiles.get(r[PARTITION_COLUMN])) is not None:
            tally.add(r, prof)
    for s in samples:
        if (prof := profiles.get(s.partition)) is not None:
            tally.sample(s, prof)
    for text, prof in profiles.items():
        tally.finish(text, prof, edges, (edges_every or {}).get(text, 1))
    return jobs


def unique_counts(
    df: DataFrame, partition_text: F.Column, columns: Sequence[str], texts: Sequence[str]
) -> dict[str, dict[str, Uniqueness]]:
    """Per partition and column, (non-null values, values that are not unique) — GX's domain
    and 'unexpected' for expect_column_values_to_be_unique — from the facts job over `df` alone,
    the same computation the validator runs over the shadow side of the union."""
    profiles = {t: PartitionProfile(t) for t in texts}
    run_facts(tag(df, "shadow", partition_text), FactsSpec(unique_columns=list(dict.fromkeys(columns))), {}, profiles)
    return {t: p.unique for t, p in profiles.items()}
