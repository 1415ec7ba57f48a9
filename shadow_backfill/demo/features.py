"""Demo feature transforms: v1 is what is live, v2 is the logic change being backfilled.

Data is synthesised from a hash of (entity_id, ds), so the same partition always yields the
same rows however partitions are grouped into Spark jobs.

v2 changes the spend currency factor (a small, acceptable drift on every day) and, on the
days in BAD_DAYS, has a bug: it drops one country and loses a third of the scores. Validation
must fail exactly those days.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

ENTITIES = 200
COUNTRIES = ["US", "DE", "FR", "IN", "BR"]
BAD_DAYS = [dt.date(2024, 1, 10), dt.date(2024, 2, 5), dt.date(2024, 2, 20)]


def _unit(seed: str) -> Column:
    """A deterministic number in [0, 1) per (entity, day, seed)."""
    return (F.abs(F.xxhash64(F.col("entity_id"), F.col("ds"), F.lit(seed))) % 1_000_000) / 1_000_000.0


def _base(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    # Built from literals in the JVM: no Python worker starts for the partition list.
    days = spark.range(1).select(F.explode(F.array(*[F.lit(d) for d in partitions])).alias("ds"))
    entities = spark.range(ENTITIES).withColumnRenamed("id", "entity_id")
    df = days.crossJoin(entities)
    country = F.element_at(F.array(*[F.lit(c) for c in COUNTRIES]), (F.floor(_unit("c") * 5) + 1).cast("int"))
    return (
        df.withColumn("country", country)
        .withColumn("sessions", F.floor(_unit("s") * 20).cast("int"))
        .withColumn("spend", F.round(_unit("p") * 100.0, 2))
        .withColumn("score", F.round(_unit("q"), 4))
    )


def _features(df: DataFrame) -> DataFrame:
    return df.select(
        "entity_id",
        "country",
        "sessions",
        "spend",
        (F.col("spend") / F.greatest(F.col("sessions"), F.lit(1))).alias("spend_per_session"),
        "score",
        "ds",
    )


def features_v1(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    return _features(_base(spark, partitions))


def features_v2(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    df = _base(spark, partitions).withColumn("spend", F.round(F.col("spend") * 1.02, 2))
    bad = F.col("ds").isin([F.lit(d) for d in BAD_DAYS])
    df = df.filter(~(bad & (F.col("country") == "BR")))
    df = df.withColumn("score", F.when(bad & (_unit("n") < 0.35), F.lit(None)).otherwise(F.col("score")))
    return _features(df)
