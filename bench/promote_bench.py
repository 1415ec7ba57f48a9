"""Promotion: `promote` (checks, audit, one commit) against one plain partition overwrite of
the same partitions into an identical copy of live, in one run."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.common import check, finish, keys_for, scenario_parser, seed_live, workspace


def main(argv: list[str]) -> int:
    args = scenario_parser("promote", __doc__, partitions=180, scale=1).parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        # v1 again as the "new" logic: every partition passes validation.
        bf = workspace(Path(tmp), scale=args.scale, transform="features_v1")
        keys = keys_for(args.partitions)
        seed_live(bf, keys)
        seed_live(bf, keys, table="local.bench.features_plain")
        bf.run(partitions=keys)
        bf.validate(partitions=keys)
        fmt = bf.table_format
        shadow_version = fmt.current_version(bf.shadow_table)
        fmt.read_partitions(bf.shadow_table, keys[:1], shadow_version).count()  # warm-up

        t = time.perf_counter()
        _, rec = bf.promote()
        tool_s = time.perf_counter() - t
        assert rec is not None and len(rec.partitions) == len(keys)

        t = time.perf_counter()
        fmt.overwrite_partitions(
            "local.bench.features_plain", fmt.read_partitions(bf.shadow_table, keys, shadow_version), keys
        )
        plain_s = time.perf_counter() - t
        bf.spark.stop()

    res = {
        "scenario": "promote",
        "partitions": args.partitions,
        "rows_per_partition": 200 * args.scale,
        "tool_s": round(tool_s, 2),
        "plain_overwrite_s": round(plain_s, 2),
        "ratio_to_plain": round(tool_s / plain_s, 2),
        "targets": {"ratio_to_plain": "<= 1.2"},
    }
    checks = [check("promote: promote / plain overwrite", res["ratio_to_plain"], "<=", 1.2)]
    lines = [
        f"promote {args.partitions} partitions x {200 * args.scale} rows",
        f"  promote          {tool_s:8.1f} s",
        f"  plain overwrite  {plain_s:8.1f} s   promote/plain {res['ratio_to_plain']}x (target <= 1.2)",
    ]
    return finish("promote", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
