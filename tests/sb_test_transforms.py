"""Transforms used by the tests. Data comes from a hash of (id, ds), so it is deterministic
whatever the chunking. Module-level knobs let a test inject failures or measure concurrency."""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ROWS_PER_DAY = 5
FAIL_ON: set[dt.date] = set()
SLEEP_S = 0.0
_lock = threading.Lock()
in_flight = 0
peak = 0


def events(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    days = spark.range(1).select(F.explode(F.array(*[F.lit(d) for d in partitions])).alias("ds"))
    ids = spark.range(ROWS_PER_DAY).withColumnRenamed("id", "id")
    df = days.crossJoin(ids)
    h = F.abs(F.xxhash64("id", "ds"))
    return df.select(
        F.col("id"),
        (h % 1000 / 10.0).alias("amount"),
        F.element_at(F.array(F.lit("a"), F.lit("b"), F.lit("c")), (h % 3 + 1).cast("int")).alias("cat"),
        F.col("ds"),
    )


def events_v2(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    return events(spark, partitions).withColumn("amount", F.col("amount") * 2)


def flaky(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    bad = FAIL_ON.intersection(partitions)
    if bad:
        raise RuntimeError(f"injected failure for {sorted(bad)}")
    return events(spark, partitions)


def tracked(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Counts how many transform calls are in flight at once (the runner's unit of work)."""
    global in_flight, peak
    with _lock:
        in_flight += 1
        peak = max(peak, in_flight)
    try:
        time.sleep(SLEEP_S)
        return events(spark, partitions)
    finally:
        with _lock:
            in_flight -= 1


def slow(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    time.sleep(float(os.environ.get("SB_SLOW_SECONDS", "0")))
    return events(spark, partitions)


def one_day_too_many(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    extra = max(partitions) + dt.timedelta(days=1)
    return events(spark, [*partitions, extra])


def null_partition(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    df = events(spark, partitions)
    return df.unionByName(df.limit(1).withColumn("ds", F.lit(None).cast("date")))


def wrong_schema(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    return events(spark, partitions).withColumn("amount", F.col("amount").cast("string")).drop("cat")


def not_a_dataframe(spark: SparkSession, partitions: list[dt.date]) -> object:
    return [1, 2, 3]


DRIFT_DAY = dt.date(2024, 1, 5)


def drift_on_one_day(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Same as live except on DRIFT_DAY: amounts tripled and key 0 dropped."""
    df = events(spark, partitions)
    day = F.col("ds") == F.lit(DRIFT_DAY)
    df = df.withColumn("amount", F.when(day, F.col("amount") * 3).otherwise(F.col("amount")))
    return df.filter(~(day & (F.col("id") == 0)))


def with_extra_column(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    return events(spark, partitions).withColumn("extra", F.lit(1))


def nudged_with_one_bad_day(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Every amount moves a little (passes validation, but visibly differs from live), and
    DRIFT_DAY is broken as in drift_on_one_day."""
    return drift_on_one_day(spark, partitions).withColumn("amount", F.col("amount") + 0.5)


def boom(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    raise ValueError(f"cannot compute {partitions[0]}")


# ---- transforms that misbehave in ways that must not escape the run (the bad-input catalogue) ----


def exits_zero(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    sys.exit(0)


def exits_three(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    sys.exit(3)


def interrupted(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """What Ctrl-C does to a transform running in the driver."""
    raise KeyboardInterrupt


def boom_markup(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """An error message that Rich would read as markup (and crash on) if it were not escaped."""
    raise ValueError("[/] unbalanced [red]markup[/bold] in a message")


def markup_category(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Key 0 gets the category '[/]': a data value that lands in a validation reason."""
    df = events(spark, partitions)
    return df.withColumn("cat", F.when(F.col("id") == 0, F.lit("[/]")).otherwise(F.col("cat")))
