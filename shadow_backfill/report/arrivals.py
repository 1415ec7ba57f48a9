"""The late-arrival view: how a nightly window's partitions filled up with age, read from the
metric history (pure code: the state store's records in, report.json's document out).

A nightly `--last N --lag D --force` job recomputes and validates each partition on several
nights. Each validation stores when it read the data and the partition's age then
(`windows.partition_age`: D+1 is the day after the partition's own; the clock, or
`SHADOW_BACKFILL_NOW` when pinned; not `--as-of`, since a catch-up run of last Tuesday reads
today's data). Against live, which holds what an earlier night promoted (or the original
write), the keys only in shadow are the rows that arrived since; a partition's rows at an age
over its rows at the oldest age seen are the share that was there by then, which is what a lag
is chosen from ("98.7% of rows are there by D+2").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from shadow_backfill.document import (
    ArrivalAgeDoc,
    ArrivalPartitionDoc,
    ArrivalPointDoc,
    KeyDiffDoc,
    LateArrivalDoc,
)
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.state import VerdictRecord

Unit = Literal["day", "hour", "month"]
# a key's length -> its period's unit and the letter of its label (a key's shape names its
# period: the config's granularity may be the default where a table's transform says hours)
UNITS: dict[int, tuple[Unit, str]] = {10: ("day", "D"), 13: ("hour", "H"), 7: ("month", "M")}


def late_arrivals(histories: Mapping[str, Sequence[VerdictRecord]], scheme: PartitionScheme) -> LateArrivalDoc | None:
    """The view over the partitions whose data was read at two ages or more (None: there are
    none, as after a one-off backfill). A validation of a partition version already seen (a
    rerun without `--force`: the same data, read again later) is not a new point, and at an
    age seen twice the first validation counts (a rerun the same night compares against what
    the first one promoted)."""
    partitions = []
    for key in scheme.sort(histories):
        at_age: dict[int, VerdictRecord] = {}
        versions: set[int | None] = set()
        for r in histories[key]:  # oldest first
            if r.age is None or r.age < 0 or r.metrics.rows is None or r.age in at_age:
                continue
            if r.partition_version is not None and r.partition_version in versions:
                continue
            versions.add(r.partition_version)
            at_age[r.age] = r
        if len(at_age) >= 2:
            points = [_point(r, _letter(key)) for _, r in sorted(at_age.items())]
            partitions.append(ArrivalPartitionDoc(partition=key, points=points))
    if not partitions:
        return None
    unit, letter = UNITS.get(len(partitions[0].partition), ("day", "D"))
    ages = by_age(partitions, letter)
    return LateArrivalDoc(unit=unit, horizon=ages[-1].label, by_age=ages, partitions=partitions)


def _letter(key: str) -> str:
    return UNITS.get(len(key), ("day", "D"))[1]


def _point(r: VerdictRecord, letter: str) -> ArrivalPointDoc:
    keys = r.metrics.keys if isinstance(r.metrics.keys, KeyDiffDoc) else None
    return ArrivalPointDoc(
        age=r.age or 0,
        label=f"{letter}+{r.age}",
        validation_id=r.validation_id or "",
        observed_at=r.observed_at.isoformat() if r.observed_at else None,
        live_rows=r.metrics.live_rows,
        shadow_rows=r.metrics.shadow_rows,
        added=keys.added if keys else None,
        removed=keys.removed if keys else None,
        changed=keys.changed if keys else None,
    )


def by_age(partitions: Sequence[ArrivalPartitionDoc], letter: str) -> list[ArrivalAgeDoc]:
    """Each age over the partitions seen at it. Its present share is over those also seen at
    the oldest age any partition reached (the horizon), against their rows there: one
    reference for every age, so a partition with a short history does not count as complete.
    At the horizon itself the share is 1 by definition."""
    horizon = max(part.points[-1].age for part in partitions)
    out = []
    for at in sorted({p.age for part in partitions for p in part.points}):
        here = [(pt, part.points[-1]) for part in partitions for pt in part.points if pt.age == at]
        held = [(pt, last) for pt, last in here if last.age == horizon]
        final = sum(last.shadow_rows or 0 for _, last in held)
        out.append(
            ArrivalAgeDoc(
                age=at,
                label=f"{letter}+{at}",
                partitions=len(here),
                shadow_rows=sum(pt.shadow_rows or 0 for pt, _ in here),
                added=_total(pt.added for pt, _ in here),
                removed=_total(pt.removed for pt, _ in here),
                changed=_total(pt.changed for pt, _ in here),
                present_share=sum(pt.shadow_rows or 0 for pt, _ in held) / final if final else None,
                compared=len(held),
            )
        )
    return out


def _total(values: Iterable[int | None]) -> int | None:
    """The sum of the counts known (None: none is, a table without keys)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None
