"""Validation behaviour every table format must have (Iceberg: classic Spark; Delta: Sail)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import sb_test_transforms as t
from conftest import END, START, TESTS, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill.cli import app

SUITE = str(TESTS / "suites" / "events.json")
DRIFT = "2024-01-05"


def drifting_partition_fails_and_reports(make: MakeBackfill, out: Path) -> None:
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, expectations=[SUITE])
    assert bf.run(START, END).ok
    result = bf.validate()
    verdicts = {v.partition: v for v in result.verdicts}
    assert len(verdicts) == 10
    assert verdicts[DRIFT].verdict == "fail"
    assert {v.verdict for k, v in verdicts.items() if k != DRIFT} == {"pass"}
    failed = {c.id for c in verdicts[DRIFT].reasons if c.status == "fail"}
    assert {"row_count_change", "keys_removed", "mean_shift[amount]"} <= failed, failed
    removed = next(c for c in verdicts[DRIFT].checks if c.name == "keys_removed")
    assert removed.observed == 1 / t.ROWS_PER_DAY and "fail > 0.05" in removed.threshold

    # verdicts are stored, bound to the versions that were read
    stored = {v.partition: v for v in bf.verdicts()}
    shadow_version = bf.table_format.current_version(bf.shadow_table)
    assert stored[DRIFT].shadow_version == shadow_version == result.shadow_version
    assert stored[DRIFT].live_version == bf.table_format.current_version(bf.live_table)
    assert stored[DRIFT].partition_version == {r.partition: r for r in bf.status()}[DRIFT].shadow_version

    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    runner = CliRunner()
    status = json.loads(runner.invoke(app, ["status", cfg, "--json"]).stdout)
    assert {r["partition"]: r["verdict"] for r in status}[DRIFT] == "fail"

    paths = bf.report(out)
    doc = json.loads(paths["json"].read_text())
    assert doc["schema_version"] == 1 and doc["summary"] == {"pass": 9, "warn": 0, "fail": 1}
    part = next(p for p in doc["partitions"] if p["partition"] == DRIFT)
    assert part["verdict"] == "fail" and part["rows"] == {"live": t.ROWS_PER_DAY, "shadow": t.ROWS_PER_DAY - 1}
    assert "hist" in part["metrics"]["columns"]["amount"]
    junit = ET.parse(paths["junit"]).getroot()
    failures = junit.findall(".//testcase/failure")
    assert int(junit.get("failures", "0")) == len(failures) >= 3
    assert all(f"partition.{DRIFT}" == c.get("classname") for c in junit.findall(".//testcase[failure]"))
    md = paths["markdown"].read_text()
    assert f"| {DRIFT} | ❌ fail |" in md and "9 pass · 0 warn · 1 fail" in md
    assert "<svg" in paths["html"].read_text()


def missing_live_follows_policy(make: MakeBackfill) -> None:
    bf = make(expectations=[SUITE])
    bf.run("2024-01-10", "2024-01-11")  # live has 01-01..01-10
    verdicts = {v.partition: v for v in bf.validate().verdicts}
    assert verdicts["2024-01-11"].verdict == "warn"
    assert verdicts["2024-01-11"].reasons[0].name == "live_missing"
    strict = make(
        seed_live=False,
        live_table=bf.live_table,
        state={"url": bf.config.state_url},
        expectations=[SUITE],
        validation={"missing_live": "fail"},
    )
    assert {v.partition: v.verdict for v in strict.validate().verdicts}["2024-01-11"] == "fail"


def schema_change_is_reported(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:with_extra_column"})
    bf.run(START, "2024-01-02")
    v = bf.validate().verdicts[0]
    assert v.verdict == "warn"
    schema = next(c for c in v.checks if c.name == "schema_change")
    assert schema.observed == ["+extra"]
