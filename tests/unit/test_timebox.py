"""Time boxes, pure: when `--until` and `--max-duration` stop a run from starting chunks, with a
fake clock, and what a real SIGTERM to this process does while a box is open."""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.errors import UsageError
from shadow_backfill.timebox import TimeBox, next_wall_clock, running_clock, stop_on_sigterm
from shadow_backfill.windows import NOW_VARIABLE

UTC = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


class FakeClock:
    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now


def test_until_is_the_next_time_the_wall_clock_shows_it() -> None:
    assert next_wall_clock("06:00", utc("2024-01-12T05:00"), UTC) == utc("2024-01-12T06:00")
    # Started at 22:00: runs through the night, until tomorrow's 06:00.
    assert next_wall_clock("06:00", utc("2024-01-12T22:00"), UTC) == utc("2024-01-13T06:00")
    assert next_wall_clock("6:00", utc("2024-01-12T06:00"), UTC) == utc("2024-01-13T06:00")


def test_until_is_read_on_the_config_time_zone_clock() -> None:
    # 06:00 in Berlin is 05:00 UTC in winter and 04:00 UTC after the clocks go forward.
    assert next_wall_clock("06:00", utc("2024-03-30T12:00"), BERLIN) == utc("2024-03-31T04:00")
    assert next_wall_clock("06:00", utc("2024-01-12T00:00"), BERLIN) == utc("2024-01-12T05:00")


@pytest.mark.parametrize("text", ["6", "24:00", "06:60", "six", "06:00:00", ""])
def test_bad_until_names_the_option(text: str) -> None:
    with pytest.raises(UsageError, match="--until"):
        next_wall_clock(text, utc("2024-01-12T00:00"), UTC)


def test_the_box_says_stop_once_its_deadline_passes() -> None:
    clock = FakeClock(utc("2024-01-12T05:59"))
    box = TimeBox(utc("2024-01-12T06:00"), clock, "--until 06:00")
    assert box.reason is None
    clock.now = utc("2024-01-12T06:00")
    assert box.reason == "--until 06:00 (at 2024-01-12T06:00:00+00:00)"
    clock.now = utc("2024-01-12T05:00")  # once stopped, stays stopped
    assert box.reason is not None


def test_the_earlier_limit_wins_and_now_can_be_pinned() -> None:
    env = {NOW_VARIABLE: "2024-01-12T05:30Z"}
    box = TimeBox.from_options("06:00", "3h", UTC, env)
    assert box.deadline == utc("2024-01-12T06:00")
    box = TimeBox.from_options("06:00", "10m", UTC, env)
    assert box.deadline is not None
    assert dt.timedelta(0) <= box.deadline - utc("2024-01-12T05:40") < dt.timedelta(seconds=5)
    assert TimeBox.from_options(None, None, UTC, env).reason is None


def test_the_pinned_clock_runs_at_real_speed() -> None:
    clock = running_clock(UTC, {NOW_VARIABLE: "2024-01-12T05:59:59Z"})
    first = clock()
    assert utc("2024-01-12T05:59:59") <= first < utc("2024-01-12T06:00:09")
    time.sleep(0.05)
    assert clock() - first >= dt.timedelta(seconds=0.05)


def test_a_stop_keeps_its_first_reason() -> None:
    box = TimeBox(None, FakeClock(utc("2024-01-12T00:00")))
    box.stop("SIGTERM")
    box.stop("something later")
    assert box.reason == "SIGTERM"


def test_a_first_sigterm_stops_the_box_and_a_second_would_end_the_process() -> None:
    before = signal.getsignal(signal.SIGTERM)
    box = TimeBox(None, FakeClock(utc("2024-01-12T00:00")))
    with stop_on_sigterm(box):
        os.kill(os.getpid(), signal.SIGTERM)
        assert box.reason == "SIGTERM"
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--until", "25:00"], "--until '25:00' is not a wall-clock time"),
        (["backfill", "--max-duration", "soon"], "--max-duration 'soon' is not a duration"),
    ],
)
def test_cli_refuses_bad_limits_with_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    p = tmp_path / "c.yaml"
    good = {
        "live_table": "local.db.f",
        "format": "iceberg",
        "partition": {"column": "ds"},
        "transform": {"function": "m:f"},
    }
    p.write_text(yaml.safe_dump(good))
    result = CliRunner().invoke(app, [args[0], str(p), *args[1:]])
    assert result.exit_code == 2, result.output
    assert message in result.output
