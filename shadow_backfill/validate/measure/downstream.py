"""Running the consumers' queries (`validation.downstream_queries`) on one side of a partition.

The table under test is a temporary view over the table as of the version being judged, so the
query reads exactly what the gate judges, whatever the format, and its text never names a
table. `{table}` becomes the view's name. `:partition` becomes a scalar subquery on a one-row
view built from the partition's typed value through the DataFrame API: a partition value is
never pasted into SQL. (Spark's own named parameters, `spark.sql(text, args=...)`, are left
unbound on Spark 4.1 when the Iceberg or Delta SQL extensions are loaded: their parsers do not
pass parameters on.)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from shadow_backfill.errors import first_line
from shadow_backfill.sql_guard import bind
from shadow_backfill.validate.downstream import MAX_COMPARED_ROWS, LoadedQuery, QueryResult, QueryRun


@contextmanager
def table_view(spark: SparkSession, table: DataFrame) -> Iterator[str]:
    """A temporary view over `table` for the queries to name, dropped afterwards."""
    name = f"sb_downstream_{uuid.uuid4().hex[:12]}"
    table.createOrReplaceTempView(name)
    try:
        yield name
    finally:
        spark.catalog.dropTempView(name)


@contextmanager
def partition_view(spark: SparkSession, value: Any) -> Iterator[str]:
    """A one-row view whose column `p` holds the partition's value (a typed literal)."""
    from pyspark.sql import functions as F

    with table_view(spark, spark.range(1).select(F.lit(value).alias("p"))) as name:
        yield name


def run_query(spark: SparkSession, text: str, view: str, partition: str, compare: bool) -> QueryRun:
    """The query on the view, `:partition` the value in the `partition` view: its columns,
    whether it returns rows, and (for `compare`) its rows, bounded."""
    try:
        df = spark.sql(bind(text, view, partition))
        columns = tuple((f.name, f.dataType.simpleString()) for f in df.schema.fields)
        if not compare:
            return QueryRun(columns=columns, has_rows=bool(df.limit(1).collect()))
        rows = df.limit(MAX_COMPARED_ROWS + 1).collect()
    except Exception as exc:  # the consumer's query failing is what this test looks for
        return QueryRun(error=first_line(exc, 300))
    kept = tuple(tuple(r) for r in rows[:MAX_COMPARED_ROWS])
    return QueryRun(columns=columns, has_rows=bool(rows), rows=kept, truncated=len(rows) > MAX_COMPARED_ROWS)


def measure_queries(
    spark: SparkSession,
    queries: list[LoadedQuery],
    judged: DataFrame,
    live: DataFrame | None,
    values: dict[str, Any],
    narrow: Callable[[DataFrame, str], DataFrame],
) -> dict[str, list[QueryResult]]:
    """Each query on each partition (`values`: key -> typed value), on `judged` and on `live`
    (None: only on `judged`). `narrow(table, key)` is the table's rows of one partition: each
    query reads one partition's view, so a query costs what its partition costs."""
    out: dict[str, list[QueryResult]] = {}
    for key, value in values.items():
        live_rows = narrow(live, key) if live is not None else None
        with (
            table_view(spark, narrow(judged, key)) as on_judged,
            _maybe_view(spark, live_rows) as on_live,
            partition_view(spark, value) as p,
        ):
            out[key] = [
                QueryResult(
                    q,
                    run_query(spark, q.text, on_judged, p, q.compare),
                    run_query(spark, q.text, on_live, p, q.compare) if on_live else None,
                )
                for q in queries
            ]
    return out


@contextmanager
def _maybe_view(spark: SparkSession, table: DataFrame | None) -> Iterator[str | None]:
    if table is None:
        yield None
        return
    with table_view(spark, table) as name:
        yield name
