"""The demo on Delta, through an embedded Sail Spark Connect server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow_backfill.cli import app

pytestmark = pytest.mark.sail


def test_demo_on_delta(sail_spark: object, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", str(tmp_path / "demo"), "--format", "delta", "--days", "12"])
    assert result.exit_code == 0, result.output
    assert "12 written, 0 skipped, 0 failed" in result.output
    cfg = tmp_path / "demo" / "backfill.yaml"
    rows = json.loads(CliRunner().invoke(app, ["status", str(cfg), "--json"]).stdout)
    assert [r["status"] for r in rows] == ["written"] * 12
    # BAD_DAYS drop the BR rows in v2: 2024-01-10 has fewer rows than the others
    by_day = {r["partition"]: r["rows"] for r in rows}
    assert by_day["2024-01-09"] == 200 and by_day["2024-01-10"] < 200
    assert (tmp_path / "demo" / "warehouse" / "delta" / "features_v2" / "_delta_log").is_dir()
    assert "11 pass, 0 warn, 1 fail" in result.output
