"""The fast path: GX expectations evaluated for every partition in grouped aggregations.

Most expectations people put on feature tables are counts in disguise (nulls, ranges, sets,
row counts, column means). Each is compiled to aggregate columns that ride along in the one
grouped pass over the shadow table, and judged with GX's own rules (the `mostly` ratio over
non-null values, vacuous success on no values, strict bounds). Uniqueness is counted by the
facts job (`facts_job.py`, the validator's own computation), all columns in one grouping;
anything else falls back to GX's per-partition evaluation (`gx_reference.py`). A differential
test keeps the two in agreement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from shadow_backfill.validate.measure.facts_job import unique_counts
from shadow_backfill.validate.measurements import Outcome, Uniqueness
from shadow_backfill.validate.suites import Expectation

Judge = Callable[[Mapping[str, Any]], tuple[bool, Any, str]]


@dataclass
class Compiled:
    expectation: Expectation
    aggs: dict[str, Column]
    judge: Judge


def _name(e: Expectation, what: str) -> str:
    return f"__e_{re.sub(r'[^A-Za-z0-9]', '_', e.suite)}_{e.index}_{what}"


def _mostly(n: int | None, unexpected: int | None, mostly: float | None) -> bool:
    """GX's rule: success when the share of expected among non-null values reaches `mostly`;
    with no values at all the expectation holds vacuously."""
    n = int(n or 0)
    u = int(unexpected or 0)
    if n == 0:
        return True
    if mostly is None:
        return u == 0
    return (n - u) / n >= float(mostly)


def _in_range(v: Any, lo: Any, hi: Any, strict_min: bool, strict_max: bool) -> bool:
    if v is None:
        return False
    if lo is not None and (v <= lo if strict_min else v < lo):
        return False
    return not (hi is not None and (v >= hi if strict_max else v > hi))


def _range_column(c: Column, lo: Any, hi: Any, strict_min: bool, strict_max: bool) -> Column:
    cond = F.lit(True)
    if lo is not None:
        cond = cond & ((c > F.lit(lo)) if strict_min else (c >= F.lit(lo)))
    if hi is not None:
        cond = cond & ((c < F.lit(hi)) if strict_max else (c <= F.lit(hi)))
    return cond


def _map_expectation(e: Expectation, unexpected_when: Column | None, *, nulls_are_domain: bool = False) -> Compiled:
    """A column-map expectation: count of the domain and of unexpected values in it."""
    col = F.col(e.kwargs["column"])
    n_name, u_name = _name(e, "n"), _name(e, "u")
    if nulls_are_domain:
        domain = F.count(F.lit(1))
        unexpected = F.sum(F.when(col.isNull(), 1).otherwise(0))
    else:
        assert unexpected_when is not None
        domain = F.count(col)
        unexpected = F.sum(F.when(col.isNotNull() & unexpected_when, 1).otherwise(0))
    mostly = e.kwargs.get("mostly")

    def judge(row: Mapping[str, Any]) -> tuple[bool, Any, str]:
        n, u = int(row[n_name] or 0), int(row[u_name] or 0)
        ok = _mostly(n, u, mostly)
        share = (u / n) if n else 0.0
        need = "none allowed" if mostly is None else f"mostly >= {mostly}"
        return ok, u, f"{u} of {n} unexpected ({share:.1%}; {need})"

    return Compiled(e, {n_name: domain, u_name: unexpected}, judge)


def _aggregate_expectation(e: Expectation, agg: Column, label: str) -> Compiled:
    name = _name(e, "v")
    lo, hi = e.kwargs.get("min_value"), e.kwargs.get("max_value")
    smin, smax = bool(e.kwargs.get("strict_min", False)), bool(e.kwargs.get("strict_max", False))

    def judge(row: Mapping[str, Any]) -> tuple[bool, Any, str]:
        v = row[name]
        v = float(v) if v is not None and not isinstance(v, (int, float)) else v
        return _in_range(v, lo, hi, smin, smax), v, f"{label} {v} (expected {lo}..{hi})"

    return Compiled(e, {name: agg}, judge)


def compile_expectation(e: Expectation) -> Compiled | None:
    """Aggregates for one expectation, or None when only GX itself can evaluate it."""
    kw = e.kwargs
    t = e.type
    if t == "expect_column_values_to_not_be_null":
        return _map_expectation(e, None, nulls_are_domain=True)
    if t == "expect_column_values_to_be_null":
        return _be_null(e)
    if t == "expect_column_values_to_be_between":
        if kw.get("min_value") is None and kw.get("max_value") is None:
            return None
        c = F.col(kw["column"])
        ok = _range_column(
            c, kw.get("min_value"), kw.get("max_value"), bool(kw.get("strict_min")), bool(kw.get("strict_max"))
        )
        return _map_expectation(e, ~ok)
    if t == "expect_column_values_to_be_in_set":
        c = F.col(kw["column"])
        return _map_expectation(e, ~c.isin([F.lit(v) for v in kw["value_set"]]))
    if t == "expect_column_values_to_not_be_in_set":
        c = F.col(kw["column"])
        return _map_expectation(e, c.isin([F.lit(v) for v in kw["value_set"]]))
    if t == "expect_table_row_count_to_be_between":
        return _aggregate_expectation(e, F.count(F.lit(1)), "row count")
    if t == "expect_table_row_count_to_equal":
        name = _name(e, "v")
        want = int(kw["value"])

        def judge(row: Mapping[str, Any]) -> tuple[bool, Any, str]:
            v = int(row[name])
            return v == want, v, f"row count {v} (expected {want})"

        return Compiled(e, {name: F.count(F.lit(1))}, judge)
    aggregates = {
        "expect_column_min_to_be_between": (F.min, "min"),
        "expect_column_max_to_be_between": (F.max, "max"),
        "expect_column_mean_to_be_between": (F.avg, "mean"),
        "expect_column_sum_to_be_between": (F.sum, "sum"),
    }
    if t in aggregates:
        fn, label = aggregates[t]
        return _aggregate_expectation(e, fn(F.col(kw["column"])), label)
    return None


def _be_null(e: Expectation) -> Compiled:
    """expect_column_values_to_be_null: the domain is every row, unexpected are non-nulls."""
    col = F.col(e.kwargs["column"])
    n_name, u_name = _name(e, "n"), _name(e, "u")
    mostly = e.kwargs.get("mostly")

    def judge(row: Mapping[str, Any]) -> tuple[bool, Any, str]:
        n, u = int(row[n_name] or 0), int(row[u_name] or 0)
        return _mostly(n, u, mostly), u, f"{u} of {n} not null"

    return Compiled(e, {n_name: F.count(F.lit(1)), u_name: F.count(col)}, judge)


def static_outcome(e: Expectation, schema: StructType) -> tuple[bool, Any, str] | None:
    """Expectations about the schema: the same answer for every partition."""
    names = schema.fieldNames()
    if e.type == "expect_column_to_exist":
        col = e.kwargs["column"]
        return col in names, col in names, f"column {col!r} {'exists' if col in names else 'is missing'}"
    if e.type == "expect_table_columns_to_match_set":
        want = set(e.kwargs["column_set"])
        have = set(names)
        exact = e.kwargs.get("exact_match", True)
        ok = have == want if exact is not False else want <= have
        return ok, sorted(have), f"columns {sorted(have)} vs {sorted(want)}"
    if e.type == "expect_table_column_count_to_equal":
        return len(names) == int(e.kwargs["value"]), len(names), f"{len(names)} columns"
    return None


def judge_unique(e: Expectation, counted: Uniqueness) -> tuple[bool, Any, str]:
    n, u = counted.values, counted.not_unique
    return _mostly(n, u, e.kwargs.get("mostly")), u, f"{u} of {n} values not unique"


def judge_compiled(c: Compiled, row: Mapping[str, Any] | None) -> Outcome:
    """Judge from a partition's aggregate row; None means the partition has no rows at all."""
    if row is None:  # no group for this partition: counts are zero, aggregates undefined
        row = {n: 0 if n.endswith(("_n", "_u")) or "row_count" in c.expectation.type else None for n in c.aggs}
    return outcome(c.expectation, c.judge(row))


