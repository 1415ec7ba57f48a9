"""Promotion bookkeeping: the locks, the audit trail on each commit, and the audit rows.

A promotion or rollback is recorded twice: as properties on the live commit itself (Iceberg
snapshot properties, Delta userMetadata) and as a row in the state store. The commit is the
source of truth: a process killed between the two leaves the properties, and `reconcile` puts
the row back from them. The property keys below are on users' existing commits, so their
values never change; the same constants write them and read them back.
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from pyspark.sql import DataFrame

from shadow_backfill import testpoints
from shadow_backfill.errors import RefusedError
from shadow_backfill.formats.base import PARTITIONS_PROPERTY, Commit, LiveChangedError, TableFormat, Written
from shadow_backfill.schema import conform
from shadow_backfill.state import PROMOTE, PromotionRecord, StateStore, current_user, lock_owner, utcnow

KIND = "shadow-backfill.kind"
PROMOTION_ID = "shadow-backfill.promotion-id"
CONFIG_HASH = "shadow-backfill.config-hash"
CODE_FINGERPRINT = "shadow-backfill.code-fingerprint"
LIVE_VERSION_BEFORE = "shadow-backfill.live-version-before"
USER = "shadow-backfill.user"
HOST = "shadow-backfill.host"
SHADOW_TABLE = "shadow-backfill.shadow-table"
SHADOW_VERSIONS = "shadow-backfill.shadow-versions"
VALIDATION_IDS = "shadow-backfill.validation-ids"
UNDOES = "shadow-backfill.undoes"
RESTORES_FOR = "shadow-backfill.restores-for"
SCHEMA_CHANGE = "shadow-backfill.schema-change"
APPROVED_BY = "shadow-backfill.approved-by"
APPROVAL_REASON = "shadow-backfill.approval-reason"

LOCK_TTL_S = 3600.0


@contextmanager
def live_partition_locks(store: StateStore, live_table: str, keys: Sequence[str], action_id: str) -> Iterator[None]:
    """Hold every live partition a promotion or rollback will write, or refuse at once.

    Two writers of overlapping partitions: exactly one gets the locks; the other fails cleanly
    before reading or writing anything, and names who holds them.
    """
    owner = lock_owner(action_id)
    resources = [f"promote:{live_table}:{k}" for k in keys]
    _, others = store.acquire(resources, owner, LOCK_TTL_S)
    try:
        if others:
            holders = sorted(set(others.values()))
            parts = [r.rsplit(":", 1)[-1] for r in sorted(others)][:5]
            raise RefusedError(
                f"partitions {parts} of {live_table} are being written by another promotion or rollback "
                f"({', '.join(holders)}); nothing was written, try again when it has finished"
            )
        yield
    finally:
        store.release(owner)


def audit_properties(rec: PromotionRecord) -> dict[str, str]:
    """The audit trail on the commit itself; `record_from_commit` reads it back."""
    props = {
        KIND: rec.kind,
        PROMOTION_ID: rec.id,
        CONFIG_HASH: rec.config_hash or "",
        CODE_FINGERPRINT: rec.code_fingerprint or "",
        LIVE_VERSION_BEFORE: str(rec.live_version_before),
        USER: rec.user or "",
        HOST: rec.host or "",
    }
    if rec.shadow_table:
        props[SHADOW_TABLE] = rec.shadow_table
        props[SHADOW_VERSIONS] = ",".join(sorted({str(v) for v in rec.shadow_versions.values()}))
        props[VALIDATION_IDS] = ",".join(rec.validation_ids)
    if rec.target:
        props[UNDOES] = rec.target
    if rec.schema_change:
        props[SCHEMA_CHANGE] = ",".join(rec.schema_change)
    if rec.approved_by is not None:
        props[APPROVED_BY] = rec.approved_by
        props[APPROVAL_REASON] = rec.approval_reason or ""
    return props


def record_from_commit(commit: Commit, live_table: str) -> PromotionRecord | None:
    """The promotion or rollback a live commit's audit properties describe; None if not ours.

    The commit keeps only the set of shadow versions, so per-partition versions come back only
    when there was one.
    """
    props = commit.properties
    pid = props.get(PROMOTION_ID)
    if not pid:
        return None
    before = props.get(LIVE_VERSION_BEFORE, "None")
    bound = int(before) if before not in ("None", "") else None
    versions = [int(v) for v in _listed(props, SHADOW_VERSIONS)]
    keys = _listed(props, PARTITIONS_PROPERTY)
    return PromotionRecord(
        id=pid,
        kind=props.get(KIND, PROMOTE),
        live_table=live_table,
        shadow_table=props.get(SHADOW_TABLE),
        partitions=keys,
        live_version_before=commit.parent if commit.parent is not None else bound,
        live_version_after=commit.version,
        shadow_versions={k: versions[0] for k in keys} if len(versions) == 1 else {},
        validation_ids=_listed(props, VALIDATION_IDS),
        target=props.get(UNDOES),
        config_hash=props.get(CONFIG_HASH),
        code_fingerprint=props.get(CODE_FINGERPRINT),
        user=props.get(USER),
        host=props.get(HOST),
        at=dt.datetime.fromtimestamp(commit.timestamp_ms / 1000, dt.timezone.utc) if commit.timestamp_ms else utcnow(),
        schema_change=_listed(props, SCHEMA_CHANGE),
        approved_by=props.get(APPROVED_BY),
        approval_reason=props.get(APPROVAL_REASON),
    )


def _listed(props: Mapping[str, str], key: str) -> list[str]:
    return [v for v in props.get(key, "").split(",") if v]


def reconcile(
    fmt: TableFormat, store: StateStore, live_table: str, history: Sequence[Commit] | None = None
) -> list[str]:
    """Record promotions/rollbacks that reached the live table but not the state store, so a
    process killed between its commit and its audit row loses nothing. Returns the ids added."""
    known = {p.id for p in store.promotions(live_table)}
    added = []
    for c in fmt.history(live_table) if history is None else history:
        rec = record_from_commit(c, live_table)
        if rec is None or rec.id in known:
            continue
        store.record_promotion(rec)
        known.add(rec.id)
        added.append(rec.id)
    return added


def write_and_record(
    fmt: TableFormat, store: StateStore, rec: PromotionRecord, df: DataFrame
) -> tuple[PromotionRecord, dict[str, Commit]]:
    """One overwrite of `rec.partitions` in live bound to `rec.live_version_before`, then the
    audit record with the commit's real parent.

    Returns the record and the partitions another writer touched after the bound version on a
    format that could only tell after committing: those are put back as they were just before
    our commit (the other writer's data kept) and left out of the record.
    """
    rec = replace(rec, user=current_user(), host=socket.gethostname())
    lost: dict[str, Commit] = {}
    try:
        written = fmt.commit_partitions(
            rec.live_table, df, rec.partitions, audit_properties(rec), rec.live_version_before
        )
        after = written.version
    except LiveChangedError as err:
        if err.written is None:
            raise
        written, lost = err.written, err.hits
        after = _restore_lost(fmt, rec, written, sorted(lost))
    rec = replace(
        rec,
        partitions=[k for k in rec.partitions if k not in lost],
        shadow_versions={k: v for k, v in rec.shadow_versions.items() if k not in lost},
        live_version_before=written.parent,
        live_version_after=after,
    )
    testpoints.reached(f"{rec.kind}.after_commit")  # e.g. testpoints.PROMOTE_AFTER_COMMIT
    store.record_promotion(rec)
    return rec, lost


def _restore_lost(fmt: TableFormat, rec: PromotionRecord, written: Written, keys: list[str]) -> int:
    """Put `keys` back as they were right before our commit, which held the other writer's data."""
    df = conform(fmt.read_partitions(rec.live_table, keys, written.parent), fmt.schema(rec.live_table))
    return fmt.overwrite_partitions(rec.live_table, df, keys, {RESTORES_FOR: rec.id})
