"""Drift job 1, the profile: one aggregation of the shadow/live union by (partition, side),
and the live deciles (the bins the facts job sorts values into) by partition, in one job.

Row counts, null counts, mean, std and sum per column and the aggregates of the compiled
expectations all ride in the one grouping, so adding a column or an expectation adds columns
to a job, never a job. The live deciles have an aggregation of their own beside it
(`_collect`): where the engine has KLL sketches, a sketch of every live row, which also gives
live's histogram on them (`live_sketch.py`); elsewhere `percentile_approx` on a sample, with
keys as a grid of percentiles that gives live's histogram too (`live_grid.py`), else the facts
job counts live's histogram from the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure import fingerprints, live_grid, live_sketch
from shadow_backfill.validate.measure.bins import QUANTILES, sketches_fit, thresholds
from shadow_backfill.validate.measure.capabilities import engine_capabilities
from shadow_backfill.validate.measure.fingerprints import Fingerprints
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN, SHADOW_FLAG, as_text, is_side, side_name
from shadow_backfill.validate.measurements import ColumnPlan, Moments, PartitionProfile, SideStats

Edges = dict[str, dict[str, list[float]]]  # partition text -> numeric column -> live deciles
LiveCounts = dict[str, dict[str, tuple[float, ...]]]  # partition text -> numeric column -> live's bins


@dataclass(frozen=True)
class Sketching:
    """Live is sketched in the grouping (`live_sketch.py`); the bin thresholds are its
    deciles plus `tolerance`."""

    aggregations: list[Column]
    tolerance: Tolerance


@dataclass
class Profiled:
    """What the profile job tells the facts job: live's deciles, the fingerprints and, where
    the engine sketched live (`sketched`) or live's percentiles came as a grid (`grids`:
    `live_grid.py`), live's histogram on the deciles (`live_counts`), so the facts job need not
    read live's rows to count it."""

    edges: Edges
    prints: Fingerprints
    sketch: Sketching | None = None
    live_counts: LiveCounts = field(default_factory=dict)
    grids: dict[tuple[str, str], tuple[list[float], int]] = field(default_factory=dict)

    @property
    def sketched(self) -> bool:
        return self.sketch is not None


DECILE_SAMPLE = 10_000  # live rows per partition the deciles are taken from, at least


