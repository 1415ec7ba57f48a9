"""Drift job 1, the profile: one aggregation of the shadow/live union by (partition, side),
and the live deciles (the bins the facts job sorts values into) by partition, in one job.

Row counts, null counts, mean, std and sum per column and the aggregates of the compiled
expectations all ride in the one grouping, so adding a column or an expectation adds columns
to a job, never a job. The live deciles have an aggregation of their own beside it
(`_collect`): `percentile_approx` on a sample of live's keys, with keys as a grid of
percentiles that gives live's histogram too (`live_grid.py`), else the facts job counts live's
histogram from the rows. On the sample every run gets the same deciles (`decile_every`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure import fingerprints, live_grid
from shadow_backfill.validate.measure.bins import QUANTILES, thresholds
from shadow_backfill.validate.measure.capabilities import engine_capabilities
from shadow_backfill.validate.measure.fingerprints import Fingerprints
from shadow_backfill.validate.measure.plan import (
    PARTITION_COLUMN,
    SHADOW_FLAG,
    as_text,
    is_side,
    partition_values,
    side_name,
)
from shadow_backfill.validate.measurements import ColumnPlan, Moments, PartitionProfile, SideStats

Edges = dict[str, dict[str, list[float]]]  # partition text -> numeric column -> live deciles
LiveCounts = dict[str, dict[str, tuple[float, ...]]]  # partition text -> numeric column -> live's bins


@dataclass
class Profiled:
    """What the profile job tells the facts job: live's deciles, the fingerprints and, where
    live's percentiles came as a grid (`grids`: `live_grid.py`), live's histogram on the
    deciles (`live_counts`), so the facts job need not read live's rows to count it."""

    edges: Edges
    prints: Fingerprints
    live_counts: LiveCounts = field(default_factory=dict)
    grids: dict[tuple[str, str], tuple[list[float], int]] = field(default_factory=dict)


# Live rows per partition the deciles are taken from, at least; fewer than twice as many, plus
# the hash's spread (about 90 rows), stay under `live_grid.EXACT_BELOW` (see `decile_every`).
DECILE_SAMPLE = 4_000
Sampling = Mapping[str, int]  # partition text -> the deciles from every m-th live row (absent: 1)


def decile_every(live_rows: Mapping[str, int]) -> dict[str, int]:
    """Per partition, take the live deciles from every m-th row (chosen by a hash of its
    partition and key, so the same rows each run), m the largest power of two that leaves
    `DECILE_SAMPLE` rows; 1 (every row) below twice that, or where the count is unknown (0).
    Why sample: the deciles cost per row, and at 45,000 rows per partition they were half the
    profile job; deciles only place the bin edges, and the histograms, PSI and KS count every
    row, but for live's histogram of a column shadow has copied or lacks (the grid gives it:
    `live_grid.py`, scaled from the sample). From 4,000 rows a decile's rank is off by about
    0.5% (its standard error), so each bin holds 10 +/- 1.5% of live rows.

    Why per partition, and no more: below `live_grid.EXACT_BELOW` values `percentile_approx`'s
    summary keeps every value with no margin, so its deciles are the exact ranks of the sample,
    whatever order Spark merges the tasks' partial summaries in: every run gets the same deciles, and so the
    same bins, PSI and KS, however the partitions' sizes differ. (A KLL sketch of every live
    row, used on Spark 4.1 before, gave other deciles each run: its compactions are random.)
    Powers of two, so that partitions of about the same size share one m, and the filter
    (`_live_rows`) names few partitions."""
    out = {}
    for text, rows in live_rows.items():
        ratio = max(rows, 0) // DECILE_SAMPLE
        out[text] = 1 << (ratio.bit_length() - 1) if ratio >= 2 else 1
    return out


def _live_deciles(x: Column, *, array_form: bool, grid: bool) -> Column:
    if grid:  # array_form too: the scalar form would sort once per percentage
        return F.call_function("percentile_approx", x, F.expr(live_grid.grid_sql()), F.lit(live_grid.ACCURACY))
    if array_form:
        return F.percentile_approx(x, QUANTILES, live_grid.ACCURACY)
    return F.array(*[F.percentile_approx(x, q, live_grid.ACCURACY) for q in QUANTILES])


