"""`shadow-backfill demo`: the live table, the v2 recompute, the validation that fails exactly its
bad day, and the report.

The demo writes a config for a format (`--format`) and an engine (`--remote`), so each format
and each engine runs it once, on four backends, not seven: Iceberg on classic Spark, Delta on
classic Spark (the demo's config must bring delta-spark, whose commits are checked), Parquet on
Sail, Iceberg over Spark Connect. The other three would repeat a format and an engine already
run; what the format reads and commits under the demo is held by the contract clauses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Backend
from support.backends import BACKENDS
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.document import ReportDoc

DEMO_BACKENDS = ("iceberg", "delta", "parquet-sail", "iceberg-connect")  # each format and engine once


@pytest.mark.every_backend  # narrowed to DEMO_BACKENDS below
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id in DEMO_BACKENDS], indirect=True)
def test_demo_recomputes_validates_and_reports(backend: Backend, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", str(demo), "--format", backend.format, "--days", "12", *backend.remote()])
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
    # judged by the demo's change contract: spend moved by about 2% as declared, and on the bad
    # day the score column changed although nothing declared it
    doc = json.loads((demo / "report" / "report.json").read_text())
    ReportDoc.model_validate(doc)  # the published schema (docs/report.schema.json) holds
    parts = {p["partition"]: p for p in doc["partitions"]}
    good = next(c for c in parts["2024-01-01"]["checks"] if c["name"] == "mean_change_pct" and c["column"] == "spend")
    assert good["status"] == "pass" and 1.5 < good["observed"] < 2.5
    bad = parts["2024-01-10"]
    reasons = {f"{c['name']}[{c['column']}]" for c in bad["checks"] if c["status"] in ("warn", "fail")}
    assert "unexpected_changes[score]" in reasons, reasons
    assert any(s["column"] == "score" and s["shadow"] is None for s in bad["metrics"]["samples"])
    if backend.name == "delta":  # classic Spark: the commits are delta-spark's own
        log = demo / "warehouse" / "delta" / "features_v2" / "_delta_log"
        infos = [
            json.loads(line)["commitInfo"]["engineInfo"]
            for f in sorted(log.glob("*.json"))
            for line in f.read_text().splitlines()
            if '"commitInfo"' in line
        ]
        assert infos and all("Apache-Spark/" in i and "Delta-Lake/" in i for i in infos), infos
