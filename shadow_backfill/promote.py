"""Promotion: the passing shadow partitions reach the live table in one atomic commit.

The data promoted is read from the shadow table *as of the version that was validated*, so
what lands in live is exactly what passed. Before writing, every partition is re-checked: its
verdict must be pass (or warn, if allowed), no commit may have touched it in the shadow table
after validation, and none may have touched the same live partition after validation read it.
Any refusal names the partitions and the reason; nothing is written unless all checks hold.
"""

from __future__ import annotations

import datetime as dt
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import RefusedError, TableNotFoundError, UsageError
from shadow_backfill.formats import TableFormat
from shadow_backfill.formats.base import PARTITIONS_PROPERTY, Commit, LiveChangedError, Written
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.state import PromotionRecord, StateStore, VerdictRecord, current_user, lock_owner, utcnow


@dataclass
class PromotionPlan:
    """What a promotion would do; `refused` holds partition -> reason for those left out."""

    partitions: list[str]
    refused: dict[str, str]
    live_version: int | None
    shadow_versions: dict[str, int]
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    validation_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partitions": self.partitions,
            "refused": self.refused,
            "live_version_expected": self.live_version,
            "shadow_versions": self.shadow_versions,
            "rows": self.rows,
        }


_UNREAD: Any = object()


def new_id(kind: str) -> str:
    return f"{kind}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def audit_properties(rec: PromotionRecord) -> dict[str, str]:
    """The audit trail on the commit itself (Iceberg snapshot properties, Delta userMetadata)."""
    props = {
        "shadow-backfill.kind": rec.kind,
        "shadow-backfill.promotion-id": rec.id,
        "shadow-backfill.config-hash": rec.config_hash or "",
        "shadow-backfill.code-fingerprint": rec.code_fingerprint or "",
        "shadow-backfill.live-version-before": str(rec.live_version_before),
        "shadow-backfill.user": rec.user or "",
        "shadow-backfill.host": rec.host or "",
    }
    if rec.shadow_table:
        props["shadow-backfill.shadow-table"] = rec.shadow_table
        props["shadow-backfill.shadow-versions"] = ",".join(sorted({str(v) for v in rec.shadow_versions.values()}))
        props["shadow-backfill.validation-ids"] = ",".join(rec.validation_ids)
    if rec.target:
        props["shadow-backfill.undoes"] = rec.target
    return props


