"""How often the gate cries wolf on a small aggregated feature table: 365 days x 15 routes,
a logic change meant to move `late_share` slightly every day and a lot on 5 days
(shadow_backfill/demo/routes.py). One recompute, then three validations of the same shadow:

- `legacy`: every distribution test judged whatever the row count (the gate before sample
  sizes counted: min_rows_for_distribution = min_rows_for_distance = 1);
- `defaults`: today's defaults, no contract;
- `contract`: expected_changes late_share mean_change {warn: 0.05, fail: 0.10}, everything
  else must stay equal.

Target: the contract fails exactly the 5 big days (no false alarm, no miss).
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import check, finish, scenario_parser

CONTRACT = {"expected_changes": {"late_share": {"mean_change": {"warn": 0.05, "fail": 0.10}}}}
LEGACY = {"min_rows_for_distribution": 1, "min_rows_for_distance": 1}


def _backfill(workdir: Path, validation: dict[str, Any]) -> Any:
    from shadow_backfill import Backfill
    from shadow_backfill.config import load_config

    cfg = {
        "live_table": "local.bench.routes",
        "format": "iceberg",
        "partition": {"column": "ds"},
        "keys": ["route_id"],
        "transform": {"function": "shadow_backfill.demo.routes:routes_v2"},
        "spark": {"master": "local[*]", "warehouse": "warehouse", "conf": {"spark.sql.shuffle.partitions": "8"}},
        "validation": validation,
    }
    path = workdir / f"bench-{len(list(workdir.glob('bench-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return Backfill(load_config(path))


def main(argv: list[str]) -> int:
    ap = scenario_parser("gate", __doc__, partitions=365, scale=1, scale_help="unused")
    args = ap.parse_args(argv)
    from shadow_backfill.demo import routes

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        bf = _backfill(workdir, {})
        end = (routes.START + dt.timedelta(days=args.partitions - 1)).isoformat()
        keys = bf.scheme.expand(routes.START.isoformat(), end)
        df = routes.routes_v1(bf.spark, [bf.scheme.value(k) for k in keys])
        bf.table_format.create(bf.live_table, df.schema, ["ds"])
        bf.table_format.overwrite_partitions(bf.live_table, df, keys)
        assert bf.run(keys[0], keys[-1]).ok
        big = {d.isoformat() for d in routes.BIG_DAYS if d.isoformat() <= keys[-1]}
        runs: dict[str, Any] = {}
        for name, validation in (("legacy", LEGACY), ("defaults", {}), ("contract", CONTRACT)):
            started = time.perf_counter()
            result = _backfill(workdir, validation).validate(keys[0], keys[-1])
            failed = {v.partition for v in result.verdicts if v.verdict == "fail"}
            runs[name] = {
                **result.counts,
                "seconds": round(time.perf_counter() - started, 2),
                "false_alarms": len(failed - big),
                "missed": len(big - failed),
            }
    c = runs["contract"]
    checks = [
        check("gate contract: false alarms", c["false_alarms"], "<=", 0),
        check("gate contract: big days missed", c["missed"], "<=", 0),
    ]
    lines = [f"gate ({args.partitions} days x {routes.ROUTES} rows, {len(big)} big days)"]
    lines += [
        f"  {n:9s} {r['pass']:4d} pass {r['warn']:4d} warn {r['fail']:4d} fail  "
        f"false alarms {r['false_alarms']:4d}  missed {r['missed']}  ({r['seconds']} s)"
        for n, r in runs.items()
    ]
    return finish(
        "gate",
        {"partitions": args.partitions, "rows_per_partition": routes.ROUTES, "runs": runs},
        checks,
        lines,
        args.out,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
