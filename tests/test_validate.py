"""The validation gate on Iceberg with real Spark and real GX."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import sb_test_transforms as t
import validate_cases as cases
from conftest import START, TESTS, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill import ConfigError
from shadow_backfill.cli import app


def test_drifting_partition_fails_and_reports(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    cases.drifting_partition_fails_and_reports(make_backfill, tmp_path / "report")


def test_missing_live_follows_policy(make_backfill: MakeBackfill) -> None:
    cases.missing_live_follows_policy(make_backfill)


def test_schema_change_is_reported(make_backfill: MakeBackfill) -> None:
    cases.schema_change_is_reported(make_backfill)


def test_cli_validate_exits_1_on_failure(make_backfill: MakeBackfill) -> None:
    bf = make_backfill(transform={"function": "sb_test_transforms:drift_on_one_day"})
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
def test_bad_suites_are_refused_before_work(
    make_backfill: MakeBackfill, tmp_path: Path, content: str, words: str
) -> None:
    suite = tmp_path / "bad.json"
    suite.write_text(content)
    bf = make_backfill(expectations=[str(suite)])
    bf.run(START, "2024-01-02")
    with pytest.raises(ConfigError, match=r"bad\.json") as err:
        bf.validate()
    assert words in str(err.value)
    assert bf.verdicts() == []
    missing = make_backfill(seed_live=False, expectations=[str(tmp_path / "absent.json")])
    with pytest.raises(ConfigError, match="does not exist"):
        missing.validate(partitions=[START])


def test_html_report_renders_in_headless_chromium(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium")
        pytest.skip("chromium not installed (apt-get install chromium)")
    bf = make_backfill(
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        expectations=[str(TESTS / "suites" / "events.json")],
    )
    bf.run(START, "2024-01-06")
    bf.validate()
    html = bf.report(tmp_path / "r")["html"]
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'ud'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'data-rendered="ok"' in result.stdout, result.stderr[-2000:]
    assert "rendered 6 partitions" in result.stdout
    assert "Uncaught" not in result.stderr, result.stderr[-2000:]
    assert json.loads(html.read_text().split('id="report-data">')[1].split("</script>")[0])["partitions"] == 6


def test_missing_key_column_is_refused_before_any_job(make_backfill: MakeBackfill) -> None:
    bf = make_backfill(keys=["id", "ghost_key"])
    bf.run(START, "2024-01-02")
    with pytest.raises(ConfigError, match=r"keys: column 'ghost_key' does not exist in table .*events_v2"):
        bf.validate()
    assert bf.verdicts() == []
    # Spark resolves columns case-insensitively by default, so the check does too: the key diff runs
    same = make_backfill(seed_live=False, live_table=bf.live_table, state={"url": bf.config.state_url}, keys=["ID"])
    diffs = [v.metrics["keys"] for v in same.validate().verdicts]
    assert len(diffs) == 2 and all(d["matched"] == t.ROWS_PER_DAY and d["added"] == d["removed"] == 0 for d in diffs)
