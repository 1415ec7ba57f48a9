"""`--last N --lag D`: which partitions a nightly late-data job picks, with "now" pinned.

Pure code (`shadow_backfill.windows`): month and year boundaries, a leap day, DST changes in
both directions for days and hours, and the CLI's refusals before any config opens Spark.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.config import load_config
from shadow_backfill.errors import ConfigError, UsageError
from shadow_backfill.windows import (
    NOW_VARIABLE,
    complete_before,
    current_time,
    last_periods,
    parse_duration,
    window_time,
)

UTC = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def at(text: str) -> dt.datetime:
    return current_time(UTC, {NOW_VARIABLE: text})


def keys(granularity: str, n: int, cutoff: dt.datetime, zone: ZoneInfo = UTC) -> list[str]:
    fmt = {"daily": "%Y-%m-%d", "hourly": "%Y-%m-%dT%H", "monthly": "%Y-%m"}[granularity]
    return [p.strftime(fmt) for p in last_periods(granularity, n, cutoff, zone)]


def test_the_issue_example_last_3_lag_2d() -> None:
    now = at("2024-02-10T12:00Z")
    assert keys("daily", 3, now - parse_duration("2d", "--lag")) == ["2024-02-05", "2024-02-06", "2024-02-07"]


def test_a_day_ending_exactly_at_the_cutoff_is_complete() -> None:
    assert keys("daily", 1, at("2024-02-10T00:00Z")) == ["2024-02-09"]
    assert keys("daily", 1, at("2024-02-09T23:59:59Z")) == ["2024-02-08"]


def test_across_a_month_boundary_and_a_leap_day() -> None:
    assert keys("daily", 3, at("2024-03-01T01:00Z")) == ["2024-02-27", "2024-02-28", "2024-02-29"]
    assert keys("daily", 4, at("2024-03-02T00:00Z")) == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01"]


def test_monthly_across_a_year_boundary() -> None:
    assert keys("monthly", 2, at("2024-01-15T00:00Z")) == ["2023-11", "2023-12"]
    assert keys("monthly", 1, at("2024-03-01T00:00Z")) == ["2024-02"]


def test_hourly_in_utc() -> None:
    assert keys("hourly", 2, at("2024-02-10T12:00Z") - parse_duration("6h", "--lag")) == [
        "2024-02-10T04",
        "2024-02-10T05",
    ]
    assert keys("hourly", 3, at("2024-03-01T01:30Z")) == ["2024-02-29T22", "2024-02-29T23", "2024-03-01T00"]


def test_days_end_at_midnight_of_the_time_zone() -> None:
    # 23:30 on March 10 in New York (the day clocks went forward) is 03:30 UTC on the 11th.
    cutoff = at("2024-03-11T03:30Z")
    assert keys("daily", 2, cutoff, NEW_YORK) == ["2024-03-08", "2024-03-09"]
    assert keys("daily", 2, cutoff, UTC) == ["2024-03-09", "2024-03-10"]
    # That 23-hour day ends at 04:00 UTC, not 05:00 as the days before it.
    assert keys("daily", 1, at("2024-03-11T04:00Z"), NEW_YORK) == ["2024-03-10"]


def test_lag_is_elapsed_time_across_a_dst_change() -> None:
    # 00:30 on April 1 in Berlin; 48 hours earlier is 23:30 CET on March 29 (the 31st had 23
    # hours), so the 29th is not complete yet, though two calendar days back (and Python's
    # wall-clock subtraction, `now - timedelta(days=2)`) would say it is.
    now = current_time(BERLIN, {NOW_VARIABLE: "2024-04-01T00:30"})
    assert now.utcoffset() == dt.timedelta(hours=2)
    assert keys("daily", 2, complete_before(now, parse_duration("2d", "--lag")), BERLIN) == ["2024-03-27", "2024-03-28"]


def test_hourly_never_picks_the_hour_clocks_skip() -> None:
    # Berlin, March 31 2024: 02:00 CET became 03:00 CEST. At 01:30 UTC (03:30 local) the hour
    # 03 is running, 02 never existed, 01 is the newest complete hour.
    assert keys("hourly", 3, at("2024-03-31T01:30Z"), BERLIN) == ["2024-03-30T23", "2024-03-31T00", "2024-03-31T01"]
    assert "2024-03-31T02" not in keys("hourly", 6, at("2024-03-31T05:00Z"), BERLIN)


def test_hourly_the_hour_that_happens_twice_is_one_partition() -> None:
    # Berlin, October 27 2024: 03:00 CEST became 02:00 CET; local hour 02 ran from 00:00 to
    # 02:00 UTC and is complete only after its second occurrence.
    assert keys("hourly", 2, at("2024-10-27T01:30Z"), BERLIN) == ["2024-10-27T00", "2024-10-27T01"]
    assert keys("hourly", 3, at("2024-10-27T02:00Z"), BERLIN) == ["2024-10-27T00", "2024-10-27T01", "2024-10-27T02"]


@pytest.mark.parametrize(("text", "hours"), [("2d", 48), ("6h", 6), ("1d12h", 36), ("90m", 1.5), ("0", 0), ("1w", 168)])
def test_durations(text: str, hours: float) -> None:
    assert parse_duration(text, "--lag") == dt.timedelta(hours=hours)


@pytest.mark.parametrize("text", ["2 days", "d2", "", "2x", "-1d", "1.5d"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(UsageError, match=r"--lag .* is not a duration"):
        parse_duration(text, "--lag")


def test_now_is_pinned_by_the_environment() -> None:
    assert at("2024-02-10T12:00Z") == dt.datetime(2024, 2, 10, 12, tzinfo=dt.timezone.utc)
    naive = current_time(BERLIN, {NOW_VARIABLE: "2024-02-10T12:00"})
    assert naive.astimezone(dt.timezone.utc) == dt.datetime(2024, 2, 10, 11, tzinfo=dt.timezone.utc)
    with pytest.raises(UsageError, match=NOW_VARIABLE):
        current_time(UTC, {NOW_VARIABLE: "yesterday"})
    assert current_time(UTC, {}).tzinfo is not None


def test_last_must_be_positive() -> None:
    with pytest.raises(UsageError, match="--last"):
        last_periods("daily", 0, at("2024-02-10T00:00Z"), UTC)


GOOD = {"live_table": "local.db.features", "format": "iceberg", "partition": {"column": "ds"}}


def test_time_zone_is_checked_with_the_config(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**GOOD, "transform": {"function": "m:f"}, "time_zone": "Europe/Berlin"}))
    assert load_config(p).time_zone == "Europe/Berlin"
    p.write_text(yaml.safe_dump({**GOOD, "transform": {"function": "m:f"}, "time_zone": "Mars/Olympus"}))
    with pytest.raises(ConfigError, match=r"time_zone.*Mars/Olympus"):
        load_config(p)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--lag", "2d"], "--lag goes with --last"),
        (["backfill", "--last", "3", "--start", "2024-01-01"], "--last chooses the partitions itself: drop --start"),
        (["validate", "--last", "3", "--partitions", "2024-01-01"], "drop --partitions"),
        (["run", "--last", "3", "--lag", "2 days"], "--lag '2 days' is not a duration"),
        (["run", "--as-of", "2024-01-12"], "--as-of goes with --last"),
        (["backfill", "--last", "3", "--as-of", "yesterday"], "--as-of 'yesterday' is not an ISO timestamp"),
    ],
)
def test_cli_refuses_mixed_selections_with_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**GOOD, "transform": {"function": "m:f"}}))
    result = CliRunner().invoke(app, [args[0], str(p), *args[1:]])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_as_of_takes_what_a_scheduler_renders_and_wins_over_the_variable() -> None:
    """`--as-of` is the window's now: Airflow's `{{ logical_date }}` renders with a space and an
    offset; a time without an offset is one of the config's zone; SHADOW_BACKFILL_NOW loses."""
    pinned = {NOW_VARIABLE: "2030-01-01T00:00Z"}
    airflow = window_time(UTC, "2024-01-12 00:00:00+00:00", pinned)
    assert airflow == dt.datetime(2024, 1, 12, tzinfo=dt.timezone.utc)
    assert window_time(UTC, "2024-01-12T00:00Z", pinned) == airflow
    assert window_time(BERLIN, "2024-01-12T01:00", pinned) == airflow
    assert window_time(UTC, dt.datetime(2024, 1, 12), pinned) == airflow
    assert window_time(UTC, None, pinned) == dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    with pytest.raises(UsageError, match=r"^--as-of '' is not an ISO timestamp"):
        window_time(UTC, "", pinned)
    with pytest.raises(UsageError, match=r"^--as-of 2030-01-02T00:00:00\+00:00 is later than now"):
        window_time(UTC, "2030-01-02", pinned)  # its window's days are not complete yet


def test_a_rerun_of_an_old_run_selects_the_same_partitions() -> None:
    """The nightly job of 2024-01-12 re-run a year later: `--as-of` its logical date picks the
    partitions it picked that night, whatever the clock says now."""
    that_night = last_periods(
        "daily", 3, complete_before(window_time(UTC, "2024-01-12T00:00Z"), dt.timedelta(days=2)), UTC
    )
    a_year_later = last_periods(
        "daily",
        3,
        complete_before(
            window_time(UTC, "2024-01-12 00:00:00+00:00", {NOW_VARIABLE: "2025-01-12T00:00Z"}), dt.timedelta(days=2)
        ),
        UTC,
    )
    assert that_night == a_year_later
    assert [p.strftime("%Y-%m-%d") for p in that_night] == ["2024-01-07", "2024-01-08", "2024-01-09"]
