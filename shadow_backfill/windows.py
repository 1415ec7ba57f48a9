"""Relative windows: "the last N complete partitions, lag hours behind now", pure code.

A nightly late-data job re-runs the newest partitions that late events may still change. Which
partitions those are depends on when the night's job runs, so the tool computes them instead of
the user's shell script: a period is *complete* when it ended at or before `now - lag`, and
`--last N` takes the N newest complete periods.

Periods are wall-clock periods of the config's `time_zone` (UTC by default): the day
2024-03-10 in America/New_York ends at 04:00 UTC on the 11th. An hour that does not exist there
(the spring-forward gap) is never chosen, and an hour that happens twice (fall-back) is one
partition, complete once its second occurrence ends. `lag` is elapsed time, so `2d` across a DST
change is 48 hours. "Now" is pinned by `SHADOW_BACKFILL_NOW` for tests and rehearsals, and by
`--as-of` (`as_of`) for one command: a scheduler passes its run's logical date, so a re-run of last
Tuesday's run selects Tuesday's partitions, not today's. `--as-of` wins over the variable.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shadow_backfill.errors import UsageError
from shadow_backfill.partitions import MAX_PARTITIONS, PartitionScheme

NOW_VARIABLE = "SHADOW_BACKFILL_NOW"
_UTC = dt.timezone.utc
_DURATION_PART = re.compile(r"(\d+)([wdhms])")
_LONGEST = dt.timedelta(days=36525)  # a duration past this is a typo, and datetimes overflow
_UNIT = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str, option: str) -> dt.timedelta:
    """`2d`, `6h`, `1d12h`, `90m`, `0`: units w, d, h, m, s. `option` names the culprit."""
    compact = text.strip().lower().replace(" ", "")
    if compact == "0":
        return dt.timedelta(0)
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise UsageError(f"{option} {text!r} is not a duration: write e.g. 2d, 6h, 1d12h or 90m")
    try:
        total = sum((dt.timedelta(**{_UNIT[unit]: int(number)}) for number, unit in parts), dt.timedelta())
    except OverflowError:
        total = _LONGEST + _LONGEST
    if total > _LONGEST:
        raise UsageError(f"{option} {text!r} is longer than 100 years")
    return total


def time_zone(name: str) -> ZoneInfo:
    """The zone named in the config (an IANA name such as `Europe/Berlin`, or `UTC`)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"time_zone {name!r} is not a known time zone (an IANA name, e.g. Europe/Berlin)") from None


def current_time(zone: ZoneInfo, environ: Mapping[str, str] | None = None) -> dt.datetime:
    """Now, aware: `SHADOW_BACKFILL_NOW` when set (ISO 8601; without an offset it is a wall-clock
    time of `zone`), else the system clock."""
    text = pinned_now(environ)
    if text is None:
        return dt.datetime.now(_UTC)
    return parse_instant(text, f"{NOW_VARIABLE}={text!r}", zone)


AsOf = str | dt.datetime | None
"""`--as-of`: the instant a window is counted from instead of now (None: now)."""


def window_time(zone: ZoneInfo, as_of: AsOf = None, environ: Mapping[str, str] | None = None) -> dt.datetime:
    """The instant a `--last --lag` window is counted from: `as_of` when given (a datetime
    without a zone, or a text without an offset, is a wall-clock time of `zone`), else
    `current_time`."""
    now = current_time(zone, environ)
    if as_of is None:
        return now
    if isinstance(as_of, dt.datetime):
        instant = as_of if as_of.tzinfo is not None else as_of.replace(tzinfo=zone)
    else:
        instant = parse_instant(as_of, f"--as-of {as_of!r}", zone)
    if instant > now:  # a manual run "for next week": its partitions are not complete yet
        raise UsageError(
            f"--as-of {instant.isoformat()} is later than now ({now.isoformat()}): "
            "a window counted from it would take partitions not complete yet"
        )
    return instant


def parse_instant(text: str, culprit: str, zone: ZoneInfo) -> dt.datetime:
    """An ISO 8601 timestamp, aware. Takes what schedulers render: `2024-01-12`,
    `2024-01-12T06:00Z`, Airflow's `2024-01-12 00:00:00+00:00`. `culprit` names it in the error."""
    try:
        pinned = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(f"{culprit} is not an ISO timestamp (e.g. 2024-02-10T12:00Z)") from None
    return pinned if pinned.tzinfo is not None else pinned.replace(tzinfo=zone)


def pinned_now(environ: Mapping[str, str] | None = None) -> str | None:
    """`SHADOW_BACKFILL_NOW` as set (None: unset). Set but empty or blank is a usage error, not
    "unset": a scheduler's template that left it empty would otherwise run on the real clock,
    a real backfill of this year's dates where a rehearsal of a pinned night was meant."""
    text = (os.environ if environ is None else environ).get(NOW_VARIABLE)
    if text is not None and not text.strip():
        raise UsageError(
            f"{NOW_VARIABLE} is set but empty: unset it to use the system clock, or give an ISO "
            "timestamp (e.g. 2024-02-10T12:00Z)"
        )
    return text


def check_now(environ: Mapping[str, str] | None = None) -> None:
    """Refuse a `SHADOW_BACKFILL_NOW` that is empty or no timestamp (exit 2), before a command
    opens anything: the clock is read later, after Spark has started."""
    current_time(ZoneInfo("UTC"), environ)


