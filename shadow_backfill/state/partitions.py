"""Runs and the partitions they write: pending, running, written or failed.

Each transition is one short transaction, so a killed process leaves at worst a partition
marked `running`, which the next run treats as not written and redoes (the write itself is an
idempotent partition overwrite).
"""

from __future__ import annotations

import datetime as dt
import json
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Update, select, update

from shadow_backfill.records import PartitionRecord
from shadow_backfill.state.db import Db, aware, current_user, from_row, upsert, utcnow
from shadow_backfill.state.schema import partitions, runs
from shadow_backfill.vocabulary import PartitionStatus, RunStatus


def _partition(r: Any) -> PartitionRecord:
    return from_row(
        PartitionRecord,
        r,
        status=PartitionStatus(r["status"]),
        attempts=r["attempts"] or 0,
        started_at=aware(r["started_at"]),
        finished_at=aware(r["finished_at"]),
    )


def _moved(shadow_table: str, keys: Iterable[str], status: PartitionStatus, run_id: str, now: dt.datetime) -> Update:
    """Partitions moved to `status`: every transition names the run that moved them and when,
    and adds its own `.values`."""
    chosen = partitions.c.shadow_table == shadow_table, partitions.c.partition.in_(list(keys))
    return update(partitions).where(*chosen).values(status=status, run_id=run_id, updated_at=now)


class Runs(Db):
    """Mixed into StateStore: who ran what, when, with which config and code."""

    def start_run(
        self,
        run_id: str,
        *,
        shadow_table: str,
        live_table: str,
        config_hash: str,
        code_fingerprint: str,
        args: Mapping[str, Any],
    ) -> None:
        with self._begin() as c:
            c.execute(
                runs.insert().values(
                    run_id=run_id,
                    shadow_table=shadow_table,
                    live_table=live_table,
                    config_hash=config_hash,
                    code_fingerprint=code_fingerprint,
                    status=RunStatus.RUNNING,
                    user=current_user(),
                    host=socket.gethostname(),
                    args=json.dumps(dict(args), default=str),
                    started_at=utcnow(),
                )
            )

    def finish_run(self, run_id: str, status: RunStatus) -> None:
        with self._begin() as c:
            c.execute(update(runs).where(runs.c.run_id == run_id).values(status=status, finished_at=utcnow()))


class Partitions(Db):
    """Mixed into StateStore: each shadow partition's state, one transaction per transition."""

    def records(self, shadow_table: str, keys: Iterable[str] | None = None) -> dict[str, PartitionRecord]:
        q = select(partitions).where(partitions.c.shadow_table == shadow_table)
        wanted = set(keys) if keys is not None else None
        return {r["partition"]: _partition(r) for r in self._rows(q) if wanted is None or r["partition"] in wanted}

    def mark_pending(self, shadow_table: str, keys: Sequence[str], run_id: str) -> None:
        """Register partitions a run intends to write, without touching ones already known."""
        if not keys:
            return
        now = utcnow()
        with self._begin() as c:
            stmt = upsert(self.engine, partitions).values(
                [
                    {
                        "shadow_table": shadow_table,
                        "partition": k,
                        "status": PartitionStatus.PENDING,
                        "run_id": run_id,
                        "attempts": 0,
                        "updated_at": now,
                    }
                    for k in keys
                ]
            )
            c.execute(stmt.on_conflict_do_nothing(index_elements=["shadow_table", "partition"]))

    def mark_running(self, shadow_table: str, keys: Sequence[str], run_id: str, fingerprint: str) -> None:
        now = utcnow()
        with self._begin() as c:
            c.execute(
                _moved(shadow_table, keys, PartitionStatus.RUNNING, run_id, now).values(
                    code_fingerprint=fingerprint,
                    error=None,
                    started_at=now,
                    finished_at=None,
                    attempts=partitions.c.attempts + 1,
                )
            )

    def mark_written(
        self,
        shadow_table: str,
        rows_by_key: Mapping[str, int],
        version: int,
        run_id: str,
        fingerprint: str,
        duration_s: float,
    ) -> None:
        now = utcnow()
        with self._begin() as c:
            for k, n in rows_by_key.items():
                c.execute(
                    _moved(shadow_table, [k], PartitionStatus.WRITTEN, run_id, now).values(
                        rows=n,
                        shadow_version=version,
                        code_fingerprint=fingerprint,
                        error=None,
                        finished_at=now,
                        duration_s=duration_s,
                    )
                )

    def mark_failed(self, shadow_table: str, keys: Sequence[str], error: str, run_id: str) -> None:
        now = utcnow()
        with self._begin() as c:
            c.execute(
                _moved(shadow_table, keys, PartitionStatus.FAILED, run_id, now).values(
                    error=error[:4000], finished_at=now
                )
            )
