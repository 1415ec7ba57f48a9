"""Validation: the grouped fast path against the naive loop, measured in one run.

- fast: `Validator.run` over all partitions (grouped passes, GX-equivalent aggregates);
- naive: for each partition, a GX validation of the suite (GX's Spark engine) plus the drift
  queries for that partition alone, which is what a hand-written loop does;
- fair limit: one grouped pass over shadow and live reading every compared column (rows,
  nulls, min, max, sum per column, per partition and side): what any validation that looks at
  every column must at least cost;
- cheap scan: one grouped scan (row count and a mean per partition and side), the first
  reference, kept to compare with earlier results.

Data: the demo transforms (v1 live, v2 shadow) over N daily partitions, `--scale` x 200
entities per day, seeded by the hash-based generator (identical every run).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import check, finish, keys_for, scenario_parser, seed_live, workspace

SUITE = {
    "name": "bench",
    "expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "entity_id"}},
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "country"}},
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "score", "mostly": 0.95}},
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "country", "value_set": ["US", "DE", "FR", "IN", "BR"]},
        },
        {"type": "expect_column_values_to_be_between", "kwargs": {"column": "spend", "min_value": 0, "max_value": 200}},
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "sessions", "min_value": 0, "max_value": 100},
        },
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "score", "min_value": 0, "max_value": 1, "mostly": 0.99},
        },
        {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "entity_id"}},
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1, "max_value": 10_000_000}},
        {"type": "expect_column_mean_to_be_between", "kwargs": {"column": "spend", "min_value": 10, "max_value": 90}},
        {"type": "expect_column_max_to_be_between", "kwargs": {"column": "sessions", "min_value": 1, "max_value": 25}},
        {"type": "expect_column_min_to_be_between", "kwargs": {"column": "spend", "min_value": 0, "max_value": 5}},
    ],
}


def build(workdir: Path, partitions: int, scale: int) -> Any:
    (workdir / "suite.json").write_text(json.dumps(SUITE))
    bf = workspace(workdir, scale=scale, transform="features_v2", extra={"expectations": ["suite.json"]})
    keys = keys_for(partitions)
    seed_live(bf, keys)
    bf.run(partitions=keys, max_parallel=2)
    return bf, keys


def run_fast(bf: Any, keys: list[str]) -> tuple[float, dict[str, str], dict[str, bool]]:
    """(seconds, verdict per partition, whether every expectation passed per partition)."""
    t = time.perf_counter()
    result = bf.validate(partitions=keys)
    seconds = time.perf_counter() - t
    suites_pass = {
        v.partition: all(c.status == "pass" for c in v.checks if c.threshold == "expectation") for v in result.verdicts
    }
    return seconds, {v.partition: v.verdict for v in result.verdicts}, suites_pass


def run_naive(bf: Any, keys: list[str]) -> tuple[float, dict[str, bool]]:
    from shadow_backfill.validate.distributions import distribution
    from shadow_backfill.validate.gx_reference import evaluate_with_gx
    from shadow_backfill.validate.measure.fast import FastMeasurer
    from shadow_backfill.validate.suites import load_suites

    expectations = [e for s in load_suites(bf.config) for e in s.expectations]
    fmt, scheme = bf.table_format, bf.scheme
    shadow_v = fmt.current_version(bf.shadow_table)
    live_v = fmt.current_version(bf.live_table)
    passed: dict[str, bool] = {}
    t = time.perf_counter()
    for k in keys:
        shadow = fmt.read_partitions(bf.shadow_table, [k], shadow_v)
        live = fmt.read_partitions(bf.live_table, [k], live_v)
        outcomes = evaluate_with_gx(shadow, expectations)
        text = scheme.column_text(k)
        profiles = FastMeasurer(shadow, live, partition="ds", keys=bf.config.keys, max_categories=50).run([text])
        [distribution(m) for m in profiles[text].columns.values()]  # the judge's statistics, as the fast path's
        passed[k] = all(o.success for o in outcomes)
    return time.perf_counter() - t, passed


def _both_sides(bf: Any, keys: list[str]) -> Any:
    """Shadow and live over `keys` as one frame, each row tagged with its side."""
    from pyspark.sql import functions as F

    fmt = bf.table_format
    shadow = fmt.read_partitions(bf.shadow_table, keys).withColumn("__side", F.lit("shadow"))
    live = fmt.read_partitions(bf.live_table, keys).withColumn("__side", F.lit("live"))
    return shadow.unionByName(live)


def fair_limit(bf: Any, keys: list[str]) -> float:
    """One grouped pass over both sides reading every compared column: the least a validation
    that looks at every column of every partition could cost."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType

    both, part = _both_sides(bf, keys), bf.scheme.column
    aggs = [F.count(F.lit(1)).alias("rows")]
    for f in both.schema.fields:
        if f.name in (part, "__side"):
            continue
        c = F.col(f.name)
        aggs += [F.count(c), F.sum(F.when(c.isNull(), 1).otherwise(0)), F.min(c), F.max(c)]
        if isinstance(f.dataType, NumericType):
            aggs.append(F.sum(c))
    t = time.perf_counter()
    both.groupBy(part, "__side").agg(*aggs).collect()
    return time.perf_counter() - t


