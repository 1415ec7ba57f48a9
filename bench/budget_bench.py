"""The percentile grids' budget fallback, at three years of daily partitions x 40 numeric columns: one
validation's measuring jobs (`FastMeasurer`, keyed) over 1,095 partitions, at two row counts
10x apart, each in a fresh process on `local-cluster[2,1,1024]` so that what is measured is
only the driver (the Python process and the driver JVM, peak RSS).

43,800 partition-columns are past `live_grid.BUDGET` (one percentile grid per partition and
column would hold about 2 GB in Python), so live's deciles come from nine percentiles (of every
live row at these sizes: `decile_every`) and its histograms from the rows: the run must say it
read no grid.
What reaches the driver is a few rows per partition and column whatever the rows, so the peaks
stay flat (within 20%) at 10x the rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import sys
import time
from typing import Any

from bench.common import finish, hashed_table, peaks_at_1x_and_10x, scenario_parser
from bench.memory_bench import _driver_jvm_peak_mb

COLUMNS = 40
START = dt.date(2021, 1, 1)


def _tables(spark: Any, partitions: int, rows: int) -> tuple[Any, Any]:
    """Live, and shadow with the first column changed on one key in seven (so the key grouping
    carries it)."""
    from pyspark.sql import functions as F

    base = hashed_table(spark, START, partitions, rows, COLUMNS)
    shadow = base.withColumn("c0", F.when(F.col("entity_id") % 7 == 0, F.col("c0") + 1.0).otherwise(F.col("c0")))
    return shadow, base


def child(partitions: int, rows: int) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from shadow_backfill.validate.measure import live_grid
    from shadow_backfill.validate.measure.fast import FastMeasurer
    from shadow_backfill.validate.measure.profile_job import decile_every

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    shadow, live = _tables(spark, partitions, rows)
    texts = [(START + dt.timedelta(days=d)).isoformat() for d in range(partitions)]
    measurer = FastMeasurer(
        shadow,
        live,
        partition="ds",
        keys=["entity_id"],
        max_categories=20,
        decile_every=decile_every(dict.fromkeys(texts, rows)),
    )
    t = time.perf_counter()
    profiles = measurer.run(texts)
    seconds = time.perf_counter() - t
    changed = sum(1 for p in profiles.values() if p.keys is not None and p.keys.by_column["c0"].changed > 0)
    jvm = _driver_jvm_peak_mb()
    spark.stop()
    return {
        "rows_per_side": partitions * rows,
        "partition_columns": partitions * COLUMNS,
        "fits_budget": live_grid.fits(partitions, COLUMNS),
        "live_counted": measurer.live_counted,
        "grouped": measurer.grouped,
        "partitions_with_changes": changed,
        "python_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "jvm_peak_mb": round(jvm, 1),
        "s": round(seconds, 1),
    }


def main(argv: list[str]) -> int:
    ap = scenario_parser("budget", __doc__, partitions=1095, scale=10, scale_help="rows per partition, small run")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.partitions, args.scale)))
        return 0
    runs, py_ratio, jvm_ratio = peaks_at_1x_and_10x("bench.budget_bench", args.partitions, args.scale)
    fell_back = not any(r["live_counted"] or r["fits_budget"] for r in runs)
    res = {"scenario": "budget", "partitions": args.partitions, "columns": COLUMNS, "runs": runs}
    checks = [
        {"name": "past the grids' budget: nine percentiles, row bins", "value": int(fell_back), "target": ">= 1"},
        {"name": "driver Python peak RSS, 10x rows / 1x", "value": py_ratio, "target": "<= 1.2"},
        {"name": "driver JVM peak RSS, 10x rows / 1x", "value": jvm_ratio, "target": "<= 1.2"},
        {
            "name": "every partition's change found",
            "value": int(all(r["partitions_with_changes"] == args.partitions for r in runs)),
            "target": ">= 1",
        },
    ]
    for c in checks:
        bound = float(str(c["target"]).split()[-1])
        c["ok"] = c["value"] >= bound if str(c["target"]).startswith(">=") else c["value"] <= bound
    lines = [f"budget: {args.partitions} partitions x {COLUMNS} numeric columns, keyed, local-cluster[2,1,1024]"]
    for r in runs:
        lines.append(
            f"  {r['rows_per_side']:>9} rows/side  python {r['python_peak_mb']:7.1f} MB  "
            f"driver JVM {r['jvm_peak_mb']:7.1f} MB  {r['s']:6.1f} s  grids {r['live_counted']}"
        )
    lines.append(f"  10x rows: python x{py_ratio}, driver JVM x{jvm_ratio} (target <= 1.2: flat)")
    return finish("budget", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
