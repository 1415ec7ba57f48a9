"""A transform with one partition of each ending, for what a command tells when it ends (alerts,
lineage): in a module of its own, as tests/unit/test_preflight_threads.py parses
sb_test_transforms.py in its collision harness, whose odds depend on that file's text."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sb_test_transforms import DRIFT_DAY, events

BROKEN_DAY, EXTRA_ROW_DAY = dt.date(2024, 1, 3), dt.date(2024, 1, 7)


def one_of_each(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Recomputed in chunks of one: BROKEN_DAY raises (a failed recompute), DRIFT_DAY loses key 0
    (a failed verdict), EXTRA_ROW_DAY gains a row with a new key (a warn, with the thresholds
    tests/e2e/test_announce.py sets); every other day is live's."""
    if BROKEN_DAY in partitions:
        raise ValueError(f"cannot compute {BROKEN_DAY}")
    df = events(spark, partitions)
    df = df.filter(~((F.col("ds") == F.lit(DRIFT_DAY)) & (F.col("id") == 0)))
    if EXTRA_ROW_DAY not in partitions:
        return df
    extra = events(spark, [EXTRA_ROW_DAY]).filter(F.col("id") == 0).withColumn("id", F.lit(99).cast("long"))
    return df.unionByName(extra)
