"""The facts of a keyed validation, from one grouping of the shadow/live union by
(partition, key): the one shuffle the key diff needs.

Each row is first narrowed to fixed-width values (numbers as doubles, any other column as a
hash) and grouped by the native key columns: fixed-width buffers keep Spark on its hash
aggregation (a text in the buffer would sort every row), and the shuffle carries one short row
per key and side. From those per-key rows, with no further shuffle of data rows, come the key
counts and change metrics, the histograms of the numeric columns it carries (exact where no
key repeats on a side: each side's value of a key is then its one row's) and the largest
changes as samples (`sample_cut`). The counts, the bins and the samples read the same
grouping: Spark shares its shuffle, and runs the aggregation above it once for each of them.
It carries only the columns whose fingerprints disagree somewhere (`fingerprints.py`); the
histograms of the others are counted from the rows (`facts_job._row_bins`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.facts_spec import FACT_INDEX, Diff, Fact, FactsSpec, bin_of, diffs
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN, SHADOW_FLAG, is_side, partition_values
from shadow_backfill.validate.measure.sample_cut import Cuts, bests, bound, kept, with_bounds
from shadow_backfill.validate.measurements import ColumnDiff, KeyDiff, Uniqueness


def key_names(spec: FactsSpec) -> list[str]:
    """The key columns under names of our own, so a key named like one of ours cannot clash."""
    return [f"__k{n}" for n in range(len(spec.keys))]


def by_key(source: DataFrame, spec: FactsSpec) -> DataFrame:
    """Per (partition, key): rows per side (`__ns`, `__nl`) and each compared column's value
    per side (`__sx_j`, `__lx_j`): a double for numbers, a hash otherwise. Shuffled into
    `spec.key_partitions` tasks where the profile found more keys than the session's number
    holds without spilling (`key_partitions.py`)."""
    keys = key_names(spec)
    carried = _without_mirrored_live(source, spec).select(
        PARTITION_COLUMN,
        SHADOW_FLAG,
        *[F.col(k).alias(n) for k, n in zip(spec.keys, keys, strict=True)],
        *[
            (F.col(c).cast("double") if c in spec.numeric else F.xxhash64(F.col(c))).alias(f"__x_{j}")
            for j, c in enumerate(spec.compared)
        ],
    )
    if spec.key_partitions is not None:  # sized to the keys (`key_partitions.py`)
        carried = carried.repartition(spec.key_partitions, PARTITION_COLUMN, *keys)
    shadow, live = is_side("shadow"), is_side("live")
    aggs = [F.sum(F.when(shadow, 1).otherwise(0)).alias("__ns"), F.sum(F.when(live, 1).otherwise(0)).alias("__nl")]
    for j in range(len(spec.compared)):
        x = F.col(f"__x_{j}")
        aggs += [F.max(F.when(shadow, x)).alias(f"__sx_{j}"), F.max(F.when(live, x)).alias(f"__lx_{j}")]
    return _mirror(source, carried.groupBy(PARTITION_COLUMN, *keys).agg(*aggs), spec)


def _without_mirrored_live(source: DataFrame, spec: FactsSpec) -> DataFrame:
    """The rows the key grouping shuffles: live's only where something the grouping looks at
    differs. Where the fingerprints of the keys and of every column it carries agree
    (`spec.mirrored`), live's (key, value) pairs are shadow's, so shadow's rows stand for both
    sides (`_mirror`): a table that did not change is shuffled once, not twice."""
    if not spec.mirrored:
        return source
    if spec.mirrored >= set(spec.agreed):
        return source.filter(is_side("shadow"))
    mirrored = partition_values(source, sorted(spec.mirrored))
    return source.filter(is_side("shadow") | ~F.col(PARTITION_COLUMN).isin(mirrored))


def _mirror(source: DataFrame, per_key: DataFrame, spec: FactsSpec) -> DataFrame:
    """Live's per-key rows and values as shadow's in the mirrored partitions (they agree)."""
    if not spec.mirrored:
        return per_key
    there = F.col(PARTITION_COLUMN).isin(partition_values(source, sorted(spec.mirrored)))
    live_as_shadow = {"__nl": "__ns", **{f"__lx_{j}": f"__sx_{j}" for j in range(len(spec.compared))}}
    return per_key.withColumns({n: F.when(there, F.col(s)).otherwise(F.col(n)) for n, s in live_as_shadow.items()})


def _diffs(spec: FactsSpec) -> list[Diff]:
    return diffs(spec, lambda j: (F.col(f"__sx_{j}"), F.col(f"__lx_{j}")))


def _matched() -> Column:
    """A key with rows on both sides."""
    return (F.col("__ns") > 0) & (F.col("__nl") > 0)


def _key_metrics(spec: FactsSpec, derived_unique: bool) -> dict[str, Column]:
    """Per key: what the key fact sums (or maxes) per partition."""
    shadow_rows, live_rows = F.col("__ns"), F.col("__nl")
    both = _matched()
    ds = _diffs(spec)
    any_diff = F.lit(False)
    for d in ds:
        any_diff = any_diff | d.changed
    numeric = [(j, d) for j, (c, d) in enumerate(zip(spec.compared, ds, strict=True)) if c in spec.numeric]
    out = {
        "added": F.when(live_rows == 0, shadow_rows).otherwise(0),
        "removed": F.when(shadow_rows == 0, live_rows).otherwise(0),
        "matched": F.when(both, 1).otherwise(0),
        "changed": F.when(both & any_diff, 1).otherwise(0),
        "duplicates": F.greatest(shadow_rows - 1, F.lit(0)),
        **{f"__c_{j}": F.when(both & d.changed, 1).otherwise(0) for j, d in enumerate(ds)},
        **{f"__a_{j}": F.when(both, d.abs_diff) for j, d in numeric},
        **{f"__n_{j}": F.when(both & d.abs_diff.isNotNull(), 1).otherwise(0) for j, d in numeric},
    }
    if derived_unique:
        present = F.col(key_names(spec)[0]).isNotNull()
        out["__u_n"] = F.when(present, shadow_rows).otherwise(0)
        # null rather than 0 elsewhere: with `.otherwise(0)` Sail 0.7.2 fails this sum on a
        # nullability check; the sum of no values is read as 0
        out["__u_nu"] = F.when(present & (shadow_rows > 1), shadow_rows)
    return out


def key_counts(per_key: DataFrame, spec: FactsSpec, derived_unique: bool, cuts: Cuts) -> DataFrame:
    """Per partition, as fact 0 (the key): added, removed, matched, changed and duplicate keys,
    per compared column the keys changed beyond tolerance and, for numbers, the differences;
    `__dup`, the most rows a key has on a side; with `derived_unique`, the one key column's
    uniqueness counts; and with a cut, the samples' bounds `__cut_j` (`sample_cut`) from the
    buckets' bests: counted per (partition, bucket), then per partition. Without a cut, per
    partition at once (one exchange fewer)."""
    metrics = _key_metrics(spec, derived_unique)
    keys = [F.col(k) for k in key_names(spec)]
    tops = bests(cuts, _diffs(spec), keys[0], _matched())
    abs_diffs = [j for j, c in enumerate(spec.compared) if c in spec.numeric]
    maxima = {**{f"__m_{j}": f"__a_{j}" for j in abs_diffs}, "__dup": "__dup"}
    per_key = per_key.select(
        PARTITION_COLUMN,
        *([F.pmod(F.xxhash64(*keys), F.lit(cuts.buckets)).alias("__h")] if tops else []),
        *[m.alias(n) for n, m in metrics.items()],
        *[value.alias(n) for n, (value, _, _) in tops.items()],
        F.greatest("__ns", "__nl").alias("__dup"),
    )
    if tops:
        per_key = per_key.groupBy(PARTITION_COLUMN, "__h").agg(
            *[F.sum(n).alias(n) for n in metrics],
            *[F.max(c).alias(n) for n, c in maxima.items()],
            *[in_bucket(F.col(n)).alias(n) for n, (_, in_bucket, _) in tops.items()],
        )
        maxima = {n: n for n in maxima}
    return (
        per_key.groupBy(PARTITION_COLUMN)
        .agg(
            *[F.sum(n).alias(n) for n in metrics],
            *[F.max(c).alias(n) for n, c in maxima.items()],
            *[bound(n, cuts.buckets, of_bests) for n, (_, _, of_bests) in tops.items()],
        )
        .withColumn(FACT_INDEX, F.lit(0))
    )


NO_BIN = 10  # the bin code of a missing value (no row on that side, or null)
PAIRS = (NO_BIN + 1) ** 2


def key_bins(per_key: DataFrame, facts: Sequence[Fact], spec: FactsSpec, edges: DataFrame) -> DataFrame | None:
    """Per partition, bin fact and pair (shadow bin, live bin) of a key, as the code
    `shadow * 11 + live` (`NO_BIN` for a side without a value), the keys with that pair: at most
    121 pairs per partition and column, so Spark sums them in each task before the shuffle.
    The bins are taken here, after the key grouping, on the joined thresholds, for the numeric
    columns the grouping carries (`grouped_bins`); the others are counted from the rows
    (`facts_job`). None without such bin facts."""
    bins = [(fact_index, spec.numeric.index(str(f.column))) for fact_index, f in grouped_bins(facts, spec)]
    if not bins:
        return None
    pairs = []
    for fact_index, i in bins:
        j = spec.compared.index(spec.numeric[i])
        shadow, live = (F.coalesce(bin_of(i, f"__{s}x_{j}"), F.lit(NO_BIN)) for s in "sl")
        pairs.append(F.lit(fact_index * PAIRS) + shadow * (NO_BIN + 1) + live)
    code = F.col("__code")
    return (
        per_key.filter(_reads_every_column(spec))
        .join(F.broadcast(edges), on=PARTITION_COLUMN, how="left")
        .select(PARTITION_COLUMN, F.explode(F.array(*pairs)).alias("__code"))
        .groupBy(PARTITION_COLUMN, "__code")
        .agg(F.count(F.lit(1)).alias("__keys"))
        .select(
            PARTITION_COLUMN,
            F.floor(code / PAIRS).cast("int").alias(FACT_INDEX),
            (code % PAIRS).alias("__pair"),
            "__keys",
        )
    )


def _reads_every_column(spec: FactsSpec) -> Column:
    """True on every key (a key has a row on some side, so `__ns` and `__nl` are never both
    null), yet it reads every column of the key grouping that the bins would not. Spark prunes
    a grouping to the columns its reader uses, so a bins branch reading only the numeric
    columns got a grouping of its own and ran it again; reading the same columns as the counts
    and the samples, all three share one (measured at 90 x 10,000 rows per side: one key
    grouping instead of two, the facts job 12.1 s -> 10.5 s). As a filter, not a null element
    of the exploded array, it adds no row per key (bins stage at 90 x 45,000 rows per side:
    8.2-8.7 -> 7.3-7.8 s of task time). `tests/e2e/test_speed_plans.py` fails if it stops
    saving the grouping."""
    all_null = F.col("__ns").isNull() & F.col("__nl").isNull()
    for j, c in enumerate(spec.compared):
        if c not in spec.numeric:
            all_null = all_null & F.col(f"__sx_{j}").isNull() & F.col(f"__lx_{j}").isNull()
    return ~all_null


def grouped_bins(facts: Sequence[Fact], spec: FactsSpec) -> list[tuple[int, Fact]]:
    """The bin facts (with their index) of the numeric columns the key grouping carries: their
    bins are read off the grouping's per-key values, the only extra pass being over per-key rows."""
    return [(i, f) for i, f in enumerate(facts) if f.kind == "bin" and f.column in spec.compared]


