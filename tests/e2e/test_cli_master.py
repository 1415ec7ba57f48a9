"""A bogus Spark master is one line and exit 2 from the CLI, before any Spark starts (the CLI
imports PySpark to open the session, so this runs beside the Spark tiers, not in the unit tier)."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from shadow_backfill.cli import app

GOOD = {
    "live_table": "local.db.features",
    "format": "iceberg",
    "partition": {"column": "ds"},
    # a function the pre-flight finds, taking two arguments: the master is what is wrong
    "transform": {"function": "shutil:copyfile"},
}


def test_bogus_spark_master_fails_before_spark_starts(tmp_path: Path) -> None:
    p = tmp_path / "config.yaml"
    p.write_text(yaml.safe_dump({**GOOD, "spark": {"master": "bogus://x"}}))
    result = CliRunner().invoke(app, ["run", str(p), "--start", "2024-01-01", "--end", "2024-01-02"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        "error: spark.master 'bogus://x' is not a Spark master URL (expected local[N], local-cluster[N,C,M], "
        "spark://host:port, yarn or k8s://...)"
    ]
