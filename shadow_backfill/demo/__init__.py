"""`shadow-backfill demo DIR`: a self-contained example a user can run and read.

It writes a config, the demo transforms and an expectations suite into DIR, builds a live
table of ~60 daily partitions with the v1 transform, and leaves the recompute to the caller.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import yaml

from shadow_backfill.api import Backfill
from shadow_backfill.config import load_config
from shadow_backfill.errors import UsageError
from shadow_backfill.formats import format_names, spec
from shadow_backfill.ledger import KIND

DEMO_START = dt.date(2024, 1, 1)
MODULE = "demo_features"


def demo_range(days: int) -> tuple[str, str]:
    return DEMO_START.isoformat(), (DEMO_START + dt.timedelta(days=days - 1)).isoformat()


def demo_format(fmt: str | None, remote: str | None) -> str:
    """The demo's format: the first listed (Iceberg) on Spark; on an embedded Sail server, which
    has no catalog, the first whose tables may be paths (Delta). An identifier-only format asked
    for on Sail is refused before anything is written, rather than failing inside Sail."""
    by_path = [name for name in format_names() if not spec(name).identifier_only]
    if fmt is None:
        return by_path[0] if remote == "sail" else format_names()[0]
    if remote == "sail" and spec(fmt).identifier_only:
        raise UsageError(
            f"--format {fmt} --remote sail: an embedded Sail server has no catalog for the demo's "
            f"{spec(fmt).title} table {spec(fmt).demo_live_table}; use --format {' or --format '.join(by_path)}"
        )
    return fmt


def demo_config(fmt: str, days: int, remote: str | None = None) -> dict[str, object]:
    start, end = demo_range(days)
    fmt_spec = spec(fmt)
    live = fmt_spec.demo_live_table
    spark: dict[str, object] = {
        "warehouse": "warehouse",
        "conf": {"spark.sql.shuffle.partitions": "4"},
        **fmt_spec.demo_spark,
    }
    if remote:
        spark["remote"] = remote
    return {
        "live_table": live,
        "version": "v2",
        "format": fmt,
        "partition": {"column": "ds", "granularity": "daily"},
        "keys": ["entity_id"],
        "transform": {"function": f"{MODULE}:features_v2", "python_path": ["."]},
        "spark": spark,
        "run": {"max_parallel": 2, "retries": 1},
        "expectations": ["expectations/features.json"],
        # The change contract: v2 is meant to move spend (and so spend_per_session) by about 2%;
        # every other column must stay equal on every entity.
        "validation": {
            "expected_changes": {
                "spend": {"mean_change_pct": {"warn": 3, "fail": 5}},
                "spend_per_session": {"mean_change_pct": {"warn": 3, "fail": 5}},
            },
            "unexpected_changes": "fail",
        },
        "_demo_range": {"start": start, "end": end},
    }


def expectation_suite() -> dict[str, object]:
    """A GX 1.x suite for the demo features (stored as JSON, loaded by the validation gate)."""

    def exp(kind: str, **kwargs: object) -> dict[str, object]:
        return {"type": kind, "kwargs": kwargs, "meta": {}}

    return {
        "name": "features",
        "expectations": [
            exp("expect_column_values_to_not_be_null", column="entity_id"),
            exp("expect_column_values_to_not_be_null", column="country"),
            exp("expect_column_values_to_be_in_set", column="country", value_set=["US", "DE", "FR", "IN", "BR"]),
            exp("expect_column_values_to_be_between", column="spend", min_value=0, max_value=200),
            exp("expect_column_values_to_be_between", column="sessions", min_value=0, max_value=100),
            exp("expect_column_values_to_not_be_null", column="score", mostly=0.95),
            exp("expect_column_values_to_be_unique", column="entity_id"),
            exp("expect_table_row_count_to_be_between", min_value=100, max_value=1000),
        ],
        "meta": {"notes": "demo suite written by shadow-backfill demo"},
    }


def write_demo(directory: Path, fmt: str = "iceberg", days: int = 60, remote: str | None = None) -> Path:
    """Write the demo files; returns the config path. Refuses to overwrite another project's files."""
    directory.mkdir(parents=True, exist_ok=True)
    cfg_path = directory / "backfill.yaml"
    data = demo_config(fmt, days, remote)
    start_end = data.pop("_demo_range")
    text = (
        "# shadow-backfill demo config (written by `shadow-backfill demo`)\n"
        f"# Demo range: {start_end['start']} .. {start_end['end']}\n"  # type: ignore[index]
        + yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False)
    )
    cfg_path.write_text(text)
    shutil.copyfile(Path(__file__).with_name("features.py"), directory / f"{MODULE}.py")
    (directory / "expectations").mkdir(exist_ok=True)
    (directory / "expectations" / "features.json").write_text(json.dumps(expectation_suite(), indent=2) + "\n")
    return cfg_path


def seed_live_table(cfg_path: Path, days: int) -> Backfill:
    """Create the live table from the v1 transform in one commit (skipped if it already exists)."""
    import importlib
    import sys

    bf = Backfill(load_config(cfg_path))
    fmt = bf.table_format
    start, end = demo_range(days)
    keys = bf.scheme.expand(start, end)
    if fmt.exists(bf.live_table):
        return bf
    sys.path.insert(0, str(cfg_path.parent))
    module = importlib.import_module(MODULE)
    df = module.features_v1(bf.spark, [bf.scheme.value(k) for k in keys])
    fmt.create(bf.live_table, df.schema, [bf.scheme.column])
    fmt.overwrite_partitions(bf.live_table, df, keys, {KIND: "demo-seed"})
    return bf