class Promoter:
    def __init__(
        self,
        config: BackfillConfig,
        spark: SparkSession,
        store: StateStore,
        fmt: TableFormat,
        scheme: PartitionScheme,
        code_fingerprint: str | None = None,
    ) -> None:
        self.config = config
        self.spark = spark
        self.store = store
        self.fmt = fmt
        self.scheme = scheme
        self.code_fingerprint = code_fingerprint
        self._histories: dict[str, list[Commit]] | None = None
        # Called between the plan and the commit (tests inject another writer's commit here).
        self.before_commit: Callable[[PromotionPlan], None] | None = None

    def _history(self, table: str) -> list[Commit]:
        """A table's commits, read once per promotion (each read is a Spark job)."""
        if self._histories is None:
            return self.fmt.history(table)
        if table not in self._histories:
            self._histories[table] = self.fmt.history(table)
        return self._histories[table]

    def plan(
        self, partitions: Sequence[str] | None = None, *, allow_warn: bool = False, live_version: Any = _UNREAD
    ) -> PromotionPlan:
        """What a promotion would do now. `live_version`: the live version read before the
        history was (the version the commit will be bound to)."""
        cfg = self.config
        if live_version is _UNREAD:
            live_version = self._live_version()
        self.fmt.check_distinct(cfg.live_table, cfg.shadow)
        verdicts = self.store.verdicts(cfg.shadow)
        records = self.store.records(cfg.shadow)
        if partitions is None:
            keys = sorted(verdicts, key=self.scheme.parse_key)
            if not keys:
                raise UsageError(f"nothing to promote: no partition of {cfg.shadow} has been validated")
        else:
            keys = [self.scheme.normalize(p) for p in partitions]
            unknown = [k for k in keys if k not in verdicts and k not in records]
            if unknown:
                raise UsageError(f"unknown partition(s) {unknown[:5]}: never recomputed into {cfg.shadow}")
        if not self.fmt.exists(cfg.shadow):
            raise RefusedError(
                f"shadow table {cfg.shadow!r} does not exist (dropped after validation?): run and validate again"
            )
        refused: dict[str, str] = {}
        ok: list[str] = []
        for k in keys:
            v = verdicts.get(k)
            if v is None:
                refused[k] = "not validated"
            elif v.verdict == "fail":
                refused[k] = "verdict fail: " + "; ".join(c["message"] for c in v.reasons[:2])
            elif v.verdict == "warn" and not allow_warn:
                refused[k] = "verdict warn (set promote.allow_warn or pass --allow-warn): " + "; ".join(
                    c["message"] for c in v.reasons[:2]
                )
            elif k in records and records[k].shadow_version != v.partition_version:
                refused[k] = (
                    f"shadow partition rewritten after validation (validated commit {v.partition_version}, "
                    f"now {records[k].shadow_version}): validate again"
                )
            else:
                ok.append(k)
        self._refuse_changed(ok, verdicts, refused)
        ok = [k for k in ok if k not in refused]
        return PromotionPlan(
            partitions=ok,
            refused=refused,
            live_version=live_version,
            shadow_versions={k: sv for k in ok if (sv := verdicts[k].shadow_version) is not None},
            rows={k: verdicts[k].metrics.get("rows", {}) for k in ok},
            validation_ids=sorted({verdicts[k].validation_id or "" for k in ok} - {""}),
        )

    def _live_version(self) -> int | None:
        if not self.fmt.exists(self.config.live_table):
            raise TableNotFoundError(f"live table {self.config.live_table!r} does not exist ({self.config.format})")
        return self.fmt.current_version(self.config.live_table)

    def _refuse_changed(self, keys: list[str], verdicts: dict[str, VerdictRecord], refused: dict[str, str]) -> None:
        """Refuse partitions that a later commit touched, in shadow or in live, since validation."""
        cfg = self.config
        for table, attr, side in ((cfg.shadow, "shadow_version", "shadow"), (cfg.live_table, "live_version", "live")):
            by_version: dict[int | None, list[str]] = {}
            for k in keys:
                by_version.setdefault(getattr(verdicts[k], attr), []).append(k)
            for since, ks in by_version.items():
                for commit, hit in self.fmt.commits_touching(table, since, ks, self._history(table)):
                    for k in hit:
                        refused.setdefault(k, _changed_reason(side, commit))

    def promote(
        self, partitions: Sequence[str] | None = None, *, allow_warn: bool = False, strict: bool = False
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        """Promote the plan's partitions in one commit. `strict`: refuse everything if any
        requested partition is refused (the CLI uses it when partitions are named explicitly)."""
        promotion_id = new_id("promote")
        candidates = (
            [self.scheme.normalize(p) for p in partitions]
            if partitions is not None
            else sorted(self.store.verdicts(self.config.shadow), key=self.scheme.parse_key)
        )
        with live_partition_locks(self.store, self.config.live_table, candidates, promotion_id):
            self._histories = {}
            try:
                return self._promote_locked(promotion_id, partitions, allow_warn=allow_warn, strict=strict)
            finally:
                self._histories = None

    def _promote_locked(
        self, promotion_id: str, partitions: Sequence[str] | None, *, allow_warn: bool, strict: bool
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        for _ in range(MAX_REPLANS):
            # The live version is read before the history: a commit landing in between is seen
            # in the history (refused) or after the bound version (the commit fails), never lost.
            live_version = self._live_version()
            self._histories = {}
            # Planned under the locks: a promotion that finished just before us is seen as a live
            # change after validation, so nothing is applied twice.
            reconcile(self.fmt, self.store, self.config.live_table, self._history(self.config.live_table))
            plan = self.plan(partitions, allow_warn=allow_warn, live_version=live_version)
            if strict and plan.refused:
                detail = "; ".join(f"{k}: {r}" for k, r in list(plan.refused.items())[:5])
                raise RefusedError(f"promotion refused, nothing written: {detail}")
            if not plan.partitions:
                return plan, None
            try:
                return plan, self._commit(promotion_id, plan)
            except LiveChangedError as err:
                if err.written is not None:
                    raise
                # Another writer committed to these partitions after the plan and the format
                # refused our commit: plan again, refusing exactly what the other writer touched.
                continue
        raise RefusedError(
            f"{self.config.live_table} kept changing while promoting ({MAX_REPLANS} attempts); nothing was written"
        )

    def _commit(self, promotion_id: str, plan: PromotionPlan) -> PromotionRecord:
        cfg = self.config
        live_schema = self.fmt.schema(cfg.live_table)
        frames = [
            self.fmt.read_partitions(cfg.shadow, ks, version)
            for version, ks in _group_by_value(plan.shadow_versions).items()
        ]
        shadow = reduce(DataFrame.unionByName, frames)
        _check_promotable_schema(shadow, live_schema, cfg.shadow, cfg.live_table)
        rec = PromotionRecord(
            id=promotion_id,
            kind="promote",
            live_table=cfg.live_table,
            shadow_table=cfg.shadow,
            partitions=plan.partitions,
            live_version_before=plan.live_version,
            live_version_after=None,
            shadow_versions=plan.shadow_versions,
            validation_ids=plan.validation_ids,
            target=None,
            to_version=None,
            config_hash=cfg.config_hash,
            code_fingerprint=self.code_fingerprint,
            user=None,
            host=None,
            at=utcnow(),
            undone_by=None,
        )
        if self.before_commit is not None:
            self.before_commit(plan)
        rec, lost = write_and_record(self.fmt, self.store, rec, shadow.select(*live_schema.fieldNames()))
        for k, commit in lost.items():
            plan.refused[k] = _changed_reason("live", commit)
            plan.shadow_versions.pop(k, None)
        plan.partitions = rec.partitions
        return rec


MAX_REPLANS = 3


def _changed_reason(side: str, commit: Commit) -> str:
    by = "by another writer" if PARTITIONS_PROPERTY not in commit.properties else "by shadow-backfill"
    return (
        f"{side} changed after validation (commit {commit.version}, {commit.operation or 'write'} {by}): validate again"
    )


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


def reconcile(
    fmt: TableFormat, store: StateStore, live_table: str, history: Sequence[Commit] | None = None
) -> list[str]:
    """Record promotions/rollbacks that reached the live table but not the state store.

    The commit is the source of truth: a process killed between its commit and its audit row
    leaves the audit trail on the commit itself, and this puts the row back. Returns the ids added.
    """
    known = {p.id for p in store.promotions(live_table)}
    added = []
    for c in fmt.history(live_table) if history is None else history:
        props = c.properties
        pid = props.get("shadow-backfill.promotion-id")
        if not pid or pid in known:
            continue
        before = props.get("shadow-backfill.live-version-before", "None")
        bound = int(before) if before not in ("None", "") else None
        versions = [int(v) for v in props.get("shadow-backfill.shadow-versions", "").split(",") if v]
        keys = [k for k in props.get(PARTITIONS_PROPERTY, "").split(",") if k]
        rec = PromotionRecord(
            id=pid,
            kind=props.get("shadow-backfill.kind", "promote"),
            live_table=live_table,
            shadow_table=props.get("shadow-backfill.shadow-table"),
            partitions=keys,
            live_version_before=c.parent if c.parent is not None else bound,
            live_version_after=c.version,
            shadow_versions={k: versions[0] for k in keys} if len(versions) == 1 else {},
            validation_ids=[v for v in props.get("shadow-backfill.validation-ids", "").split(",") if v],
            target=props.get("shadow-backfill.undoes"),
            to_version=None,
            config_hash=props.get("shadow-backfill.config-hash"),
            code_fingerprint=props.get("shadow-backfill.code-fingerprint"),
            user=props.get("shadow-backfill.user"),
            host=props.get("shadow-backfill.host"),
            at=dt.datetime.fromtimestamp(c.timestamp_ms / 1000, dt.timezone.utc) if c.timestamp_ms else utcnow(),
            undone_by=None,
        )
        store.record_promotion(rec)
        known.add(pid)
        added.append(pid)
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
    store.record_promotion(rec)
    return rec, lost


def _restore_lost(fmt: TableFormat, rec: PromotionRecord, written: Written, keys: list[str]) -> int:
    """Put `keys` back as they were right before our commit, which held the other writer's data."""
    df = fmt.read_partitions(rec.live_table, keys, written.parent)
    return fmt.overwrite_partitions(rec.live_table, df, keys, {"shadow-backfill.restores-for": rec.id})


def _group_by_value(d: dict[str, int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for k, v in d.items():
        out.setdefault(v, []).append(k)
    return out


def _check_promotable_schema(shadow: DataFrame, live_schema: Any, shadow_name: str, live_name: str) -> None:
    have = {f.name: f.dataType for f in shadow.schema.fields}
    problems = []
    for f in live_schema.fields:
        if f.name not in have:
            problems.append(f"{f.name} (missing)")
        elif have[f.name] != f.dataType:
            problems.append(f"{f.name} ({have[f.name].simpleString()} vs {f.dataType.simpleString()})")
    extra = [c for c in have if c not in live_schema.fieldNames()]
    if problems or extra:
        raise RefusedError(
            f"cannot promote {shadow_name} into {live_name}: its schema differs "
            f"(live columns: {problems or 'ok'}; columns live does not have: {extra or 'none'}); "
            "evolve the live table's schema first"
        )