def _aggregations(plan: ColumnPlan, extra_aggs: Mapping[str, Column], keys: Sequence[str]) -> list[Column]:
    aggs: list[Column] = [F.count(F.lit(1)).alias("__rows")]
    if keys:
        aggs += fingerprints.aggregations(keys, plan.compared)
    for i, c in enumerate([*plan.compared, *plan.added]):
        aggs.append(F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(f"__null_{i}"))
    for i, c in enumerate(plan.numeric):
        x = F.col(c).cast("double")
        aggs += [F.avg(x).alias(f"__mean_{i}"), F.stddev_samp(x).alias(f"__std_{i}"), F.sum(x).alias(f"__sum_{i}")]
    for i, c in enumerate(plan.added_numeric):
        x = F.col(c).cast("double")
        aggs += [F.avg(x).alias(f"__amean_{i}"), F.stddev_samp(x).alias(f"__astd_{i}"), F.sum(x).alias(f"__asum_{i}")]
        aggs += [F.min(x).alias(f"__amin_{i}"), F.max(x).alias(f"__amax_{i}")]
    return aggs + [col.alias(name) for name, col in extra_aggs.items()]


def _live_rows(union: DataFrame, every: Sampling, sample_by: Sequence[str]) -> DataFrame:
    """The live rows the deciles are taken from: per partition all, or every m-th by a hash of
    its partition and the `sample_by` columns, its key (a key names a row; the rows of a
    repeated key are taken or left together). Hashing every compared value as well read and
    hashed each live column again: profile 3.56 -> 2.91 s at 4.05 M rows per side. The most
    common m is the filter's default, so a table of even partitions names none of them (each
    named one is two calls into the JVM)."""
    live = union.filter(is_side("live"))
    groups: dict[int, list[str]] = {}
    for text, m in every.items():
        groups.setdefault(m, []).append(text)
    if not groups or set(groups) == {1}:
        return live
    hashed = F.xxhash64(F.col(PARTITION_COLUMN), *[F.col(c) for c in sample_by])
    common = max(groups, key=lambda m: (len(groups[m]), m))
    taken = F.lit(True) if common == 1 else F.pmod(hashed, F.lit(common)) == 0
    for m, texts in sorted(groups.items()):
        if m != common:
            here = F.col(PARTITION_COLUMN).isin(partition_values(union, sorted(texts)))
            taken = F.when(here, F.lit(True) if m == 1 else F.pmod(hashed, F.lit(m)) == 0).otherwise(taken)
    return live.filter(taken)


def _collect(
    union: DataFrame,
    plan: ColumnPlan,
    aggs: list[Column],
    every: Sampling,
    keys: Sequence[str],
    grid: bool = False,
) -> list[Row]:
    """Run the aggregation and, in the same job, the live deciles in an aggregation of their
    own: `percentile_approx` is an object aggregate, and inside the one grouping it took every
    count and sum off Spark's fast, code-generated hash aggregation (profile at 4.05 M rows
    per side: 6.8 s, against 4.6 s apart and 1.7 s without deciles). The deciles come from
    every m-th row of a partition (`every`), as one array when the engine can (one sort per column instead of
    nine: `engine_capabilities`), and with `grid` as 1,001 percentiles with the sample's count
    of values (`live_grid.py`)."""
    profile = union.groupBy(PARTITION_COLUMN, SHADOW_FLAG).agg(*aggs)
    if not plan.numeric:
        return as_text(profile).collect()
    array_form = engine_capabilities(union.sparkSession).array_percentiles
    x = [F.col(c).cast("double") for c in plan.numeric]
    deciles = [_live_deciles(c, array_form=array_form, grid=grid).alias(f"__q_{i}") for i, c in enumerate(x)]
    sampled = [F.count(c).alias(f"__qn_{i}") for i, c in enumerate(x)] if grid else []
    live = _live_rows(union, every, keys).groupBy(PARTITION_COLUMN).agg(*deciles, *sampled)
    live = live.withColumn(SHADOW_FLAG, F.lit(False))
    return as_text(profile.unionByName(live, allowMissingColumns=True)).collect()