def decile_every(live_rows: Iterable[int]) -> int:
    """Take the live deciles from every m-th row (chosen by a hash of its partition and key, so
    the same rows each run), m as large as leaves the smallest partition `DECILE_SAMPLE` rows; 1 when a count
    is unknown (0). Why: the deciles' sketch costs per row, and at 45,000 rows per partition it
    was half the profile job; deciles only place the bin edges, and the histograms, PSI and KS
    count every row, but for live's histogram of a column shadow has copied or lacks (where the
    grid gives it: `live_grid.py`, scaled from the sample). From 10,000 rows a decile's rank is
    off by about 0.3% (its standard error), so each bin holds 10 +/- 1% of live rows."""
    smallest = min(live_rows, default=0)
    return max(1, smallest // DECILE_SAMPLE)


def _live_deciles(x: Column, *, array_form: bool, grid: bool) -> Column:
    if grid:  # array_form too: the scalar form would sort once per percentage
        return F.call_function("percentile_approx", x, F.expr(live_grid.grid_sql()), F.lit(live_grid.ACCURACY))
    if array_form:
        return F.percentile_approx(x, QUANTILES, 10000)
    return F.array(*[F.percentile_approx(x, q, 10000) for q in QUANTILES])


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


def _live_rows(union: DataFrame, every: int, sample_by: Sequence[str]) -> DataFrame:
    """The live rows the deciles are taken from: all, or every `every`-th by a hash of its
    partition and the `sample_by` columns, its key (a key names a row; the rows of a repeated
    key are taken or left together). Hashing every compared value as well read and hashed each
    live column again: profile 3.56 -> 2.91 s at 4.05 M rows per side."""
    live = union.filter(is_side("live"))
    if every <= 1:
        return live
    return live.filter(F.pmod(F.xxhash64(F.col(PARTITION_COLUMN), *[F.col(c) for c in sample_by]), F.lit(every)) == 0)


def _collect(
    union: DataFrame,
    plan: ColumnPlan,
    aggs: list[Column],
    every: int,
    keys: Sequence[str],
    sketch: Sketching | None,
    grid: bool = False,
) -> list[Row]:
    """Run the aggregation and, in the same job, the live deciles in an aggregation of their
    own: `percentile_approx` and the KLL sketch are object aggregates, and inside the one
    grouping they took every count and sum off Spark's fast, code-generated hash aggregation
    (profile at 4.05 M rows per side: 6.8 s, against 4.6 s apart and 1.7 s without deciles;
    with the sketches, 10.5 s against 7.1 s apart). Where the engine sketches (`sketch`),
    every live row goes into the sketch, which also gives live's histogram; else the
    deciles come from every `every`-th row, as one array when the engine can (one sort per
    column instead of nine: `engine_capabilities`), and with `grid` as 1,001 percentiles with
    the sample's count of values (`live_grid.py`)."""
    profile = union.groupBy(PARTITION_COLUMN, SHADOW_FLAG).agg(*aggs)
    if not plan.numeric:
        return as_text(profile).collect()
    if sketch is not None:
        live = union.filter(is_side("live")).groupBy(PARTITION_COLUMN).agg(*sketch.aggregations)
    else:
        array_form = engine_capabilities(union.sparkSession).array_percentiles
        x = [F.col(c).cast("double") for c in plan.numeric]
        deciles = [_live_deciles(c, array_form=array_form, grid=grid).alias(f"__q_{i}") for i, c in enumerate(x)]
        sampled = [F.count(c).alias(f"__qn_{i}") for i, c in enumerate(x)] if grid else []
        live = _live_rows(union, every, keys).groupBy(PARTITION_COLUMN).agg(*deciles, *sampled)
    live = live.withColumn(SHADOW_FLAG, F.lit(False))
    return as_text(profile.unionByName(live, allowMissingColumns=True)).collect()


def _read_deciles(row: Row, plan: ColumnPlan, out: Profiled) -> None:
    """The live deciles of a row of their own aggregation, or live's sketched bins."""
    text = row[PARTITION_COLUMN]
    if out.sketch is not None:
        for c, found in live_sketch.read(row, plan.numeric, out.sketch.tolerance).items():
            out.edges.setdefault(text, {})[c] = list(found.deciles)
            out.live_counts.setdefault(text, {})[c] = found.counts
        return
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
    every: int = 1,
    keys: Sequence[str] = (),
    tolerance: Tolerance = EXACT,
) -> Profiled:
    """Fill counts, null rates, moments and expectation aggregates into `profiles`; return the
    live deciles per partition and numeric column for the facts job, from a sketch of every
    live row where the engine has one and the sketches fit the driver (`bins.sketches_fit`),
    else from every `every`-th live row (`decile_every`,
    chosen by a hash of the `keys`), with keys as a grid that also gives live's histogram
    (`live_grid.py`); and with keys each side's fingerprints (`fingerprints.py`), which tell the
    facts job what it need not group."""
    sketch = None
    capable = engine_capabilities(union.sparkSession)
    fit = sketches_fit(len(profiles), len(plan.numeric))
    if plan.numeric and fit and capable.kll_sketches:
        sketch = Sketching(live_sketch.aggregations(plan.numeric), tolerance)
    grids_fit = sketches_fit(len(profiles), len(plan.numeric), live_grid.GRID_BYTES)
    grid = bool(keys) and sketch is None and grids_fit and capable.array_percentiles
    out = Profiled({}, Fingerprints(plan.compared, enabled=bool(keys)), sketch)
    for row in _collect(union, plan, _aggregations(plan, extra_aggs, keys), every, keys, sketch, grid):
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
