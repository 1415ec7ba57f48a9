"""Live's deciles and histogram from the profile's percentile grid (`measure/live_grid.py`):
the same deciles on every run, exact on the sample, a partition's histogram within the grid's
error of its rows, and a table that did not change not read again to count its histograms.
Classic Spark; the differential test (`tests/formats/test_measure_reference.py`) holds the
grid to the reference on every backend."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.facts_job import facts_frame
from shadow_backfill.validate.measure.facts_spec import edges_frame, fact_list
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.live_grid import ACCURACY, EXACT_BELOW, STEPS
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN
from shadow_backfill.validate.measure.profile_job import decile_every
from shadow_backfill.validate.measure.reference import ReferenceMeasurer

pytestmark = pytest.mark.classic
SMALL, LARGE, MEDIUM = 1, 2, 3  # partitions: fewer values than the grid's steps, 50 and 3 times more
TASKS = 4  # each partition's rows spread over this many tasks, whose summaries Spark merges


def _table(spark: Any, tasks: int = TASKS) -> Any:
    small = spark.range(1000).select(
        F.lit(SMALL).alias("ds"),
        F.col("id"),
        F.when(F.col("id") % 50 == 0, F.lit(math.nan)).otherwise((F.col("id") % 13).cast("double")).alias("x"),
    )
    large = spark.range(50_000).select(F.lit(LARGE).alias("ds"), F.col("id"), F.exp(F.randn(seed=5)).alias("x"))
    medium = spark.range(9_000).select(F.lit(MEDIUM).alias("ds"), F.col("id"), (F.col("id") % 101).alias("x"))
    return small.unionByName(large).unionByName(medium).repartition(tasks).localCheckpoint()


@pytest.mark.parametrize("tasks", [1, TASKS], ids=["one task", "tasks merged"])
def test_every_run_gets_the_same_deciles_the_exact_ones_of_its_sample(spark: Any, tasks: int) -> None:
    """Sampled as a validation samples (`decile_every`: each partition its own m), every
    partition's deciles are the exact ones of its sample, in one task or merged from several,
    so a second run gets the same bins, PSI and KS. A KLL sketch (Spark 4.1's, used before) gave
    other deciles on each run, and fails this; so does a sample past `EXACT_BELOW` (the large
    partition's 6,250 in one task, with an accuracy of 10,000: its deciles a rank low)."""
    table = _table(spark, tasks)
    rows = {str(SMALL): 1000, str(LARGE): 50_000, str(MEDIUM): 9_000}
    every = decile_every(rows)
    assert every == {str(SMALL): 1, str(LARGE): 8, str(MEDIUM): 2}
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5, decile_every=every)
    runs = [measurer.run(list(rows)) for _ in range(3)]
    for text, m in every.items():
        edges = [r[text].columns["x"].histogram for r in runs]
        assert all(h is not None and h.edges == edges[0].edges and h.edges_every == m for h in edges), text  # type: ignore[union-attr]
        one = table.filter(F.col("ds") == int(text))
        sample = one.filter(F.pmod(F.xxhash64(F.col("ds"), F.col("id")), F.lit(m)) == 0)
        assert sample.count() < EXACT_BELOW
        exact = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(sample, sample, [text])
        assert edges[0].edges == exact[text].columns["x"].histogram.edges, text  # type: ignore[union-attr]


def test_with_live_s_grid_no_row_is_read_to_bin(spark: Any) -> None:
    """A column the key grouping leaves out agrees wherever both sides have rows, so with live's
    histogram from the grid its histograms are live's and its copy: the facts job plans no row
    bins (their sums are named `__b<fact>_<bin>_<side>`), where without the grid it does."""
    table = _table(spark)
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    texts = [str(SMALL), str(LARGE)]
    spec = replace(measurer.facts, compared=[], agreed={t: frozenset({"x"}) for t in texts})
    edges = {t: {"x": [float(i) for i in range(9)]} for t in texts}
    thresholds = edges_frame(spark, spec, edges, measurer.union.schema[PARTITION_COLUMN].dataType)

    def row_bins(live_counts: dict[str, Any]) -> bool:
        gridded = replace(spec, live_counts=live_counts)
        df = facts_frame(measurer.union, gridded, fact_list(gridded, True), thresholds, 0)
        return re.search(r"__b\d+_\d+_shadow", str(df._jdf.queryExecution().optimizedPlan().toString())) is not None

    assert row_bins({}) and not row_bins({t: {"x": (1.0,) * 10} for t in texts})


def test_the_percentile_grid_gives_live_s_histogram(spark: Any) -> None:
    """The profile's percentiles come as a grid that gives live's histogram too: exact at
    `STEPS` values, within half a grid step and percentile_approx's error above. No live row is
    read again to count it."""
    table = _table(spark)
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    texts = [str(SMALL), str(LARGE)]
    fast = measurer.run(texts)
    assert measurer.live_counted and measurer.grouped == []
    edges = {t: {"x": list(fast[t].columns["x"].histogram.edges)} for t in texts}  # type: ignore[union-attr]
    exact = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(table, table, texts, edges=edges)
    assert fast[str(SMALL)].columns["x"].histogram == exact[str(SMALL)].columns["x"].histogram
    large, large_exact = (p[str(LARGE)].columns["x"].histogram for p in (fast, exact))
    assert large is not None and large_exact is not None and sum(large.live) == sum(large_exact.live)
    bound = 0.5 / STEPS + 1 / ACCURACY + 1 / sum(large.live)
    for j in range(len(large.live)):
        shares = [sum(h.live[: j + 1]) / sum(h.live) for h in (large, large_exact)]
        assert abs(shares[0] - shares[1]) <= bound, (j, shares)
