"""Recompute: the runner against the hand-written loop and the bulk limit, in one run.

- tool: `Backfill.run` over N daily partitions (auto chunks, max_parallel 2);
- loop: what people write by hand: for each partition, sequentially, call the transform, write
  it with a partition overwrite and insert a progress-table row (SQLite);
- bulk: one overwrite of the whole range in one job (the limit; not resumable, no checks).
Every variant writes the same rows into its own shadow table.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench.common import check, finish, keys_for, scenario_parser, seed_live, workspace


def main(argv: list[str]) -> int:
    args = scenario_parser("recompute", __doc__, partitions=180, scale=1).parse_args(argv)
    from shadow_backfill.demo import features

    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        bf = workspace(Path(tmp), scale=args.scale, transform="features_v2")
        keys = keys_for(args.partitions)
        seed_live(bf, keys)
        fmt, spark = bf.table_format, bf.spark
        values = [bf.scheme.value(k) for k in keys]
        schema = features.features_v2(spark, values[:1]).schema
        for name in ("loop", "bulk"):
            fmt.create(f"local.bench.features_{name}", schema, ["ds"])
        bf.run(partitions=keys[:2])  # warm-up: JVM code paths for all variants alike

        t = time.perf_counter()
        result = bf.run(partitions=keys, force=True)
        tool_s = time.perf_counter() - t
        assert result.ok

        progress = sqlite3.connect(Path(tmp) / "progress.db")
        progress.execute("CREATE TABLE progress (partition TEXT PRIMARY KEY, status TEXT, at REAL)")
        t = time.perf_counter()
        for k, v in zip(keys, values, strict=True):
            fmt.overwrite_partitions("local.bench.features_loop", features.features_v2(spark, [v]), [k])
            progress.execute("INSERT OR REPLACE INTO progress VALUES (?, 'done', ?)", (k, time.time()))
            progress.commit()
        loop_s = time.perf_counter() - t

        t = time.perf_counter()
        fmt.overwrite_partitions("local.bench.features_bulk", features.features_v2(spark, values), keys)
        bulk_s = time.perf_counter() - t
        same = fmt.read("local.bench.features_loop").exceptAll(bf.read_shadow()).count() == 0
        spark.stop()

    res = {
        "scenario": "recompute",
        "partitions": args.partitions,
        "rows_per_partition": 200 * args.scale,
        "chunks": len(result.chunks),
        "tool_s": round(tool_s, 2),
        "loop_s": round(loop_s, 2),
        "bulk_s": round(bulk_s, 2),
        "speedup_vs_loop": round(loop_s / tool_s, 2),
        "ratio_to_bulk": round(tool_s / bulk_s, 2),
        "same_content_as_loop": same,
        "targets": {"speedup_vs_loop": ">= 4", "ratio_to_bulk": "<= 1.5"},
    }
    checks = [
        check("recompute: per-partition loop / tool", res["speedup_vs_loop"], ">=", 4),
        check("recompute: tool / one bulk overwrite", res["ratio_to_bulk"], "<=", 1.5),
    ]
    lines = [
        f"recompute {args.partitions} partitions x {200 * args.scale} rows ({len(result.chunks)} chunks)",
        f"  tool             {tool_s:8.1f} s",
        f"  per-partition    {loop_s:8.1f} s   speedup {res['speedup_vs_loop']}x (target >= 4)",
        f"  bulk overwrite   {bulk_s:8.1f} s   tool/bulk {res['ratio_to_bulk']}x (target <= 1.5)",
    ]
    return finish("recompute", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