@dataclass(frozen=True)
class Window:
    """How a `--last N --lag D` selection was made, for the plan and the logs."""

    now: dt.datetime
    lag: dt.timedelta
    last: int
    zone: str
    periods: tuple[dt.datetime, ...]

    @property
    def cutoff(self) -> dt.datetime:
        """Periods ending at or before this instant are complete."""
        return complete_before(self.now, self.lag)


def complete_before(now: dt.datetime, lag: dt.timedelta) -> dt.datetime:
    """`now - lag` as elapsed time, in UTC. (Python subtracts from a datetime of a ZoneInfo zone
    on the wall clock: 48 hours before a time after a DST change would be 47 or 49 hours.)"""
    return now.astimezone(_UTC) - lag


def last_periods(granularity: str, n: int, cutoff: dt.datetime, zone: ZoneInfo) -> list[dt.datetime]:
    """The `n` newest periods (naive wall-clock starts in `zone`, ascending) that ended at or
    before `cutoff` (aware)."""
    if not 1 <= n <= MAX_PARTITIONS:
        raise UsageError(f"--last must be from 1 to {MAX_PARTITIONS}, not {n}")
    cutoff = cutoff.astimezone(_UTC)
    period = _floor(cutoff.astimezone(zone).replace(tzinfo=None), granularity)
    chosen: list[dt.datetime] = []
    while len(chosen) < n:
        # The period holding the cutoff has not ended; every earlier one has, unless it is an
        # hour the zone skips.
        period = _previous(period, granularity)
        if granularity == "hourly" and not _exists(period, zone):
            continue
        if _end(period, granularity, zone) <= cutoff:
            chosen.append(period)
    return sorted(chosen)


def _floor(local: dt.datetime, granularity: str) -> dt.datetime:
    if granularity == "hourly":
        return local.replace(minute=0, second=0, microsecond=0)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return day.replace(day=1) if granularity == "monthly" else day


def _previous(period: dt.datetime, granularity: str) -> dt.datetime:
    if granularity == "daily":
        return period - dt.timedelta(days=1)
    if granularity == "hourly":
        return period - dt.timedelta(hours=1)
    y, m = (period.year - 1, 12) if period.month == 1 else (period.year, period.month - 1)
    return period.replace(year=y, month=m)


def _next(period: dt.datetime, granularity: str) -> dt.datetime:
    if granularity == "daily":
        return period + dt.timedelta(days=1)
    if granularity == "hourly":
        return period + dt.timedelta(hours=1)
    y, m = (period.year + 1, 1) if period.month == 12 else (period.year, period.month + 1)
    return period.replace(year=y, month=m)


def _end(period: dt.datetime, granularity: str, zone: ZoneInfo) -> dt.datetime:
    """When the period ends, as an instant: the start of the next one there (its first
    occurrence: an hour that happens twice is one period, ending when the hour after it starts)."""
    return _next(period, granularity).replace(tzinfo=zone).astimezone(_UTC)


def _exists(local: dt.datetime, zone: ZoneInfo) -> bool:
    """False for a wall-clock time the zone skips (the hour lost when clocks go forward)."""
    there = local.replace(tzinfo=zone)
    return there.astimezone(_UTC).astimezone(zone).replace(tzinfo=None) == local


def periods_zone(scheme: PartitionScheme, zone_name: str) -> ZoneInfo:
    """The zone a scheme's periods are wall-clock periods of: the config's `time_zone`, but UTC
    for a timestamp column (its keys are UTC periods: `PartitionScheme.key_column`)."""
    return time_zone("UTC") if scheme.ranged else time_zone(zone_name)


def partition_age(scheme: PartitionScheme, zone_name: str, key: str, observed: dt.datetime) -> int:
    """Whole periods from a partition's start to `observed`, in the zone its periods are of (as
    `last_window` counts them: a timestamp column's are UTC): a day counts calendar days (D+1 is
    any time of the next day), a month calendar months, an hour elapsed hours (across a DST
    change too). Negative for a partition seen before it began (a clock set wrong)."""
    zone = periods_zone(scheme, zone_name)
    start, seen = scheme.parse_key(key), observed.astimezone(zone)
    if scheme.granularity == "daily":
        return (seen.date() - start.date()).days
    if scheme.granularity == "monthly":
        return (seen.year - start.year) * 12 + seen.month - start.month
    begun = start.replace(tzinfo=zone).astimezone(_UTC)
    return int((observed.astimezone(_UTC) - begun).total_seconds() // 3600)


def last_window(
    scheme: PartitionScheme, zone_name: str, last: int, lag: str | dt.timedelta = "0", as_of: AsOf = None
) -> Window:
    """The `last` newest partitions complete at `as_of` (default now; `SHADOW_BACKFILL_NOW` pins
    it) - `lag`, counted in the config's time zone `zone_name`; a timestamp partition column's
    periods are UTC. `scheme` is the one read from live (its granularity and column type)."""
    configured = time_zone(zone_name)
    zone = periods_zone(scheme, zone_name)
    now = window_time(configured, as_of)  # a time without an offset is one of the time zone
    delay = parse_duration(lag, "--lag") if isinstance(lag, str) else lag
    periods = last_periods(scheme.granularity, last, complete_before(now, delay), zone)
    return Window(now, delay, last, zone.key, tuple(periods))
