"""What the engine behind a Spark session can do, found once per session by a probe query.

The measuring jobs choose their fastest form by these facts, so an engine that lacks a
function gets the slower form from its first query on, rather than a failed job rerun (as a
process-wide flag behind a bare `except` once did). The probe names the one error it expects:
the engine refusing the query, a `PySparkException`; anything else propagates.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


@dataclass(frozen=True)
class EngineCapabilities:
    """`array_percentiles`: `percentile_approx` takes an array of percentages and sorts a column
    once for all nine deciles (Spark does; Sail, on DataFusion, has only the scalar form, which
    sorts once per decile)."""

    array_percentiles: bool


_FOUND: weakref.WeakKeyDictionary[Any, EngineCapabilities] = weakref.WeakKeyDictionary()


def engine_capabilities(spark: SparkSession) -> EngineCapabilities:
    """The session's capabilities, probed on its first use and kept as long as the session."""
    found = _FOUND.get(spark)
    if found is None:
        found = _FOUND[spark] = EngineCapabilities(
            array_percentiles=_runs(lambda: _percentiles_probe(spark)),
        )
    return found


def _percentiles_probe(spark: SparkSession) -> DataFrame:
    return spark.range(2).agg(F.percentile_approx(F.col("id").cast("double"), [0.5, 0.9], 100))


def _runs(probe: Callable[[], DataFrame]) -> bool:
    """Whether the engine runs the probe query (a classic session may refuse it as it is
    built, Spark Connect when it runs)."""
    try:
        probe().collect()
    except PySparkException:
        return False
    return True
