"""Verdict rows: each partition's validation outcome, bound to the versions it was computed from."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select

from shadow_backfill.document import MetricsDoc
from shadow_backfill.errors import StateStoreError
from shadow_backfill.state.db import Db, aware, upsert, utcnow
from shadow_backfill.state.schema import verdicts
from shadow_backfill.vocabulary import Check, CheckStatus, reasons


@dataclass(frozen=True)
class VerdictRecord:
    """One partition's stored verdict: its checks, its published metrics (report.json's form),
    and the versions it was computed from (a promotion binds to them)."""

    partition: str
    verdict: CheckStatus
    checks: list[Check]
    metrics: MetricsDoc
    shadow_version: int | None = None
    partition_version: int | None = None
    live_version: int | None = None
    validation_id: str | None = None
    validated_at: dt.datetime | None = None  # set by the store when saved

    @property
    def reasons(self) -> list[Check]:
        """The checks that made the verdict worse than pass, failures first."""
        return reasons(self.checks)


class VerdictStore(Db):
    """Mixed into StateStore: verdicts bound to the versions they were computed from."""

    def save_verdicts(self, shadow_table: str, records: Sequence[VerdictRecord]) -> None:
        """Store each partition's verdict, replacing the one before (validated now)."""
        if not records:
            return
        now = utcnow()
        values = [
            {
                "shadow_table": shadow_table,
                "partition": r.partition,
                "verdict": str(r.verdict),
                "checks": json.dumps([c.as_dict() for c in r.checks], default=str),
                "metrics": json.dumps(r.metrics.as_json(), default=str),
                "shadow_version": r.shadow_version,
                "partition_version": r.partition_version,
                "live_version": r.live_version,
                "validation_id": r.validation_id,
                "validated_at": now,
            }
            for r in records
        ]
        stmt = upsert(self.engine, verdicts).values(values)
        update_cols = {c: stmt.excluded[c] for c in values[0] if c not in ("shadow_table", "partition")}
        with self._begin() as c:
            c.execute(stmt.on_conflict_do_update(index_elements=["shadow_table", "partition"], set_=update_cols))

    def verdicts(self, shadow_table: str) -> dict[str, VerdictRecord]:
        rows = self._rows(select(verdicts).where(verdicts.c.shadow_table == shadow_table))
        return {
            r["partition"]: VerdictRecord(
                partition=r["partition"],
                verdict=CheckStatus(r["verdict"]),
                checks=[Check.from_dict(c) for c in json.loads(r["checks"])],
                metrics=_metrics(r["partition"], r["metrics"]),
                shadow_version=r["shadow_version"],
                partition_version=r["partition_version"],
                live_version=r["live_version"],
                validation_id=r["validation_id"],
                validated_at=aware(r["validated_at"]),
            )
            for r in rows
        }


def _metrics(partition: str, stored: str) -> MetricsDoc:
    """A stored verdict's metrics, typed; one line naming the partition if they do not read."""
    try:
        return MetricsDoc.model_validate(json.loads(stored))
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise StateStoreError(f"the stored metrics of partition {partition!r} do not read ({first})") from None
