"""The late-arrival view: how a nightly window's partitions filled up with age, read from the
metric history (pure code: the state store's records in, report.json's document out).

A nightly `--last N --lag D --force` job validates each partition on several nights. Each
validation stores when it saw the data (`observed_at`: the clock, or `SHADOW_BACKFILL_NOW`
when pinned; not `--as-of`, since a catch-up run of last Tuesday reads today's data), so a
partition's measurements can be placed by its age then: D+1 is the day after the partition's
own. Against live, which holds what an earlier night promoted, the keys only in shadow are the
rows that arrived since; a partition's rows at an age over its rows at its newest validation
are the share that was there by that age, which is what a lag is chosen from ("98.7% of rows
are there by D+2").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal
from zoneinfo import ZoneInfo

from shadow_backfill.document import (
    ArrivalAgeDoc,
    ArrivalPartitionDoc,
    ArrivalPointDoc,
    KeyDiffDoc,
    LateArrivalDoc,
)
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.state import VerdictRecord

# granularity -> (the unit published, the letter of its label)
Unit = Literal["day", "hour", "month"]
UNITS: dict[str, tuple[Unit, str]] = {"daily": ("day", "D"), "hourly": ("hour", "H"), "monthly": ("month", "M")}


def age(start: dt.datetime, observed: dt.datetime, granularity: str, zone: ZoneInfo) -> int:
    """Whole periods from a partition's start (a wall-clock time of `zone`) to `observed`: a
    day counts calendar days in `zone` (D+1 is any time of the next day), a month calendar
    months, an hour elapsed hours (across a DST change too)."""
    seen = observed.astimezone(zone)
    if granularity == "daily":
        return (seen.date() - start.date()).days
    if granularity == "monthly":
        return (seen.year - start.year) * 12 + seen.month - start.month
    begun = start.replace(tzinfo=zone).astimezone(dt.timezone.utc)
    return int((observed.astimezone(dt.timezone.utc) - begun).total_seconds() // 3600)


def late_arrivals(
    histories: Mapping[str, Sequence[VerdictRecord]], scheme: PartitionScheme, zone: ZoneInfo
) -> LateArrivalDoc | None:
    """The view over the partitions validated at two ages or more (None: there are none, as
    after a one-off backfill). At an age seen twice, the later validation counts."""
    unit, letter = UNITS[scheme.granularity]
    partitions = []
    for key in scheme.sort(histories):
        start = scheme.parse_key(key)
        at_age: dict[int, VerdictRecord] = {}
        seen = [r for r in histories[key] if r.observed_at is not None and r.metrics.rows is not None]
        for r in sorted(seen, key=lambda r: r.observed_at or dt.datetime.min):
            at = age(start, r.observed_at or dt.datetime.min, scheme.granularity, zone)
            if at >= 0:  # seen before the period began: a clock set wrong, no age to place it at
                at_age[at] = r
        if len(at_age) >= 2:
            points = [_point(at, r, letter) for at, r in sorted(at_age.items())]
            partitions.append(ArrivalPartitionDoc(partition=key, points=points))
    if not partitions:
        return None
    return LateArrivalDoc(unit=unit, by_age=by_age(partitions, letter), partitions=partitions)


def _point(at: int, r: VerdictRecord, letter: str) -> ArrivalPointDoc:
    keys = r.metrics.keys if isinstance(r.metrics.keys, KeyDiffDoc) else None
    return ArrivalPointDoc(
        age=at,
        label=f"{letter}+{at}",
        validation_id=r.validation_id or "",
        observed_at=r.observed_at.isoformat() if r.observed_at else None,
        live_rows=r.metrics.live_rows,
        shadow_rows=r.metrics.shadow_rows,
        added=keys.added if keys else None,
        removed=keys.removed if keys else None,
        changed=keys.changed if keys else None,
    )


def by_age(partitions: Sequence[ArrivalPartitionDoc], letter: str) -> list[ArrivalAgeDoc]:
    """Each age over the partitions seen at it. Its present share is over those also seen
    later (a partition whose newest validation is at this age has nothing to be short of), so
    the newest age has none."""
    out = []
    for at in sorted({p.age for part in partitions for p in part.points}):
        here = [(pt, part.points[-1]) for part in partitions for pt in part.points if pt.age == at]
        later = [(pt, newest) for pt, newest in here if newest.age > at]
        final = sum(newest.shadow_rows or 0 for _, newest in later)
        out.append(
            ArrivalAgeDoc(
                age=at,
                label=f"{letter}+{at}",
                partitions=len(here),
                shadow_rows=sum(pt.shadow_rows or 0 for pt, _ in here),
                added=_total(pt.added for pt, _ in here),
                removed=_total(pt.removed for pt, _ in here),
                changed=_total(pt.changed for pt, _ in here),
                present_share=sum(pt.shadow_rows or 0 for pt, _ in later) / final if final else None,
                compared=len(later),
            )
        )
    return out


def _total(values: Iterable[int | None]) -> int | None:
    """The sum of the counts known (None: none is, a table without keys)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None