_ITEM = ("j", "a", "l", "s", "p")  # a sample item: column, difference, live, shadow, turn priority


def _items(spec: FactsSpec, cuts: Cuts) -> list[Column]:
    """Per compared column, a matched key's change as a sample item; `d`: it is ranked
    (`sample_cut`)."""
    first = set(spec.sample_first)
    first_key = F.col(key_names(spec)[0])
    return [
        F.struct(
            F.lit(j).alias("j"),
            kept(cuts, j, d, first_key).alias("d"),
            d.abs_diff.cast("double").alias("a"),
            *[(F.col(f"__{s}x_{j}") if c in spec.numeric else F.lit(None).cast("double")).alias(s) for s in "ls"],
            F.lit(0 if c in first else 1).alias("p"),
        )
        for j, (c, d) in enumerate(zip(spec.compared, _diffs(spec), strict=True))
    ]


def _ranked(candidates: DataFrame, spec: FactsSpec) -> DataFrame:
    """The samples from the candidate items: within each column the largest differences first,
    then by key; taken in turns across columns, `sample_first` columns first in each turn."""
    keys = key_names(spec)
    per_column = Window.partitionBy(PARTITION_COLUMN, "__sj").orderBy(
        F.coalesce(F.col("__sa"), F.lit(float("inf"))).desc(), *keys
    )
    per_partition = Window.partitionBy(PARTITION_COLUMN).orderBy("__rc", "__sp", "__sj")
    top = (
        candidates.withColumn("__rc", F.row_number().over(per_column))
        # Past the first `sample_rows` of its column an item cannot be taken in the turns; with
        # this filter Spark keeps only those per task before shuffling (a window group limit).
        .filter(F.col("__rc") <= F.lit(spec.sample_rows))
        .withColumn("__srn", F.row_number().over(per_partition))
        .filter(F.col("__srn") <= F.lit(spec.sample_rows))
    )
    shown = F.to_json(F.struct(*[F.col(n).alias(k) for k, n in zip(spec.keys, keys, strict=True)]))
    texts = [F.col(f"__s{s}").cast("string").alias(f"__s{s}") for s in "ls"]
    return top.select(PARTITION_COLUMN, shown.alias("__key"), "__sj", *texts, "__srn")


