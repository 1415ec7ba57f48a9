"""The validation gate on every table backend (each test runs once per `backend`), with real GX."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import sb_test_transforms as t
from support import DRIFT, END, START, TESTS, MakeBackfill, chromium_dump_dom, published
from typer.testing import CliRunner

from shadow_backfill import ConfigError
from shadow_backfill.cli import app

SUITE = str(TESTS / "suites" / "events.json")


@pytest.mark.store
def test_drifting_partition_fails_and_reports(make: MakeBackfill, tmp_path: Path) -> None:
    out = tmp_path / "report"
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, expectations=[SUITE])
    assert bf.run(START, END).ok
    result = bf.validate()
    verdicts = {v.partition: v for v in result.verdicts}
    assert len(verdicts) == 10
    assert verdicts[DRIFT].verdict == "fail"
    assert {v.verdict for k, v in verdicts.items() if k != DRIFT} == {"pass"}
    failed = {c.id for c in verdicts[DRIFT].reasons if c.status == "fail"}
    assert {"row_count_change", "keys_removed"} <= failed, failed
    # 5 rows a side: no distribution test is judged, each says why
    shift = next(c for c in verdicts[DRIFT].checks if c.id == "mean_shift[amount]")
    assert shift.status == "skipped" and "not enough rows (4 < 100)" in shift.message, shift
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
    status = published(runner.invoke(app, ["status", cfg, "--json"]).stdout, "status.schema.json")
    assert {r["partition"]: r["verdict"] for r in status}[DRIFT] == "fail"

    paths = bf.report(out)
    doc = json.loads(paths["json"].read_text())
    assert doc["schema_version"] == 7 and doc["summary"] == {"pass": 9, "warn": 0, "fail": 1}
    part = next(p for p in doc["partitions"] if p["partition"] == DRIFT)
    assert part["verdict"] == "fail" and part["metrics"]["rows"] == {
        "live": t.ROWS_PER_DAY,
        "shadow": t.ROWS_PER_DAY - 1,
    }
    assert "hist" in part["metrics"]["columns"]["amount"]
    junit = ET.parse(paths["junit"]).getroot()
    failures = junit.findall(".//testcase/failure")
    assert int(junit.get("failures", "0")) == len(failures) >= 2
    assert int(junit.get("skipped", "0")) == len(junit.findall(".//testcase/skipped")) > 0
    assert all(f"partition.{DRIFT}" == c.get("classname") for c in junit.findall(".//testcase[failure]"))
    md = paths["markdown"].read_text()
    assert f"| {DRIFT} | ❌ fail |" in md and "9 pass · 0 warn · 1 fail" in md
    assert "<svg" in paths["html"].read_text()


# once per engine (the e2e default): the format cannot change it
def test_missing_live_follows_policy(make: MakeBackfill) -> None:
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


def test_schema_change_is_reported(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:with_extra_column"})
    bf.run(START, "2024-01-02")
    v = bf.validate().verdicts[0]
    assert v.verdict == "warn"
    schema = next(c for c in v.checks if c.name == "schema_change")
    assert schema.observed == ["+extra"]


# once per engine (the e2e default): the format cannot change it
def test_cli_validate_exits_1_on_failure(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"})
    bf.run(START, "2024-01-06")
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["validate", cfg])
    assert result.exit_code == 1
    assert "5 pass, 0 warn, 1 fail" in result.output
    ok = CliRunner().invoke(app, ["validate", cfg, "--start", START, "--end", "2024-01-04"])
    assert ok.exit_code == 0 and "4 pass, 0 warn, 0 fail" in ok.output


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            '{"expectations": [{"type": "expect_column_values_to_be_purple", "kwargs": {"column": "id"}}]}',
            "unknown expectation type 'expect_column_values_to_be_purple'",
        ),
        ("{not json", "not valid JSON"),
        ('{"name": "x"}', "'expectations' list"),
        (
            '{"expectations": [{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "nope"}}]}',
            "column 'nope' does not exist",
        ),
        (
            '{"expectations": [{"type": "expect_column_values_to_be_between", "kwargs": {"column": "id", '
            '"min_value": "low", "max_value": 3, "mostly": 7}}]}',
            "invalid kwargs",
        ),
    ],
)
# once per engine (the e2e default): the format cannot change it
def test_bad_suites_are_refused_before_work(make: MakeBackfill, tmp_path: Path, content: str, words: str) -> None:
    suite = tmp_path / "bad.json"
    suite.write_text(content)
    bf = make(expectations=[str(suite)])
    bf.run(START, "2024-01-02")
    with pytest.raises(ConfigError, match=r"bad\.json") as err:
        bf.validate()
    assert words in str(err.value)
    assert bf.verdicts() == []
    missing = make(seed_live=False, expectations=[str(tmp_path / "absent.json")])
    with pytest.raises(ConfigError, match="does not exist"):
        missing.validate(partitions=[START])


# once per engine (the e2e default): the format cannot change it
def test_html_report_renders_in_headless_chromium(make: MakeBackfill, tmp_path: Path) -> None:
    bf = make(
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        expectations=[str(TESTS / "suites" / "events.json")],
    )
    bf.run(START, "2024-01-06")
    bf.validate()
    html = bf.report(tmp_path / "r")["html"]
    result = chromium_dump_dom(html, tmp_path / "ud")
    assert 'data-rendered="ok"' in result.stdout, result.stderr[-2000:]
    assert "rendered 6 partitions" in result.stdout
    assert "Uncaught" not in result.stderr, result.stderr[-2000:]
    assert json.loads(html.read_text().split('id="report-data">')[1].split("</script>")[0])["partitions"] == 6


# once per engine (the e2e default): the format cannot change it
def test_missing_key_column_is_refused_before_any_job(make: MakeBackfill) -> None:
    bf = make(keys=["id", "ghost_key"])
    bf.run(START, "2024-01-02")
    with pytest.raises(ConfigError, match=r"keys: column 'ghost_key' does not exist in table .*events_v2"):
        bf.validate()
    assert bf.verdicts() == []
    # Spark resolves columns case-insensitively by default, so the check does too: the key diff runs
    same = make(seed_live=False, live_table=bf.live_table, state={"url": bf.config.state_url}, keys=["ID"])
    diffs = [v.metrics.as_json()["keys"] for v in same.validate().verdicts]
    assert len(diffs) == 2 and all(d["matched"] == t.ROWS_PER_DAY and d["added"] == d["removed"] == 0 for d in diffs)
