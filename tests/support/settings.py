"""The tests' data range, Spark settings and the config factory every backend test builds on."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from shadow_backfill.config import load_config
from support.class_archive import BASE_OPTIONS
from support.object_store import BUCKET

if TYPE_CHECKING:
    from shadow_backfill import Backfill

TESTS = Path(__file__).resolve().parent.parent
START, END = "2024-01-01", "2024-01-10"
# Tiny data: one shuffle partition and one task per stage, no adaptive re-planning, no generated
# code at all (interpreted expressions: compiling code per query, then JIT-compiling it, costs more
# than it saves on a few rows), Delta's log replayed in one task rather than 50. Measured on
# tests/e2e/test_recompute.py + test_promote.py: 201 s -> 114 s; generated code off as well:
# test_promote.py 142 s -> 108 s; one task per stage rather than two: the classic format tier on
# PySpark 4.1 144 s -> 112 s, its JVM's CPU 176 s -> 127 s (every task is a scheduling round,
# a thread hand-off and its own small result on the driver, for a few rows).
# $SB_TEST_SPARK_CONF (JSON) adds settings, to measure their effect.
TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# The flags of the long-lived test JVMs (the classic test session, the Spark Connect server): the
# parallel collector rather than G1. On 2 cores G1's concurrent refinement and marking threads take
# CPU from the tests, which pair two pytest processes on the two cores, for a heap that stays
# small. Measured (PySpark 4.1, iceberg's bad-input cases, promotion and kill tests, CPU of the
# whole machine): 109 and 109 core-seconds with G1, 98, 103 and 104 with this collector.
# `test_class_archive.py` fails if the classic session stops running it.
TEST_JVM_OPTIONS = "-XX:+UseParallelGC"
# The JVM flags of CLI processes the tests start (`support.class_archive`: the quick JIT compiler,
# the serial collector and, once the classic session has started, the class archive). The
# long-lived test session runs `TEST_JVM_OPTIONS` instead (its own `spark.driver.extraJavaOptions`
# replaces these).
CLI_JVM = {"spark.driver.extraJavaOptions": BASE_OPTIONS}
# The classic session's resolved jars, linked into one folder once it has started: CLI processes
# the tests start (kill trials, the killed run) get them by `spark.jars_dir`, as an offline user
# does, instead of each asking Ivy again.
JARS: dict[str, str] = {}
# The real Spark Connect server's URL once the `connect` group has started it.
CONNECT: dict[str, str] = {}
# The `s3` group's settings once it has started SeaweedFS: the s3a connector's endpoint and
# credentials and the Iceberg catalog `lake` whose warehouse is on the bucket, as a user's
# `spark.conf` carries them.
STORE: dict[str, str] = {}
S3_CATALOG = "lake"
# The `s3` group's Hive metastore for Parquet tables by name (`parquet-metastore-s3`), once
# started: Spark's embedded Hive client over a Derby network server, which the CLI processes the
# tests start share with the test session (embedded Derby admits one JVM).
S3_METASTORE: dict[str, str] = {}
METASTORE_S3 = "parquet-metastore-s3"


def hive_database(spark: Any, ns: str) -> None:
    """A database of the `s3` group's metastore whose location is on the bucket, as its owner
    would make it: the tables created in it (managed) lie under that location."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {ns} LOCATION 's3a://{BUCKET}/hive/{ns}.db'")


def base_config(kind: str, warehouse: Path, **overrides: Any) -> dict[str, Any]:
    """A config for a backend kind: its format, plus `-sail` for Spark Connect on Sail or
    `-connect` for the real Spark Connect server (which holds the formats' settings)."""
    ns = "t" + uuid.uuid4().hex[:10]
    fmt, engine = kind.partition("-")[0], kind.rpartition("-")[2] if "-" in kind else ""
    if engine == "sail":
        spark: dict[str, Any] = {"remote": "sail", "warehouse": str(warehouse)}
    elif engine == "connect":
        spark = {"remote": CONNECT["url"], "warehouse": str(warehouse)}
    else:
        spark = {
            "master": "local[2]",
            "warehouse": str(warehouse),
            **({"jars_dir": JARS["dir"]} if "dir" in JARS else {}),
            "conf": {**TEST_CONF, **CLI_JVM, **json.loads(os.environ.get("SB_TEST_SPARK_CONF", "{}"))},
        }
    if kind == METASTORE_S3:
        spark["conf"].update({**STORE, **S3_METASTORE})
        live = f"{ns}.events"
    elif engine == "s3":
        spark["conf"].update(STORE)
        live = f"{S3_CATALOG}.{ns}.events" if fmt == "iceberg" else f"s3a://{BUCKET}/{ns}/events"
    else:
        live = f"local.{ns}.events" if fmt == "iceberg" else str(warehouse / ns / "events")
    cfg: dict[str, Any] = {
        "live_table": live,
        "version": "v2",
        "format": fmt,
        "partition": {"column": "ds", "granularity": "daily"},
        "keys": ["id"],
        "transform": {"function": "sb_test_transforms:events_v2", "python_path": [str(TESTS)]},
        "spark": spark,
        "run": {"max_parallel": 2, "retries": 0, "retry_backoff_s": 0},
    }
    for k, v in overrides.items():
        if k == "transform":
            cfg[k] = {"python_path": [str(TESTS)], **v}
        elif isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    return cfg


MakeBackfill = Callable[..., "Backfill"]


def factory(kind: str, tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
    def make(seed_live: bool = True, **overrides: Any) -> Backfill:
        data = base_config(kind, warehouse, **overrides)
        data.setdefault("state", {"url": f"sqlite:///{tmp_path / ('state-' + uuid.uuid4().hex[:6] + '.db')}"})
        path = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(data))
        from shadow_backfill import Backfill

        if kind == METASTORE_S3:
            hive_database(spark, data["live_table"].partition(".")[0])
        bf = Backfill(load_config(path), spark=spark)
        bf.config_path = path  # type: ignore[attr-defined]
        if seed_live:
            seed(bf)
        return bf

    return make


DRIFT = "2024-01-05"


QUIET = {m: {"warn": None, "fail": None} for m in ("mean_shift", "std_change", "psi", "ks")}


def validated(make: MakeBackfill) -> Backfill:
    """Recomputed and validated: DRIFT fails (a key dropped), the other nine pass. Distribution
    thresholds are off so the verdicts depend only on the row/key checks (5 rows a day is tiny)."""
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET)
    assert bf.run(START, END).ok
    bf.validate()
    return bf


def seed(bf: Backfill, start: str = START, end: str = END, partitioned_by: tuple[str, ...] = ("ds",)) -> None:
    """Create the live table with the v1 transform over the test range, in one commit."""
    import sb_test_transforms as t

    keys = bf.scheme.expand(start, end)
    df = t.events(bf.spark, [bf.scheme.value(k) for k in keys])
    bf.table_format.create(bf.live_table, df.schema, list(partitioned_by), data=df)
