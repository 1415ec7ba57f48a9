"""Driver memory: the whole pipeline (recompute -> validate -> promote) at two data sizes, 10x
apart, on `local-cluster[2,1,1024]` so the executors are JVMs of their own and what is measured
is only the driver: the Python process (peak RSS) and the driver JVM (peak RSS, VmHWM).

Flat means the peaks at 10x the data stay within 20% of those at 1x: nothing row-level is
collected to the driver, only per-partition aggregates. Each size runs in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from bench.common import finish, keys_for, peaks_at_1x_and_10x, scenario_parser, seed_live, workspace


def _driver_jvm_peak_mb() -> float:
    """VmHWM of the JVM this Python process started (the Spark driver; executors are its children)."""
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            ppid = stat.rsplit(")", 1)[1].split()[1]
            if ppid != me or b"java" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            continue
    return float("nan")


def child(partitions: int, scale: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        bf = workspace(
            Path(tmp),
            scale=scale,
            transform="features_v1",  # v1 again as the new logic: every partition passes
            extra={
                "spark": {
                    "master": "local-cluster[2,1,1024]",
                    "warehouse": "warehouse",
                    "conf": {"spark.sql.shuffle.partitions": "8"},
                }
            },
        )
        keys = keys_for(partitions)
        t = time.perf_counter()
        seed_live(bf, keys)
        assert bf.run(partitions=keys).ok
        assert bf.validate(partitions=keys).ok
        _, rec = bf.promote()
        assert rec is not None and len(rec.partitions) == partitions
        seconds = time.perf_counter() - t
        jvm = _driver_jvm_peak_mb()
        bf.spark.stop()
    py = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "rows": partitions * 200 * scale,
        "python_peak_mb": round(py, 1),
        "jvm_peak_mb": round(jvm, 1),
        "s": round(seconds, 1),
    }


def main(argv: list[str]) -> int:
    ap = scenario_parser(
        "memory",
        __doc__,
        partitions=90,
        scale=5,
        scale_help="x 200 rows per partition for the small run; the large is 10x",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.partitions, args.scale)))
        return 0

    runs, py_ratio, jvm_ratio = peaks_at_1x_and_10x("bench.memory_bench", args.partitions, args.scale)
    res = {
        "scenario": "memory",
        "partitions": args.partitions,
        "runs": runs,
        "python_peak_ratio": py_ratio,
        "jvm_peak_ratio": jvm_ratio,
        "checks": [
            {
                "name": "driver Python peak RSS, 10x data / 1x",
                "value": py_ratio,
                "target": "<= 1.2",
                "ok": py_ratio <= 1.2,
            },
            {
                "name": "driver JVM peak RSS, 10x data / 1x",
                "value": jvm_ratio,
                "target": "<= 1.2",
                "ok": jvm_ratio <= 1.2,
            },
        ],
    }
    lines = [f"memory: recompute -> validate -> promote, {args.partitions} partitions, local-cluster[2,1,1024]"]
    for r in runs:
        py, jvm = r["python_peak_mb"], r["jvm_peak_mb"]
        lines.append(f"  {r['rows']:>9} rows  python {py:7.1f} MB  driver JVM {jvm:7.1f} MB  {r['s']:6.1f} s")
    lines.append(f"  10x data: python x{py_ratio}, driver JVM x{jvm_ratio} (target <= 1.2: flat)")
    return finish("memory", res, res.pop("checks"), lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
