"""Transforms used by the tests. Data comes from a hash of (id, ds), so it is deterministic
whatever the chunking. Module-level knobs let a test inject failures or measure concurrency."""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ROWS_PER_DAY = 5
FAIL_ON: set[dt.date] = set()
SLEEP_S = 0.0
_lock = threading.Lock()
in_flight = 0
peak = 0
# Run by `tracked` and `every_value_changed` when they are called, in the run's chunk thread: a
# racing test holds a run there (it has leased its partitions and not yet committed) or runs
# the other side right there, instead of guessing the moment with a sleep.
ON_CALL: Callable[[], None] | None = None


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
        if ON_CALL is not None:
            ON_CALL()
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


def with_plane_year(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """A logic change that adds a column (`plane_year`, null on one id in five) and leaves every
    other column as live has it, except on DRIFT_DAY, broken as in drift_on_one_day."""
    year = F.when(F.col("id") % 5 == 4, F.lit(None)).otherwise((F.abs(F.xxhash64("id")) % 30 + 1990).cast("int"))
    return drift_on_one_day(spark, partitions).withColumn("plane_year", year)


def with_legacy_score(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """events with a nullable column `legacy_score` (one a logic change stops producing)."""
    return events(spark, partitions).withColumn("legacy_score", F.when(F.col("id") % 2 == 0, F.col("amount")))


def with_sessions(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """events with an int column `sessions` (a live table whose column a logic change widens)."""
    return events(spark, partitions).withColumn("sessions", (F.col("id") * 7).cast("int"))


def sessions_widened(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """with_sessions, with `sessions` a bigint holding values no int can (the change widens it)."""
    return events(spark, partitions).withColumn("sessions", F.col("id") * 3_000_000_000)


def nudged_with_one_bad_day(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Every amount moves a little (passes validation, but visibly differs from live), and
    DRIFT_DAY is broken as in drift_on_one_day."""
    return drift_on_one_day(spark, partitions).withColumn("amount", F.col("amount") + 0.5)


def nudged_with_plane_year(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """nudged_with_one_bad_day, and a new column (`plane_year`, as in with_plane_year): a
    promotion of it changes live's schema and data."""
    year = F.when(F.col("id") % 5 == 4, F.lit(None)).otherwise((F.abs(F.xxhash64("id")) % 30 + 1990).cast("int"))
    return nudged_with_one_bad_day(spark, partitions).withColumn("plane_year", year)


def boom(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    raise ValueError(f"cannot compute {partitions[0]}")


def udf_boom(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Fails inside a Python UDF, on the executor: PySpark wraps the worker's traceback (and, on
    the write path, the JVM's stack) around the one line the user needs. The UDF is nested so
    that it travels by value: the Python workers cannot import this test module."""

    def _amount_or_raise(amount: float) -> float:
        if amount >= 0:  # every amount: the message is the same whichever row fails first
            raise ValueError("bad amount, not a price")
        return amount

    return events(spark, partitions).withColumn("amount", F.udf(_amount_or_raise, "double")("amount"))


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


# ---- logic changes for the change contract (validation.expected_changes) ----

BIG_DAY, WARN_DAY, CAT_DAY = dt.date(2024, 1, 3), dt.date(2024, 1, 5), dt.date(2024, 1, 7)


def amount_moves(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """The intended change: amount grows by 0.1 * id (mean change 0.2 on 5 rows), by 0.2 * id on
    WARN_DAY and 10 * id on BIG_DAY; on CAT_DAY ids 1 and 2 also get category 'z' (a bug)."""
    df = events(spark, partitions)
    step = F.when(F.col("ds") == F.lit(BIG_DAY), 10.0).when(F.col("ds") == F.lit(WARN_DAY), 0.2).otherwise(0.1)
    df = df.withColumn("amount", F.col("amount") + step * F.col("id"))
    bug = (F.col("ds") == F.lit(CAT_DAY)) & F.col("id").isin(1, 2)
    return df.withColumn("cat", F.when(bug, F.lit("z")).otherwise(F.col("cat")))


def float_noise(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Amounts as a different summation order would give them: off by a relative 1e-13."""
    return events(spark, partitions).withColumn("amount", F.col("amount") * (1 + 1e-13) + 1e-15)


WIDE_ROWS = 300  # rows per day of the `wide` tables: enough for the distribution tests
SHIFT_DAY, NUDGE_DAY = dt.date(2024, 1, 1), dt.date(2024, 1, 2)


WIDE_BIG_ROWS = 25_000  # past twice profile_job.DECILE_SAMPLE: the deciles from every 4th row


def wide(spark: SparkSession, partitions: list[dt.date], rows: int = WIDE_ROWS) -> DataFrame:
    days = spark.range(1).select(F.explode(F.array(*[F.lit(d) for d in partitions])).alias("ds"))
    df = days.crossJoin(spark.range(rows))
    h = F.abs(F.xxhash64("id", "ds"))
    return df.select("id", (h % 10000 / 100.0).alias("amount"), F.col("ds"))


def wide_big(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    return wide(spark, partitions, WIDE_BIG_ROWS)


def wide_shifted(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """SHIFT_DAY: every amount + 30 (a real change of distribution); NUDGE_DAY: + 0.01."""
    df = wide(spark, partitions)
    step = F.when(F.col("ds") == F.lit(SHIFT_DAY), 30.0).when(F.col("ds") == F.lit(NUDGE_DAY), 0.01).otherwise(0.0)
    return df.withColumn("amount", F.col("amount") + step)


def wide_ranked(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Changes to rank as samples: on SHIFT_DAY amount + (id % 7) / 2 (many ties; id % 7 == 0
    unchanged) and no amount for ids 10 and 20 (a change without a difference: ranked first);
    on NUDGE_DAY amount + id / 100 (all different) and label "b" instead of "a" where id % 3 == 0
    (a text: its changes rank by key)."""
    df = wide(spark, partitions)
    shift, nudge = F.col("ds") == F.lit(SHIFT_DAY), F.col("ds") == F.lit(NUDGE_DAY)
    step = F.when(shift, (F.col("id") % 7) * 0.5).when(nudge, F.col("id") / 100.0).otherwise(0.0)
    gone = shift & F.col("id").isin(10, 20)
    label = F.when(nudge & (F.col("id") % 3 == 0), F.lit("b")).otherwise(F.lit("a"))
    return df.withColumn("amount", F.when(gone, F.lit(None)).otherwise(F.col("amount") + step)).withColumn(
        "label", label
    )


def category_c_retired(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """New logic for a table partitioned by (ds, cat): amounts doubled, and category "c" is no
    longer produced, so its sub-partitions must be cleared wherever a date is recomputed."""
    return events_v2(spark, partitions).filter(F.col("cat") != F.lit("c"))


def instants(spark: SparkSession, periods: list[dt.datetime], scale: float = 1.0) -> DataFrame:
    """Rows at instants inside each period (a few minutes past its start), for tables partitioned
    by days/hours/months of a timestamp: ids 0..ROWS_PER_DAY-1 per period."""
    starts = spark.range(1).select(F.explode(F.array(*[F.lit(p) for p in periods])).alias("start"))
    df = starts.crossJoin(spark.range(ROWS_PER_DAY))
    ts = (F.col("start").cast("long") + F.col("id") * 97 + 13).cast("timestamp")
    h = F.abs(F.xxhash64("id", "start"))
    return df.select(F.col("id"), (h % 1000 / 10.0 * F.lit(scale)).alias("amount"), ts.alias("event_ts"))


def instants_v2(spark: SparkSession, periods: list[dt.datetime]) -> DataFrame:
    return instants(spark, periods, scale=2.0)


def instants_spilling(spark: SparkSession, periods: list[dt.datetime]) -> DataFrame:
    """One row a second before the first period starts: outside every requested partition."""
    early = instants(spark, periods[:1]).limit(1).withColumn("event_ts", F.lit(periods[0] - dt.timedelta(seconds=1)))
    return instants(spark, periods).unionByName(early)


def every_value_changed(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """Rows no run of `events_v2` makes (every amount negative): seen in live, they were never validated."""
    if ON_CALL is not None:
        ON_CALL()
    return events(spark, partitions).withColumn("amount", F.lit(-1.0) - F.col("amount"))


# A three-layer pipeline raw -> staging -> features (tests/e2e/test_pipeline.py): staging's logic
# changes (amounts doubled), features are staging's amounts plus one; one day is broken in
# staging (a key lost) and another only in features.
STAGING_BROKEN = dt.date(2024, 1, 3)
FEATURES_BROKEN = dt.date(2024, 1, 6)


def _lose_key(df: DataFrame, day: dt.date) -> DataFrame:
    return df.where(~((F.col("ds") == F.lit(day)) & (F.col("id") == 0)))


def staging_v2(spark: SparkSession, partitions: list[dt.date], inputs: dict[str, DataFrame]) -> DataFrame:
    """Reads raw as this run wrote it (its shadow), never raw's live table."""
    raw = inputs["raw"].where(F.col("ds").isin(partitions))
    return _lose_key(raw.withColumn("amount", F.col("amount") * 2), STAGING_BROKEN)


def features_v2(spark: SparkSession, partitions: list[dt.date], inputs: dict[str, DataFrame]) -> DataFrame:
    staging = inputs["staging"].where(F.col("ds").isin(partitions))
    return _lose_key(staging.withColumn("amount", F.col("amount") + 1), FEATURES_BROKEN)


# A logic change that moves amount by +4% on every day but three, where it moves by +40%.
BROKEN_DAYS = (dt.date(2024, 1, 15), dt.date(2024, 2, 5), dt.date(2024, 2, 20))


def amount_up_4pct(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    """amount x 1.04, and x 1.40 on BROKEN_DAYS; nothing else differs."""
    factor = F.when(F.col("ds").isin(*[F.lit(d) for d in BROKEN_DAYS]), 1.40).otherwise(1.04)
    return events(spark, partitions).withColumn("amount", F.col("amount") * factor)


# A source receiving late events: by the pinned "now" (SHADOW_BACKFILL_NOW, as the nightly test
# sets it), a day has 5 rows (what live was seeded with) until D+1, 6 at D+2, 8 at D+3 and 9
# from D+4 on; from D+3 on, id 0's amount is corrected (a late update, not a new row).
ARRIVED_BY_AGE = {2: 6, 3: 8}
LATE_FINAL, LATE_CORRECTED_FROM = 9, 3


def late_arriving(spark: SparkSession, partitions: list[dt.date]) -> DataFrame:
    from zoneinfo import ZoneInfo

    from shadow_backfill.windows import current_time

    today = current_time(ZoneInfo("UTC")).date()
    frames = []
    for day in partitions:
        age = (today - day).days
        rows = LATE_FINAL if age >= 4 else ARRIVED_BY_AGE.get(age, ROWS_PER_DAY)
        h = F.abs(F.xxhash64("id", "ds"))
        df = spark.range(rows).select(F.col("id"), F.lit(day).alias("ds"))
        amount = h % 1000 / 10.0
        corrected = F.when(F.col("id") == 0, amount + 1.0).otherwise(amount) if age >= LATE_CORRECTED_FROM else amount
        cat = F.element_at(F.array(F.lit("a"), F.lit("b"), F.lit("c")), (h % 3 + 1).cast("int"))
        frames.append(df.select(F.col("id"), corrected.alias("amount"), cat.alias("cat"), F.col("ds")))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out
