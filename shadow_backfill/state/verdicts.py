"""Verdict rows: each partition's validation outcome, bound to the versions it was computed from."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, inspect, select

from shadow_backfill.document import MetricsDoc
from shadow_backfill.errors import StateStoreError
from shadow_backfill.state.db import Db, aware, upsert, utcnow
from shadow_backfill.state.schema import verdict_history, verdicts
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
    observed_at: dt.datetime | None = None  # when the data was seen (history only: late arrivals)
    age: int | None = None  # the partition's age then, in its periods (history only)

    @property
    def reasons(self) -> list[Check]:
        """The checks that made the verdict worse than pass, failures first."""
        return reasons(self.checks)


class VerdictStore(Db):
    """Mixed into StateStore: verdicts bound to the versions they were computed from."""

    def save_verdicts(self, shadow_table: str, records: Sequence[VerdictRecord], keep_days: int | None = None) -> None:
        """Store each partition's verdict, replacing the one before (validated now), and add its
        measurements to the partition's history, which keeps `keep_days` days (None: all)."""
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
            self._add_history(c, shadow_table, values, [(r.observed_at, r.age) for r in records], keep_days)

    def _add_history(
        self,
        c: Connection,
        shadow_table: str,
        values: list[dict[str, Any]],
        observed: list[tuple[dt.datetime | None, int | None]],
        keep_days: int | None,
    ) -> None:
        """The same rows, kept per validation, without the values of the data (samples,
        histograms, categories, extremes: `_numbers_only`); then the rows older than `keep_days`
        pruned, in the verdicts' transaction."""
        rows = []
        for v, (seen, age) in zip(values, observed, strict=True):
            metrics = _numbers_only(json.loads(v["metrics"]))
            rows.append(
                {
                    **{k: v[k] for k in ("shadow_table", "partition", "verdict", "shadow_version", "live_version")},
                    "partition_version": v["partition_version"],
                    "validation_id": v["validation_id"] or f"unnamed-{uuid.uuid4().hex[:12]}",
                    "metrics": json.dumps(metrics, default=str),
                    "validated_at": v["validated_at"],
                    "observed_at": seen.astimezone(dt.timezone.utc) if seen is not None else None,
                    "age": age,
                }
            )
        stmt = upsert(self.engine, verdict_history).values(rows)
        keys = ["shadow_table", "partition", "validation_id"]
        update = {k: stmt.excluded[k] for k in rows[0] if k not in keys}
        c.execute(stmt.on_conflict_do_update(index_elements=keys, set_=update))
        if keep_days is not None:
            cutoff = values[0]["validated_at"] - dt.timedelta(days=keep_days)
            table = verdict_history.c
            c.execute(delete(verdict_history).where(table.shadow_table == shadow_table, table.validated_at < cutoff))

    def metric_history(self, shadow_table: str, partition: str) -> list[VerdictRecord]:
        """The partition's verdict and measurements at each validation kept, oldest first (no
        checks: the history keeps what was measured)."""
        return self.metric_histories(shadow_table, partition).get(partition, [])

    def metric_histories(self, shadow_table: str, partition: str | None = None) -> dict[str, list[VerdictRecord]]:
        """`metric_history` of every partition of the shadow (or of `partition`), in one query."""
        if not getattr(self, "migrated", True):  # opened as it is: an older store has no history
            with self._connect() as c:
                if not inspect(c).has_table(verdict_history.name):
                    return {}
        table = verdict_history.c
        query = select(*self._present(verdict_history)).where(table.shadow_table == shadow_table)
        if partition is not None:
            query = query.where(table.partition == partition)
        rows = self._rows(query.order_by(table.validated_at, table.validation_id))
        out: dict[str, list[VerdictRecord]] = {}
        for r in rows:
            out.setdefault(r["partition"], []).append(_record(r))
        return out

    def verdicts(self, shadow_table: str) -> dict[str, VerdictRecord]:
        rows = self._rows(select(verdicts).where(verdicts.c.shadow_table == shadow_table))
        return {r["partition"]: _record(r, [Check.from_dict(c) for c in json.loads(r["checks"])]) for r in rows}


# What a column's history keeps: counts, rates and moments; not the data's own values.
_DATA_VALUES = ("hist", "categories", "new", "vanished", "shadow_min", "shadow_max", "live_min", "live_max")


def _numbers_only(metrics: dict[str, Any]) -> dict[str, Any]:
    """A validation's metrics as the history keeps them for a year: what moved (rows, keys,
    null rates, means, change metrics), not values of the data a report quotes for a day, and
    a few hundred bytes per column rather than histograms and category lists."""
    metrics.pop("samples", None)
    for column in (metrics.get("columns") or {}).values():
        for name in _DATA_VALUES:
            column.pop(name, None)
    return metrics


def _record(r: Any, checks: Sequence[Check] = ()) -> VerdictRecord:
    """A verdict row, or a history row (no checks: the history keeps what was measured), typed."""
    return VerdictRecord(
        partition=r["partition"],
        verdict=CheckStatus(r["verdict"]),
        checks=list(checks),
        metrics=_metrics(r["partition"], r["metrics"]),
        shadow_version=r["shadow_version"],
        partition_version=r["partition_version"],
        live_version=r["live_version"],
        validation_id=r["validation_id"],
        validated_at=aware(r["validated_at"]),
        observed_at=aware(r.get("observed_at")),  # only the history has these (not an older one's)
        age=r.get("age"),
    )


def _metrics(partition: str, stored: str) -> MetricsDoc:
    """A stored verdict's metrics, typed; one line naming the partition if they do not read."""
    try:
        return MetricsDoc.model_validate(json.loads(stored))
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise StateStoreError(f"the stored metrics of partition {partition!r} do not read ({first})") from None