def key_samples(per_key: DataFrame, spec: FactsSpec, counts: DataFrame, cuts: Cuts) -> DataFrame:
    """Up to `sample_rows` changed (key, column) values per partition (`_ranked`), as a reader
    of the key grouping of its own. The key and the values are written as text only for the
    chosen few (measured at 90 x 10,000 rows per side: writing every changed value as text cost
    more than choosing); texts of non-numeric values are null here (`facts_job` reads them)."""
    keys = key_names(spec)
    if cuts.any:
        per_key = with_bounds(per_key, counts, cuts)
    candidates = (
        per_key.filter(_matched())
        .select(PARTITION_COLUMN, *keys, F.explode(F.array(*_items(spec, cuts))).alias("__s"))
        .filter(F.col("__s.d"))
        .select(PARTITION_COLUMN, *keys, *[F.col(f"__s.{f}").alias(f"__s{f}") for f in _ITEM])
    )
    return _ranked(candidates, spec)


# Reading the rows back: the names above are this module's own; the facts job gets typed values.


@dataclass(frozen=True)
class KeyFacts:
    """The key fact's row of one partition (`key_counts`), read back."""

    diff: KeyDiff
    unique: Uniqueness | None  # the one key column's uniqueness, where it is read off the grouping


def read_key_facts(row: Row, spec: FactsSpec, derived_unique: bool) -> KeyFacts:
    """Per compared column the keys changed beyond tolerance and, for numbers, the largest and
    the mean difference; the partition's key counts; its uniqueness with `derived_unique`."""
    by_column = {}
    for j, c in enumerate(spec.compared):
        abs_diffs = None
        if c in spec.numeric:
            n = int(row[f"__n_{j}"] or 0)
            abs_diffs = (row[f"__m_{j}"], (float(row[f"__a_{j}"]) / n) if n else None)
        by_column[c] = ColumnDiff(int(row[f"__c_{j}"]), abs_diffs)
    counts = {name: int(row[name]) for name in ("added", "removed", "matched", "changed", "duplicates")}
    unique = Uniqueness(int(row["__u_n"]), int(row["__u_nu"] or 0)) if derived_unique else None
    return KeyFacts(KeyDiff(**counts, by_column=by_column), unique)


