"""What the facts job looks at, and the per-row expressions both of its paths share.

A fact is (kind, column, value) for one row: its key, its bin on its partition's live deciles
per numeric column, its category per string/boolean column, its value per uniqueness
expectation. The bins are counted against thresholds computed once on the driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.partitions import quote_identifier
from shadow_backfill.validate.measure.bins import QUANTILES, thresholds
from shadow_backfill.validate.measure.plan import PARTITION_COLUMN, is_side

Edges = Mapping[str, Mapping[str, list[float]]]
N_BINS = len(QUANTILES) + 1
# The column of every row of the facts job naming its fact by index in `fact_list` (null on a
# sample's row): the one column name all of the job's branches share.
FACT_INDEX = "__fi"


@dataclass(frozen=True)
class Fact:
    kind: str  # "key", "bin", "category", "unique"
    column: str | None
    value: Column  # the string the fact is grouped by; null = no fact for this row


@dataclass(frozen=True)
class FactsSpec:
    """What the facts job looks at; `compared` is empty when there are no keys to diff on."""

    keys: Sequence[str] = ()
    numeric: Sequence[str] = ()  # binned on the live deciles; compared by value within tolerance
    compared: Sequence[str] = ()
    categories: Sequence[str] = ()
    unique_columns: Sequence[str] = ()
    max_categories: int = 0
    tolerance: Tolerance = EXACT  # when two numbers are equal
    sample_rows: int = 0  # changed (key, column) values per partition brought back as samples
    sample_first: Sequence[str] = ()  # columns whose samples come first (unexpected changes)
    integral: Sequence[str] = ()  # numeric columns shown as integers in samples
    # per partition text, the columns whose fingerprints agree on both sides (`Fingerprints.agreed`)
    agreed: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # partitions whose keys and every column in `compared` agree: the key grouping reads shadow
    # there and mirrors it as live (`key_facts.by_key`)
    mirrored: frozenset[str] = frozenset()
    # per partition text and numeric column, live's histogram as the profile read it off its
    # percentile grid (`live_grid.py`): the facts job need not count
    # live's rows for a column it does not carry
    live_counts: Mapping[str, Mapping[str, tuple[float, ...]]] = field(default_factory=dict)
    # the key grouping's shuffle partitions, None for the session's (`key_partitions.py`)
    key_partitions: int | None = None

    def within(self, shadow: Column, live: Column) -> Column:
        """shadow equals live within tolerance (Spark's NaN = NaN and inf = inf hold)."""
        close = self.tolerance.close(shadow, live, F.abs)
        return shadow.eqNullSafe(live) | (shadow.isNotNull() & live.isNotNull() & close)


def _threshold(i: int, j: int) -> str:
    """The column holding numeric column i's threshold j (its j-th live decile plus tolerance)."""
    return f"__e_t{i}_{j}"


def edges_frame(spark: SparkSession, spec: FactsSpec, edges: Edges, kind: DataType) -> DataFrame:
    """Per partition (a value of type `kind`, as the rows hold it), the bin thresholds of every
    numeric column as plain double columns, in a small frame to broadcast: one JSON literal
    parsed in Spark, so the plan holds one value however many partitions, and no Python worker
    is started.

    A threshold is a live decile plus the tolerance (a value within tolerance of an edge counts
    as on it, so float noise cannot move it across), computed here with the same double
    arithmetic Spark would use. Per-row array lookups and tolerance arithmetic made the bin
    expressions of four columns too large for the JVM to compile: 10.8 s against 0.9 s for
    1.2 M rows."""
    rows = []
    for k, by_col in edges.items():
        row: dict[str, Any] = {"k": k}
        for i, c in enumerate(spec.numeric):
            for j, t in enumerate(thresholds(by_col.get(c) or [], spec.tolerance)):
                row[_threshold(i, j)] = t
        rows.append(row)
    names = [_threshold(i, j) for i in range(len(spec.numeric)) for j in range(len(QUANTILES))]
    schema = "array<struct<k:string," + ",".join(f"{n}:double" for n in names) + ">>"
    parsed = spark.range(1).select(F.explode(F.from_json(F.lit(json.dumps(rows)), schema)).alias("r"))
    return parsed.select(F.col("r.k").cast(kind).alias(PARTITION_COLUMN), *[F.col(f"r.{n}").alias(n) for n in names])


def bin_of(i: int, x: str) -> Column:
    """The bin (0..9) of numeric column i's value, the double SQL expression `x` over our own
    names or a quoted column (`quote_identifier`), on its partition's thresholds: the number
    of thresholds it lies above; null when the value is null or the partition has no live
    deciles for it. A binary search over the ascending thresholds (`edges_frame`): 3-4
    comparisons per value instead of 9, which took the histograms' reader of the key grouping
    from 3.8 to 1.6 s over the grouping at 4.05 M rows per side.

    Written as SQL text, parsed once by Spark: built as Columns, its 19 branches cost about 50
    calls into the JVM per column and side, 0.7 s of every keyed validation's planning with four
    numeric columns (PySpark 4.1); `tests/e2e/test_speed_plans.py` counts them."""
    thresholds = [_threshold(i, j) for j in range(len(QUANTILES))]

    def search(low: int, high: int) -> str:  # x's bin is one of low..high
        if low == high:
            return str(low)
        mid = (low + high) // 2  # above threshold `mid`: bin mid + 1 or more
        return f"CASE WHEN {x} > {thresholds[mid]} THEN {search(mid + 1, high)} ELSE {search(low, mid)} END"

    return F.expr(f"CASE WHEN {x} IS NOT NULL AND {thresholds[0]} IS NOT NULL THEN {search(0, len(QUANTILES))} END")


def fact_list(spec: FactsSpec, with_edges: bool) -> list[Fact]:
    """The facts in a fixed order (the key first, at index 0, when there are keys): a fact's
    index is how the collected rows name it."""
    facts: list[Fact] = []
    if spec.keys:  # counted per key (key_facts.key_counts), never from a value of its own
        facts.append(Fact("key", None, F.lit(None).cast("string")))
    if with_edges:
        as_double = [f"CAST({quote_identifier(c)} AS DOUBLE)" for c in spec.numeric]
        facts += [Fact("bin", c, bin_of(i, x)) for i, (c, x) in enumerate(zip(spec.numeric, as_double, strict=True))]
    facts += [Fact("category", c, F.col(c)) for c in spec.categories]  # nulls: the null-rate check
    facts += [Fact("unique", c, F.when(is_side("shadow"), F.col(c))) for c in spec.unique_columns]
    return facts


@dataclass(frozen=True)
class Diff:
    """One compared column on one key: whether it changed, and by how much (numbers only)."""

    changed: Column
    abs_diff: Column


Pair = Callable[[int], tuple[Column, Column]]  # compared column j -> (shadow, live)


def abs_diff(shadow: Column, live: Column) -> Column:
    """|shadow - live|, 0 for equal values (an unchanged infinity or NaN is no difference, where
    the subtraction gives NaN: the largest of any column holding one was NaN on classic Spark,
    and Sail's maximum over a NaN depends on row order), null where a side is null."""
    same = shadow.isNotNull() & live.isNotNull() & (shadow == live)
    return F.when(same, F.lit(0.0)).otherwise(F.abs(shadow - live))


def diffs(spec: FactsSpec, values: Pair) -> list[Diff]:
    """Per compared column j, from its (shadow, live) values: numbers within tolerance, any
    other value (a hash) exactly."""
    out = []
    for j, c in enumerate(spec.compared):
        sh, lh = values(j)
        if c in spec.numeric:
            out.append(Diff(~spec.within(sh, lh), abs_diff(sh, lh)))
        else:
            out.append(Diff(~sh.eqNullSafe(lh), F.lit(None).cast("double")))
    return out
