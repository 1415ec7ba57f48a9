"""The options that bound how long a `run` or `backfill` goes on (see `shadow_backfill.timebox`)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import typer

from shadow_backfill.timebox import next_wall_clock
from shadow_backfill.windows import parse_duration

UntilOption = typer.Option(
    None,
    "--until",
    help="Start no chunk after this wall-clock time HH:MM (the config's time_zone; the next such time); exit 4.",
)
MaxDurationOption = typer.Option(
    None, "--max-duration", help="Start no chunk after this long (e.g. 3h, 90m); exit 4, a rerun resumes."
)
PromotePartialOption = typer.Option(
    False,
    "--promote-partial",
    help="When stopped by --until, --max-duration or SIGTERM: still validate and promote the partitions finished.",
)


def check_limits(until: str | None, max_duration: str | None) -> None:
    """Refuse a malformed `--until` or `--max-duration` (exit 2) before the config opens anything."""
    if until is not None:
        next_wall_clock(until, dt.datetime.now(dt.timezone.utc), ZoneInfo("UTC"))
    if max_duration is not None:
        parse_duration(max_duration, "--max-duration")
