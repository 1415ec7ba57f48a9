"""Verdict rows: each partition's validation outcome, bound to the versions it was computed from."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from shadow_backfill.state.db import Db, aware, upsert, utcnow
from shadow_backfill.state.schema import verdicts
from shadow_backfill.vocabulary import Check, CheckStatus, reasons


@dataclass(frozen=True)
class VerdictRecord:
    partition: str
    verdict: CheckStatus
    checks: list[Check]
    metrics: dict[str, Any]
    shadow_version: int | None
    partition_version: int | None
    live_version: int | None
    validation_id: str | None
    validated_at: dt.datetime | None

    @property
    def reasons(self) -> list[Check]:
        """The checks that made the verdict worse than pass, failures first."""
        return reasons(self.checks)


class VerdictStore(Db):
    """Mixed into StateStore: verdicts bound to the versions they were computed from."""

    def save_verdicts(self, shadow_table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        now = utcnow()
        values = [
            {
                "shadow_table": shadow_table,
                "partition": r["partition"],
                "verdict": r["verdict"],
                "checks": json.dumps([_stored(c) for c in r["checks"]], default=str),
                "metrics": json.dumps(r["metrics"], default=str),
                "shadow_version": r.get("shadow_version"),
                "partition_version": r.get("partition_version"),
                "live_version": r.get("live_version"),
                "validation_id": r.get("validation_id"),
                "validated_at": now,
            }
            for r in rows
        ]
        stmt = upsert(self.engine, verdicts).values(values)
        update_cols = {c: stmt.excluded[c] for c in values[0] if c not in ("shadow_table", "partition")}
        with self._begin() as c:
            c.execute(stmt.on_conflict_do_update(index_elements=["shadow_table", "partition"], set_=update_cols))

    def verdicts(self, shadow_table: str) -> dict[str, VerdictRecord]:
        with self._connect() as c:
            rows = c.execute(select(verdicts).where(verdicts.c.shadow_table == shadow_table)).mappings().all()
        return {
            r["partition"]: VerdictRecord(
                partition=r["partition"],
                verdict=CheckStatus(r["verdict"]),
                checks=[Check.from_dict(c) for c in json.loads(r["checks"])],
                metrics=json.loads(r["metrics"]),
                shadow_version=r["shadow_version"],
                partition_version=r["partition_version"],
                live_version=r["live_version"],
                validation_id=r["validation_id"],
                validated_at=aware(r["validated_at"]),
            )
            for r in rows
        }


def _stored(check: Check | Mapping[str, Any]) -> Mapping[str, Any]:
    """Checks are stored in their JSON form, whether handed over typed or already as dicts."""
    return check.as_dict() if isinstance(check, Check) else check
