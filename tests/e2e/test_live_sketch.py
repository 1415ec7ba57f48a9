"""Live's histograms read off KLL sketches that Spark built (`measure/live_sketch.py`): the
engine sketches where it can, a partition of at most `K` values gets the reference's exact
deciles and counts, a larger one its shares within the stated rank error, and a table that did
not change is not read again to count its histograms. Classic Spark; the differential test
(`tests/formats/test_measure_reference.py`) holds the sketched path to the reference on every
backend of the Spark line it runs on."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pyspark
import pytest
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.bins import RANK_ERROR, K
from shadow_backfill.validate.measure.capabilities import engine_capabilities
from shadow_backfill.validate.measure.facts_job import facts_frame
from shadow_backfill.validate.measure.facts_spec import edges_frame, fact_list
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.live_grid import ACCURACY, STEPS
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN
from shadow_backfill.validate.measure.reference import ReferenceMeasurer

pytestmark = pytest.mark.classic
SKETCHING = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)
SMALL, LARGE = 1, 2  # partitions: fewer values than K, and 50 times more


def test_the_engine_sketches_from_spark_4_1(spark: Any) -> None:
    assert engine_capabilities(spark).kll_sketches == SKETCHING


def _table(spark: Any) -> Any:
    small = spark.range(K - 24).select(
        F.lit(SMALL).alias("ds"),
        F.col("id"),
        F.when(F.col("id") % 50 == 0, F.lit(math.nan)).otherwise((F.col("id") % 13).cast("double")).alias("x"),
    )
    large = spark.range(50 * K).select(F.lit(LARGE).alias("ds"), F.col("id"), F.exp(F.randn(seed=5)).alias("x"))
    return small.unionByName(large)


@pytest.mark.skipif(not SKETCHING, reason="Spark 3.5 has no KLL sketch (the test above holds that)")
def test_histograms_read_off_the_sketch_match_the_rows(spark: Any) -> None:
    table = _table(spark).localCheckpoint()
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    texts = [str(SMALL), str(LARGE)]
    fast = measurer.run(texts)
    assert measurer.sketched and measurer.grouped == []
    edges = {t: {"x": list(fast[t].columns["x"].histogram.edges)} for t in texts}  # type: ignore[union-attr]
    exact = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(table, table, texts, edges=edges)
    small, small_exact = (p[str(SMALL)].columns["x"].histogram for p in (fast, exact))
    assert small == small_exact, "at most K values: the sketch is exact"
    large, large_exact = (p[str(LARGE)].columns["x"].histogram for p in (fast, exact))
    assert large is not None and large_exact is not None
    n = sum(large_exact.live)
    for j in range(len(large.live)):
        shares = [sum(h.live[: j + 1]) / n for h in (large, large_exact)]
        assert abs(shares[0] - shares[1]) <= RANK_ERROR, (j, shares)
    reference_deciles = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(table, table, texts)
    assert small.edges == reference_deciles[str(SMALL)].columns["x"].histogram.edges  # type: ignore[union-attr]


def test_with_live_sketched_no_row_is_read_to_bin(spark: Any) -> None:
    """A column the key grouping leaves out agrees wherever both sides have rows, so with live
    sketched its histograms are live's sketch and its copy: the facts job plans no row bins
    (their sums are named `__b<fact>_<bin>_<side>`), where without the sketch it does."""
    table = _table(spark)
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    texts = [str(SMALL), str(LARGE)]
    spec = replace(measurer.facts, compared=[], agreed={t: frozenset({"x"}) for t in texts})
    edges = {t: {"x": [float(i) for i in range(9)]} for t in texts}
    thresholds = edges_frame(spark, spec, edges, measurer.union.schema[PARTITION_COLUMN].dataType)

    def row_bins(live_counts: dict[str, Any]) -> bool:
        sketched = replace(spec, live_counts=live_counts)
        df = facts_frame(measurer.union, sketched, fact_list(sketched, True), thresholds, 0)
        return re.search(r"__b\d+_\d+_shadow", str(df._jdf.queryExecution().optimizedPlan().toString())) is not None

    assert row_bins({}) and not row_bins({t: {"x": (1.0,) * 10} for t in texts})


def test_without_a_sketch_the_percentile_grid_gives_live_s_histogram(spark: Any) -> None:
    """Where the engine has no KLL sketch (Spark 3.5), the profile's percentiles come as a grid
    (`measure/live_grid.py`) that gives live's histogram too: exact at `STEPS` values, within
    half a grid step and percentile_approx's error above; on Spark 4.1 the sketch gives it.
    Either way no live row is read again to count it."""
    table = _table(spark).localCheckpoint()
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    texts = [str(SMALL), str(LARGE)]
    fast = measurer.run(texts)
    assert measurer.live_counted and measurer.grouped == [] and measurer.sketched == SKETCHING
    edges = {t: {"x": list(fast[t].columns["x"].histogram.edges)} for t in texts}  # type: ignore[union-attr]
    exact = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(table, table, texts, edges=edges)
    assert fast[str(SMALL)].columns["x"].histogram == exact[str(SMALL)].columns["x"].histogram
    large, large_exact = (p[str(LARGE)].columns["x"].histogram for p in (fast, exact))
    assert large is not None and large_exact is not None and sum(large.live) == sum(large_exact.live)
    bound = RANK_ERROR if SKETCHING else 0.5 / STEPS + 1 / ACCURACY + 1 / sum(large.live)
    for j in range(len(large.live)):
        shares = [sum(h.live[: j + 1]) / sum(h.live) for h in (large, large_exact)]
        assert abs(shares[0] - shares[1]) <= bound, (j, shares)