def evaluate_fast(
    df: DataFrame, partition_text: Column, expectations: Sequence[Expectation], texts: Sequence[str]
) -> dict[str, list[Outcome]]:
    """Every expectation for every partition in grouped passes: one aggregation for the
    compiled expectations, one facts job for every uniqueness expectation, GX per partition
    for the rest."""
    from shadow_backfill.validate.gx_reference import evaluate_with_gx

    compiled, unique, gx_only = split_supported(expectations)
    out: dict[str, list[Outcome]] = {t: [] for t in texts}
    for e in expectations:
        static = static_outcome(e, df.schema)
        if static is not None:
            for t in texts:
                out[t].append(outcome(e, static))
    if compiled:
        aggs = [col.alias(name) for c in compiled for name, col in c.aggs.items()]
        rows = {r["k"]: r.asDict() for r in df.groupBy(partition_text.alias("k")).agg(*aggs).collect()}
        for t in texts:
            out[t] += [judge_compiled(c, rows.get(t)) for c in compiled]
    if unique:
        counts = unique_counts(df, partition_text, [e.kwargs["column"] for e in unique], texts)
        for t in texts:
            out[t] += [outcome(e, judge_unique(e, counts[t][e.kwargs["column"]])) for e in unique]
    if gx_only:
        for t in texts:
            out[t] += evaluate_with_gx(df.filter(partition_text == F.lit(t)), gx_only)
    return out


def outcome(e: Expectation, verdict: tuple[bool, Any, str]) -> Outcome:
    ok, observed, detail = verdict
    return Outcome(e.id, bool(ok), observed, detail, e.severity)


def split_supported(expectations: Sequence[Expectation]) -> tuple[list[Compiled], list[Expectation], list[Expectation]]:
    """(compiled aggregate expectations, uniqueness expectations, GX-only expectations)."""
    compiled: list[Compiled] = []
    unique: list[Expectation] = []
    others: list[Expectation] = []
    for e in expectations:
        if e.type == "expect_column_values_to_be_unique":
            unique.append(e)
            continue
        if e.type in (
            "expect_column_to_exist",
            "expect_table_columns_to_match_set",
            "expect_table_column_count_to_equal",
        ):
            continue  # static, evaluated from the schema
        c = compile_expectation(e)
        if c is None:
            others.append(e)
        else:
            compiled.append(c)
    return compiled, unique, others