def cheap_scan(bf: Any, keys: list[str]) -> float:
    """Rows and one mean per partition and side: the bench's first, cheaper reference."""
    from pyspark.sql import functions as F

    both = _both_sides(bf, keys)
    t = time.perf_counter()
    both.groupBy(bf.scheme.column, "__side").agg(F.count(F.lit(1)), F.avg("spend")).collect()
    return time.perf_counter() - t


def main(argv: list[str]) -> int:
    ap = scenario_parser("validate", __doc__, partitions=90, scale=1, scale_help="x 200 entities per partition")
    ap.add_argument(
        "--naive-partitions",
        type=int,
        default=None,
        help="time the naive loop on this many partitions and extrapolate (default: all)",
    )
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        bf, keys = build(Path(tmp), args.partitions, args.scale)
        run_fast(bf, keys[:5])  # warm-up: JVM code paths and GX import, for both sides alike
        run_naive(bf, keys[:1])
        fast_s, verdicts, suites_pass = run_fast(bf, keys)
        limit_s = cheap_scan(bf, keys)
        fair_s = fair_limit(bf, keys)
        naive_keys = keys[: args.naive_partitions] if args.naive_partitions else keys
        naive_measured, gx_pass = run_naive(bf, naive_keys)
        naive_s = naive_measured * len(keys) / len(naive_keys)
        bf.spark.stop()

    agree = all(suites_pass[k] == gx_pass[k] for k in gx_pass)
    result = {
        "scenario": "validate",
        "partitions": args.partitions,
        "rows_per_partition": 200 * args.scale,
        "expectations": len(SUITE["expectations"]),
        "fast_s": round(fast_s, 2),
        "naive_s": round(naive_s, 2),
        "naive_measured_partitions": len(naive_keys),
        "limit_s": round(limit_s, 2),
        "fair_limit_s": round(fair_s, 2),
        "speedup_vs_naive": round(naive_s / fast_s, 1),
        "ratio_to_limit": round(fast_s / limit_s, 1),
        "ratio_to_fair_limit": round(fast_s / fair_s, 1),
        "targets": {"speedup_vs_naive": ">= 10", "ratio_to_fair_limit": "<= 2"},
        "verdicts": {v: sum(1 for x in verdicts.values() if x == v) for v in ("pass", "warn", "fail")},
        "naive_suite_agrees": agree,
    }
    checks = [
        check("validate: naive loop / tool", result["speedup_vs_naive"], ">=", 10),
        check("validate: tool / fair limit (every column)", result["ratio_to_fair_limit"], "<=", 2),
    ]
    lines = [
        f"validate {args.partitions} partitions x {200 * args.scale} rows, "
        f"{result['expectations']} expectations + drift",
        f"  fast path        {fast_s:8.1f} s",
        f"  naive loop       {naive_s:8.1f} s   ({len(naive_keys)} partitions measured)",
        f"  fair limit       {fair_s:8.1f} s   (one grouped pass, every column)",
        f"  cheap scan       {limit_s:8.1f} s   (rows and one mean)",
        f"  speedup vs naive {result['speedup_vs_naive']:8.1f} x  (target >= 10)",
        f"  fast / fair      {result['ratio_to_fair_limit']:8.1f} x  (target <= 2)",
        f"  fast / cheap     {result['ratio_to_limit']:8.1f} x",
    ]
    return finish("validate", result, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