def key_repeats(row: Row) -> bool:
    """A key fact's row whose partition has a key with more than one row on a side."""
    return row[FACT_INDEX] == 0 and (row["__dup"] or 0) > 1


@dataclass(frozen=True)
class BinPair:
    """Keys of one partition whose values fall in these bins (None: no value on that side)."""

    shadow: int | None
    live: int | None
    keys: float


def read_bin_pair(row: Row) -> BinPair | None:
    """A `key_bins` row's pair, decoded; None for a bin row counted from the rows instead."""
    if "__pair" not in row.__fields__ or row["__pair"] is None:
        return None
    shadow, live = divmod(int(row["__pair"]), NO_BIN + 1)
    return BinPair(None if shadow == NO_BIN else shadow, None if live == NO_BIN else live, float(row["__keys"]))


@dataclass
class SampleRow:
    """A `key_samples` row: a changed value on a matched key, its rank in the partition's
    samples, and both sides' values as text (null for a non-numeric value until
    `facts_job` reads its text)."""

    partition: str
    key: str  # the key columns as a JSON object
    column: int  # index into `spec.compared`
    live: str | None
    shadow: str | None
    rank: int


def read_sample(row: Row) -> SampleRow:
    return SampleRow(row[PARTITION_COLUMN], row["__key"], int(row["__sj"]), row["__sl"], row["__ss"], int(row["__srn"]))
