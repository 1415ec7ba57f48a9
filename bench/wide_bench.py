"""Wide tables: one validation's measuring jobs (`FastMeasurer`, keyed) on a table whose every
numeric column changed on every row, with Spark's default `spark.sql.codegen.hugeMethodLimit`
(65,535) and with the tool's (8,000, `session.RUNTIME_CONF`), alternately in one process, best
of two each.

With many numeric columns a stage's generated method outgrows the 8,000 bytes HotSpot compiles
(the key grouping's histogram reader: 6,288 bytes with four columns, 21,852 with eight), and
runs in the interpreter; at the tool's limit Spark runs that stage without whole-stage code
generation instead. The run also reads the largest generated method of the facts job's stages.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from typing import Any

from bench.common import check, finish, hashed_table, scenario_parser
from bench.jobs import largest_generated_method

START = dt.date(2024, 1, 1)
LIMITS = ("65535", "8000")  # Spark's default, the tool's


def _tables(spark: Any, columns: int, partitions: int, rows: int) -> tuple[Any, Any]:
    """Live, and shadow with every column changed on every row."""
    from pyspark.sql import functions as F

    live = hashed_table(spark, START, partitions, rows, columns)
    shadow = live.select("ds", "entity_id", *[(F.col(f"c{j}") * 1.01).alias(f"c{j}") for j in range(columns)])
    return shadow.localCheckpoint(), live.localCheckpoint()


def _largest_facts_method(spark: Any, measurer: Any, texts: list[str]) -> int:
    """The largest generated method (bytes of bytecode) of the facts job's stages, its plan
    built as `FastMeasurer.run` builds it (as `tests/e2e/test_speed_plans.py` does) and read
    without adaptive execution, whose plan before it runs shows no stages. The facts job is
    the one that outgrows the limit; the profile job stays under it (7,534 bytes at eight
    columns, stop 76) or, past Spark's 100 fields, has no fused stage at all."""
    from dataclasses import replace

    from shadow_backfill.validate.measure.facts_job import facts_frame
    from shadow_backfill.validate.measure.facts_spec import edges_frame, fact_list
    from shadow_backfill.validate.measure.plan import PARTITION_COLUMN
    from shadow_backfill.validate.measure.profile_job import run_profile
    from shadow_backfill.validate.measurements import PartitionProfile

    profiles = {t: PartitionProfile(t) for t in texts}
    keys = measurer.facts.keys
    profiled = run_profile(measurer.union, measurer.plan, {}, profiles, {}, keys)
    agreed = {t: profiled.prints.agreed(t) for t in texts}  # every column changed: nothing mirrored
    spec = replace(measurer.facts, compared=measurer.grouped, agreed=agreed, live_counts=profiled.live_counts)
    thresholds = edges_frame(spark, spec, profiled.edges, measurer.union.schema[PARTITION_COLUMN].dataType)
    live_rows = sum(p.live_rows for p in profiles.values())
    df = facts_frame(measurer.union, spec, fact_list(spec, True), thresholds, live_rows)
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        return largest_generated_method(df)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def run(columns: int, partitions: int, rows: int) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from shadow_backfill.validate.measure.fast import FastMeasurer

    spark = (
        SparkSession.builder.master("local[*]")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    shadow, live = _tables(spark, columns, partitions, rows)
    texts = [(START + dt.timedelta(days=d)).isoformat() for d in range(partitions)]
    measurer = FastMeasurer(shadow, live, partition="ds", keys=["entity_id"], max_categories=20, sample_rows=10)
    measurer.run(texts)  # warm-up
    seconds: dict[str, list[float]] = {limit: [] for limit in LIMITS}
    for _ in range(2):
        for limit in LIMITS:
            spark.conf.set("spark.sql.codegen.hugeMethodLimit", limit)
            t = time.perf_counter()
            measurer.run(texts)
            seconds[limit].append(time.perf_counter() - t)
    method = _largest_facts_method(spark, measurer, texts)
    spark.stop()
    best = {limit: min(s) for limit, s in seconds.items()}
    return {
        "columns": columns,
        "rows_per_side": partitions * rows,
        "default_s": round(best["65535"], 2),
        "capped_s": round(best["8000"], 2),
        "capped_to_default": round(best["8000"] / best["65535"], 2),
        "largest_facts_method_bytes": method,
    }


def main(argv: list[str]) -> int:
    ap = scenario_parser("wide", __doc__, partitions=10, scale=100_000, scale_help="rows per partition")
    ap.add_argument("--columns", default="4,8,16", help="numeric columns of each run")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run(args.child, args.partitions, args.scale)))
        return 0
    import subprocess

    runs = []
    for columns in [int(c) for c in args.columns.split(",")]:
        cmd = [sys.executable, "-m", "bench.wide_bench", "--child", str(columns)]
        cmd += ["--partitions", str(args.partitions), "--scale", str(args.scale)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    # A run missing from `--columns` fails its check (inf) rather than passing it empty.
    widest = max((r["capped_to_default"] for r in runs if r["columns"] >= 8), default=float("inf"))
    narrow = max((r["capped_to_default"] for r in runs if r["columns"] < 8), default=float("inf"))
    checks = [
        check("wide tables: capped methods / Spark's default", widest, "<=", 0.9),
        check("narrow tables: capped methods / Spark's default", narrow, "<=", 1.1),
    ]
    lines = [f"wide: {args.partitions} partitions x {args.scale} keys per side, every numeric column changed"]
    for r in runs:
        lines.append(
            f"  {r['columns']:>3} columns  default {r['default_s']:6.1f} s  capped at 8,000 {r['capped_s']:6.1f} s  "
            f"x{r['capped_to_default']}  largest facts-job method {r['largest_facts_method_bytes']} bytes"
        )
    res = {"scenario": "wide", "partitions": args.partitions, "rows_per_partition": args.scale, "runs": runs}
    return finish("wide", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
