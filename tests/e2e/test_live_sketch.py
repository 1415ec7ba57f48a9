"""Live's histograms read off KLL sketches that Spark built (`measure/live_sketch.py`): the
engine sketches where it can, a partition of at most `K` values gets the reference's exact
deciles and counts, a larger one its shares within the stated rank error, and a table that did
not change is not read again to count its histograms. Classic Spark; the differential test
(`tests/formats/test_measure_reference.py`) holds the sketched path to the reference on every
backend of the Spark line it runs on."""

from __future__ import annotations

import math
from typing import Any

import pyspark
import pytest
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.bins import RANK_ERROR, K
from shadow_backfill.validate.measure.capabilities import engine_capabilities
from shadow_backfill.validate.measure.facts_job import rows_to_count
from shadow_backfill.validate.measure.fast import FastMeasurer
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
    assert large is not None and large_exact is not None and large.shadow == large.live
    n = sum(large_exact.live)
    for j in range(len(large.live)):
        shares = [sum(h.live[: j + 1]) / n for h in (large, large_exact)]
        assert abs(shares[0] - shares[1]) <= RANK_ERROR, (j, shares)
    reference_deciles = ReferenceMeasurer("ds", ["id"], max_categories=5).measure(table, table, texts)
    assert small.edges == reference_deciles[str(SMALL)].columns["x"].histogram.edges  # type: ignore[union-attr]


def test_with_live_sketched_the_row_bins_read_shadow_only_where_it_changed(spark: Any) -> None:
    """Nothing at all is read where every binned column agrees, and shadow's rows of the
    partition where one does not: one `Range` in the plan (each partition of each side is
    one), where counting live from the rows reads three."""
    table = _table(spark)
    measurer = FastMeasurer(table, table, partition="ds", keys=["id"], max_categories=5)
    agreed = {str(SMALL): frozenset({"x"}), str(LARGE): frozenset({"x"})}
    assert rows_to_count(measurer.union, ["x"], agreed, live_sketched=True) is None
    one_changed = rows_to_count(measurer.union, ["x"], {**agreed, str(SMALL): frozenset()}, live_sketched=True)
    assert one_changed is not None
    from_rows = rows_to_count(measurer.union, ["x"], {**agreed, str(SMALL): frozenset()})
    assert from_rows is not None
    ranges = [df._jdf.queryExecution().optimizedPlan().toString().count("Range (") for df in (one_changed, from_rows)]
    assert ranges == [1, 3]
