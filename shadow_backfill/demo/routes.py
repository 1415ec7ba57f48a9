"""A small aggregated feature table, the shape where a gate cries wolf: 15 routes a day.

v2 is a logic change meant to move `late_share` a little on every day (+0.02 on average, with
some per-route spread) and a lot (+0.3) on the days in BIG_DAYS; `avg_delay` is recomputed in
another order of operations (float noise, not a change). Nothing else changes. With 15 rows a
side, PSI and KS are noise; the change contract judges it the way its author would.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

ROUTES = 15
START = dt.date(2024, 1, 1)
BIG_DAYS = [START + dt.timedelta(days=d) for d in (17, 90, 181, 250, 333)]


def _unit(seed: str) -> Column:
    return (F.abs(F.xxhash64(F.col("route_id"), F.col("ds"), F.lit(seed))) % 1_000_000) / 1_000_000.0


def routes_v1(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    days = spark.range(1).select(F.explode(F.array(*[F.lit(d) for d in partitions])).alias("ds"))
    df = days.crossJoin(spark.range(ROUTES).withColumnRenamed("id", "route_id"))
    carrier = F.element_at(F.array(F.lit("AA"), F.lit("BA"), F.lit("LH")), (F.floor(_unit("c") * 3) + 1).cast("int"))
    return df.select(
        "route_id",
        carrier.alias("carrier"),
        (F.floor(_unit("f") * 200) + 50).cast("int").alias("flights"),
        (_unit("l") * 0.4).alias("late_share"),
        (_unit("d") * 60.0).alias("avg_delay"),
        "ds",
    )


def routes_v2(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    df = routes_v1(spark, partitions)
    big = F.col("ds").isin([F.lit(d) for d in BIG_DAYS])
    step = F.when(big, F.lit(0.3)).otherwise(F.lit(0.02) + (_unit("n") - 0.5) * 0.04)
    total_delay = F.col("avg_delay") * F.col("flights")
    return df.withColumn("late_share", F.least(F.lit(1.0), F.col("late_share") + step)).withColumn(
        "avg_delay", total_delay / F.col("flights")
    )
