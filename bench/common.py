"""Shared bench helpers: a seeded demo-shaped workspace and result output."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
RESULTS = Path(__file__).parent / "results"


def keys_for(partitions: int) -> list[str]:
    start = dt.date(2024, 1, 1)
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(partitions)]


def workspace(
    workdir: Path, *, scale: int, transform: str, extra: dict[str, Any] | None = None, name: str = "bench"
) -> Any:
    """A Backfill over a seeded live table built by the demo's v1 transform (200 x scale rows/day);
    `name` names its config file, so several configs can share one warehouse."""
    from shadow_backfill import Backfill
    from shadow_backfill.config import load_config
    from shadow_backfill.demo import features

    features.ENTITIES = 200 * scale
    cfg = {
        "live_table": "local.bench.features",
        "format": "iceberg",
        "partition": {"column": "ds"},
        "keys": ["entity_id"],
        "transform": {"function": f"shadow_backfill.demo.features:{transform}"},
        "spark": {"master": "local[*]", "warehouse": "warehouse", "conf": {"spark.sql.shuffle.partitions": "8"}},
        **(extra or {}),
    }
    (workdir / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    return Backfill(load_config(workdir / f"{name}.yaml"))


def seed_live(bf: Any, keys: list[str], table: str | None = None) -> None:
    from shadow_backfill.demo import features

    fmt = bf.table_format
    df = features.features_v1(bf.spark, [bf.scheme.value(k) for k in keys])
    fmt.create(table or bf.live_table, df.schema, ["ds"])
    fmt.overwrite_partitions(table or bf.live_table, df, keys)


def hashed_table(spark: Any, start: dt.date, partitions: int, rows: int, columns: int) -> Any:
    """A keyed table of `rows` keys per daily partition from `start` (`ds`, `entity_id`), and
    `columns` doubles `c0`, `c1`, ... in [0, 100), each a seeded hash of the key: the same
    values on every run, with no generator to ship. The budget and wide-table scenarios derive
    their shadow from it."""
    from pyspark.sql import functions as F

    return spark.range(partitions * rows).select(
        F.date_add(F.lit(start.isoformat()).cast("date"), (F.col("id") % partitions).cast("int")).alias("ds"),
        F.col("id").alias("entity_id"),
        *[((F.abs(F.hash("id", F.lit(j))) % 10_000) / 100.0).alias(f"c{j}") for j in range(columns)],
    )


def write_result(name: str, result: dict[str, Any], out: Path | None = None) -> Path:
    result = {**result, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def check(name: str, value: float, op: str, target: float) -> dict[str, Any]:
    """One target, as every scenario reports it and `python -m bench all` tabulates it."""
    ok = value >= target if op == ">=" else value <= target
    return {"name": name, "value": value, "target": f"{op} {target}", "ok": ok}


def scenario_parser(
    name: str, doc: str | None, *, partitions: int, scale: int, scale_help: str = "x 200 rows per partition"
) -> argparse.ArgumentParser:
    """The options every scenario takes (--partitions, --scale, --out); a scenario adds its own."""
    ap = argparse.ArgumentParser(
        prog=f"python -m bench {name}", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=partitions)
    ap.add_argument("--scale", type=int, default=scale, help=scale_help)
    ap.add_argument("--out", type=Path, default=None)
    return ap


def finish(name: str, result: dict[str, Any], checks: list[dict[str, Any]], lines: list[str], out: Path | None) -> int:
    """Write the scenario's JSON (with its checks and the machine) and print its summary lines."""
    path = write_result(name, {**result, "checks": checks}, out)
    for line in lines:
        print(line)
    print(f"  results: {path}")
    return 0


def peaks_at_1x_and_10x(module: str, partitions: int, scale: int) -> tuple[list[dict[str, Any]], float, float]:
    """A driver-memory scenario's two runs, at `scale` and 10x it, each a fresh process
    (`python -m MODULE --child`, which prints its result as the last line of JSON), and the
    ratios of their Python and driver JVM peaks: flat is what the scenarios check."""
    runs = []
    for size in (scale, scale * 10):
        argv = [sys.executable, "-m", module, "--child", "--partitions", str(partitions), "--scale", str(size)]
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    small, large = runs
    py_ratio = round(large["python_peak_mb"] / small["python_peak_mb"], 2)
    jvm_ratio = round(large["jvm_peak_mb"] / small["jvm_peak_mb"], 2)
    return runs, py_ratio, jvm_ratio
