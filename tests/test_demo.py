"""`shadow-backfill demo` on every backend: the live table, the v2 recompute, the validation that
fails exactly its bad day, and the report."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Backend
from typer.testing import CliRunner

from shadow_backfill.cli import app


def test_demo_recomputes_validates_and_reports(backend: Backend, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", str(demo), "--format", backend.format, "--days", "12"])
    assert result.exit_code == 0, result.output
    assert "12 written, 0 skipped, 0 failed" in result.output
    cfg = demo / "backfill.yaml"
    assert (demo / "expectations" / "features.json").is_file()
    rows = json.loads(CliRunner().invoke(app, ["status", str(cfg), "--json"]).stdout)
    assert len(rows) == 12 and {r["status"] for r in rows} == {"written"}
    by_day = {r["partition"]: r["rows"] for r in rows}
    assert by_day.pop("2024-01-10") < 200  # a BAD_DAY: v2 drops the BR rows
    assert set(by_day.values()) == {200}
    # exactly the BAD_DAY inside the range fails, and the report is there
    assert "11 pass, 0 warn, 1 fail" in result.output
    assert (demo / "report" / "report.html").is_file()
