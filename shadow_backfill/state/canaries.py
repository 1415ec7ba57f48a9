"""Canary steps in the store: each written before the canary's commit, so a kill between that
commit and the canary's checks on live leaves a `pending` row the next promotion finds."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update

from shadow_backfill.errors import RefusedError, ShadowBackfillError, UsageError
from shadow_backfill.records import plain
from shadow_backfill.state.db import Db, aware, from_row, stamped, utcnow
from shadow_backfill.state.schema import canaries

PENDING, CHECKED, ROLLED_BACK, NOT_COMMITTED = "pending", "checked", "rolled back", "not committed"


@dataclass(frozen=True, kw_only=True)
class CanaryRecord:
    """A canary step: its promotion id, the partitions it promotes, the row counts its check on
    live expects, and how far it got (`state`)."""

    id: str
    live_table: str
    shadow_table: str | None
    partitions: list[str]
    rows: dict[str, int | None] = field(default_factory=dict)
    state: str = PENDING
    user: str | None = None
    host: str | None = None
    at: dt.datetime | None = None
    finished_at: dt.datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return plain(self)


def _canary(r: Any) -> CanaryRecord:
    return from_row(
        CanaryRecord,
        r,
        partitions=json.loads(r["partitions"]),
        rows=json.loads(r["rows"] or "{}"),
        at=aware(r["at"]),
        finished_at=aware(r["finished_at"]),
    )


class CanaryTrail(Db):
    """Mixed into StateStore: the canary steps, pending until their checks on live have run."""

    def begin_canary(self, rec: CanaryRecord) -> None:
        """Record a canary as pending, before its commit."""
        with self._begin() as c:
            c.execute(canaries.insert().values(stamped(rec, ("partitions", "rows"), state=PENDING, finished_at=None)))

    def end_canary(self, canary_id: str, state: str) -> None:
        """A canary's checks ran (`checked`, `rolled back`), or its commit never happened."""
        with self._begin() as c:
            c.execute(update(canaries).where(canaries.c.id == canary_id).values(state=state, finished_at=utcnow()))

    def unchecked_canaries(self, live_table: str) -> list[CanaryRecord]:
        """The canaries of `live_table` still pending, oldest first."""
        q = select(canaries).where(canaries.c.live_table == live_table, canaries.c.state == PENDING)
        return [_canary(r) for r in self._rows(q.order_by(canaries.c.at))]


def too_few(n: int, count: int, *, name: str = "--canary", refused: bool = False) -> ShadowBackfillError:
    """`--canary N` with nothing left for after the canary's checks: a canary of every partition
    would be an unchecked promotion of them all, so it is a usage error, found before anything
    is written. A `backfill` whose validation passed too few for `promote.canary` (`refused`)
    refuses its promotion after writing the shadow: a refusal, exit 1."""
    kind = RefusedError if refused else UsageError
    return kind(
        f"{name} {n}: only {count} partition(s) to promote, and a canary must leave at least one "
        f"for after its checks; nothing was promoted (use a canary under {count}, or none)"
    )
