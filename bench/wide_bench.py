"""Wide tables: one validation's measuring jobs (`FastMeasurer`, keyed) on a table whose every
numeric column changed on every row, with Spark's default `spark.sql.codegen.hugeMethodLimit`
(65,535) and with the tool's (8,000, `session.RUNTIME_CONF`), alternately in one process, best
of two each.

With many numeric columns a stage's generated method outgrows the 8,000 bytes HotSpot compiles
(the key grouping's histogram reader: 6,288 bytes with four columns, 21,835 with eight), and
runs in the interpreter; at the tool's limit Spark runs that stage without whole-stage code
generation instead. The run also reads the largest generated method of each job's stages.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from typing import Any

from bench.common import finish, scenario_parser

START = dt.date(2024, 1, 1)
LIMITS = ("65535", "8000")  # Spark's default, the tool's


def _tables(spark: Any, columns: int, partitions: int, rows: int) -> tuple[Any, Any]:
    """Live, and shadow with every column changed on every row: `rows` keys per partition, each
    column a seeded hash of the key."""
    from pyspark.sql import functions as F

    live = spark.range(partitions * rows).select(
        F.date_add(F.lit(START.isoformat()).cast("date"), (F.col("id") % partitions).cast("int")).alias("ds"),
        F.col("id").alias("entity_id"),
        *[((F.abs(F.hash("id", F.lit(j))) % 10_000) / 100.0).alias(f"c{j}") for j in range(columns)],
    )
    shadow = live.select("ds", "entity_id", *[(F.col(f"c{j}") * 1.01).alias(f"c{j}") for j in range(columns)])
    return shadow.localCheckpoint(), live.localCheckpoint()


def _largest_methods(spark: Any, run: Any) -> dict[str, int]:
    """The largest generated method (bytes of bytecode) of the stages of each job `run` collects,
    by the module that collects it; read off the plans without adaptive execution (whose plan
    before it runs shows no stages)."""
    from shadow_backfill.validate.measure import facts_job, profile_job

    frames: list[tuple[str, Any]] = []
    saved = {m: m.as_text for m in (facts_job, profile_job)}
    for module, real in saved.items():
        name = module.__name__.rsplit(".", 1)[-1]
        module.as_text = lambda df, _real=real, _name=name: frames.append((_name, _real(df))) or frames[-1][1]
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        run()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
        for module, real in saved.items():
            module.as_text = real
    debug = spark._jvm.org.apache.spark.sql.execution.debug.package
    out: dict[str, int] = {}
    for name, df in frames:
        stages = debug.codegenStringSeq(df._jdf.queryExecution().executedPlan())
        largest = max((stages.apply(i)._3().maxMethodCodeSize() for i in range(stages.size())), default=0)
        out[name] = max(out.get(name, 0), largest)
    return out


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
    methods = _largest_methods(spark, lambda: measurer.run(texts))
    spark.stop()
    best = {limit: min(s) for limit, s in seconds.items()}
    return {
        "columns": columns,
        "rows_per_side": partitions * rows,
        "default_s": round(best["65535"], 2),
        "capped_s": round(best["8000"], 2),
        "capped_to_default": round(best["8000"] / best["65535"], 2),
        "largest_method_bytes": methods,
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
    wide = [r for r in runs if r["columns"] >= 8]
    checks = [
        {
            "name": "wide tables: capped methods / Spark's default",
            "value": max((r["capped_to_default"] for r in wide), default=0.0),
            "target": "<= 0.9",
        },
        {
            "name": "narrow tables: capped methods / Spark's default",
            "value": max((r["capped_to_default"] for r in runs if r["columns"] < 8), default=0.0),
            "target": "<= 1.1",
        },
    ]
    for c in checks:
        c["ok"] = 0 < c["value"] <= float(str(c["target"]).split()[-1])
    lines = [f"wide: {args.partitions} partitions x {args.scale} keys per side, every numeric column changed"]
    for r in runs:
        lines.append(
            f"  {r['columns']:>3} columns  default {r['default_s']:6.1f} s  capped at 8,000 {r['capped_s']:6.1f} s  "
            f"x{r['capped_to_default']}  largest methods {r['largest_method_bytes']}"
        )
    res = {"scenario": "wide", "partitions": args.partitions, "rows_per_partition": args.scale, "runs": runs}
    return finish("wide", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