def _read_deciles(row: Row, plan: ColumnPlan, out: Profiled) -> None:
    """The live deciles of a row of their own aggregation (and its grid, if asked)."""
    text = row[PARTITION_COLUMN]
    for i, c in enumerate(plan.numeric):
        qs = row[f"__q_{i}"]
        if qs is not None and None not in qs:  # all-null live column: no bins to compare on
            if len(qs) == len(live_grid.GRID):
                out.grids[(text, c)] = ([float(q) for q in qs], int(row[f"__qn_{i}"]))
                qs = live_grid.deciles(qs)
            out.edges.setdefault(text, {})[c] = [float(q) for q in qs]


def _read(row: Row, prof: PartitionProfile, plan: ColumnPlan, extra: Mapping[str, Column], out: Profiled) -> None:
    if row["__rows"] is None:  # the live deciles' row
        _read_deciles(row, plan, out)
        return
    side = side_name(row[SHADOW_FLAG])
    n = int(row["__rows"])
    if out.prints.enabled:
        out.prints.read(row[PARTITION_COLUMN], row)
    if side == "live":
        prof.live_rows = n
    else:
        prof.shadow_rows = n
        prof.shadow_aggs = {name: row[name] for name in extra}
    numeric = {c: i for i, c in enumerate(plan.numeric)}
    added = {c: i for i, c in enumerate(plan.added_numeric)}
    for i, c in enumerate([*plan.compared, *plan.added]):
        if side == "live" and c in plan.added:
            continue  # not a live column: its nulls there come from the union, not from live
        nulls = int(row[f"__null_{i}"])
        moments, extremes = None, None
        if (j := numeric.get(c)) is not None:
            moments = Moments(row[f"__mean_{j}"], row[f"__std_{j}"], row[f"__sum_{j}"])
        elif (j := added.get(c)) is not None:
            moments = Moments(row[f"__amean_{j}"], row[f"__astd_{j}"], row[f"__asum_{j}"])
            extremes = (row[f"__amin_{j}"], row[f"__amax_{j}"])
        # non-null values: the sample size of distribution tests
        prof.set_column(c, **{side: SideStats(n - nulls, (nulls / n) if n else 0.0, moments, extremes)})


def run_profile(
    union: DataFrame,
    plan: ColumnPlan,
    extra_aggs: Mapping[str, Column],
    profiles: Mapping[str, PartitionProfile],
    every: Sampling | None = None,
    keys: Sequence[str] = (),
    tolerance: Tolerance = EXACT,
) -> Profiled:
    """Fill counts, null rates, moments and expectation aggregates into `profiles`; return the
    live deciles per partition and numeric column for the facts job, from every m-th live row of
    a partition as `every` says (`decile_every`, chosen by a hash of the `keys`), with keys as a
    grid that also gives live's histogram where the grids fit the driver (`live_grid.fits`); and with keys each
    side's fingerprints (`fingerprints.py`), which tell the facts job what it need not group."""
    every = {t: (every or {}).get(t, 1) for t in profiles}  # a partition not named: every row
    capable = engine_capabilities(union.sparkSession)
    grid = bool(keys) and live_grid.fits(len(profiles), len(plan.numeric)) and capable.array_percentiles
    out = Profiled({}, Fingerprints(plan.compared, enabled=bool(keys)))
    for row in _collect(union, plan, _aggregations(plan, extra_aggs, keys), every, keys, grid):
        prof = profiles.get(row[PARTITION_COLUMN])
        if prof is not None:
            _read(row, prof, plan, extra_aggs, out)
    _grid_counts(out, profiles, tolerance)
    return out


def _grid_counts(out: Profiled, profiles: Mapping[str, PartitionProfile], tolerance: Tolerance) -> None:
    """Live's histogram per partition and column from its percentile grid (`live_grid.py`),
    scaled from the sample to live's values, which the profile's own row of live counted."""
    for (text, c), (grid, sampled) in out.grids.items():
        measured = profiles[text].columns.get(c)
        live = measured.live if measured is not None else None
        values = live.count if live is not None else 0
        edges = thresholds(out.edges[text][c], tolerance)
        out.live_counts.setdefault(text, {})[c] = live_grid.counts(grid, sampled, values, edges)
    out.grids.clear()  # read: not held while the facts job runs
