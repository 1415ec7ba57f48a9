"""Promotion: the passing shadow partitions reach the live table in one atomic commit.

The data promoted is read from the shadow table *as of the version that was validated*, so
what lands in live is exactly what passed. Before writing, every partition is re-checked: its
verdict must be pass (or warn, if allowed), no commit may have touched it in the shadow table
after validation, and none may have touched the same live partition after validation read it.
Any refusal names the partitions and the reason; nothing is written unless all checks hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType

from shadow_backfill import testpoints
from shadow_backfill.config import SchemaChanges
from shadow_backfill.document import MetricsDoc
from shadow_backfill.errors import RefusedError, TableNotFoundError, UsageError
from shadow_backfill.formats.base import PARTITIONS_PROPERTY, Commit, LiveChangedError
from shadow_backfill.ledger import live_partition_locks, reconcile, write_and_record
from shadow_backfill.schema import SchemaDiff, conform, diff_schemas
from shadow_backfill.state import PROMOTE, Approval, PartitionRecord, PromotionRecord, VerdictRecord, new_id
from shadow_backfill.table import TableContext
from shadow_backfill.vocabulary import CheckStatus, PartitionStatus


@dataclass
class PromotionPlan:
    """What a promotion would do; `refused` holds partition -> reason for those left out."""

    partitions: list[str]
    refused: dict[str, str]
    live_version: int | None
    shadow_versions: dict[str, int]
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    validation_ids: list[str] = field(default_factory=list)


_UNREAD: Any = object()


@dataclass(eq=False)
class Promoter:
    """Plans a promotion (what passes, what is refused and why) and commits it under the locks."""

    table: TableContext
    code_fingerprint: str | None = None
    # `approve`: the person's approval every promotion of this promoter carries into the trail
    approval: Approval | None = None
    _histories: dict[str, list[Commit]] | None = field(default=None, init=False, repr=False)
    # Called between the plan and the commit (tests inject another writer's commit here).
    before_commit: Callable[[PromotionPlan], None] | None = field(default=None, init=False, repr=False)

    def _history(self, table: str) -> list[Commit]:
        """A table's commits, read once per promotion (each read is a Spark job)."""
        if self._histories is None:
            return self.table.fmt.history(table)
        if table not in self._histories:
            self._histories[table] = self.table.fmt.history(table)
        return self._histories[table]

    def plan(
        self, partitions: Sequence[str] | None = None, *, allow_warn: bool = False, live_version: Any = _UNREAD
    ) -> PromotionPlan:
        """What a promotion would do now. `live_version`: the live version read before the
        history was (the version the commit will be bound to)."""
        cfg = self.table.config
        if live_version is _UNREAD:
            live_version = self._live_version()
        self.table.fmt.check_distinct(cfg.live_table, cfg.shadow)
        verdicts = self.table.store.verdicts(cfg.shadow)
        records = self.table.store.records(cfg.shadow)
        if partitions is None:
            keys = self.table.scheme.sort(verdicts)
            if not keys:
                raise UsageError(f"nothing to promote: no partition of {cfg.shadow} has been validated")
        else:
            keys = [self.table.scheme.normalize(p) for p in partitions]
            unknown = [k for k in keys if k not in verdicts and k not in records]
            if unknown:
                raise UsageError(f"unknown partition(s) {unknown[:5]}: never recomputed into {cfg.shadow}")
        if not self.table.fmt.exists(cfg.shadow):
            raise RefusedError(
                f"shadow table {cfg.shadow!r} does not exist (dropped after validation?): run and validate again"
            )
        refused: dict[str, str] = {}
        ok: list[str] = []
        for k in keys:
            v = verdicts.get(k)
            if v is None:
                refused[k] = "not validated"
            elif v.verdict == CheckStatus.FAIL:
                refused[k] = "verdict fail: " + "; ".join(c.message for c in v.reasons[:2])
            elif v.verdict == CheckStatus.WARN and not allow_warn:
                refused[k] = "verdict warn (set promote.allow_warn or pass --allow-warn): " + "; ".join(
                    c.message for c in v.reasons[:2]
                )
            elif k in records and records[k].shadow_version != v.partition_version:
                refused[k] = (
                    f"{_rewritten(k, records[k])} after it was validated (validated commit "
                    f"{v.partition_version}, now {records[k].shadow_version}); validate again"
                )
            else:
                ok.append(k)
        self._refuse_changed(ok, verdicts, refused, records)
        ok = [k for k in ok if k not in refused]
        return PromotionPlan(
            partitions=ok,
            refused=refused,
            live_version=live_version,
            shadow_versions={k: sv for k in ok if (sv := verdicts[k].shadow_version) is not None},
            rows={k: _rows(verdicts[k].metrics) for k in ok},
            validation_ids=sorted({verdicts[k].validation_id or "" for k in ok} - {""}),
        )

    def _live_version(self) -> int | None:
        if not self.table.fmt.exists(self.table.config.live_table):
            raise TableNotFoundError(
                f"live table {self.table.config.live_table!r} does not exist ({self.table.config.format})"
            )
        return self._current_version(self.table.config.live_table)

    def _current_version(self, table: str) -> int | None:
        self.table.fmt.refresh(table)  # a catalog's cached table would not show another process's commit
        return self.table.fmt.current_version(table)

    def _refuse_changed(
        self,
        keys: list[str],
        verdicts: dict[str, VerdictRecord],
        refused: dict[str, str],
        records: dict[str, PartitionRecord],
    ) -> None:
        """Refuse partitions that a later commit touched, in shadow or in live, since validation:
        a shadow rewritten by a run (`run --force` racing the promotion) is named as such."""
        cfg = self.table.config
        for table, attr, side in ((cfg.shadow, "shadow_version", "shadow"), (cfg.live_table, "live_version", "live")):
            by_version: dict[int | None, list[str]] = {}
            for k in keys:
                by_version.setdefault(getattr(verdicts[k], attr), []).append(k)
            if table == cfg.shadow and set(by_version) == {self._current_version(table)} - {None}:
                # Validated at the shadow's current version: no commit since, and its history,
                # a Spark job (0.2 s), is not read.
                continue
            for since, ks in by_version.items():
                for commit, hit in self.table.fmt.commits_touching(table, since, ks, self._history(table)):
                    for k in hit:
                        if side == "shadow" and PARTITIONS_PROPERTY in commit.properties and k in records:
                            rec = records[k] if _rewriter_known(records[k], verdicts[k]) else None
                            why = f"{_rewritten(k, rec)} after it was validated (commit {commit.version})"
                            refused.setdefault(k, f"{why}; validate again")
                        refused.setdefault(k, _changed_reason(side, commit))

    def already_live(self, keys: Sequence[str]) -> dict[str, str]:
        """Partitions whose live data is already this shadow's (partition -> the promotion that
        put it there): their newest promotion, not undone, came from this shadow table, and no
        commit has touched them since, in live or in the shadow. A nightly job that re-runs the
        same window finds them so and commits nothing: a rerun changes nothing."""
        cfg = self.table.config
        newest: dict[str, PromotionRecord] = {}
        for rec in self.table.store.promotions(cfg.live_table):  # oldest first
            for k in rec.partitions:
                if rec.kind == PROMOTE:
                    newest[k] = rec
                else:  # a rollback put older data back
                    newest.pop(k, None)
        found = {
            k: newest[k]
            for k in keys
            if k in newest
            and newest[k].undone_by is None
            and newest[k].shadow_table == cfg.shadow
            and newest[k].live_version_after is not None
            and k in newest[k].shadow_versions
        }
        if not found:
            return {}
        histories = {table: self.table.fmt.history(table) for table in (cfg.live_table, cfg.shadow)}
        for k, rec in list(found.items()):
            since = {cfg.live_table: rec.live_version_after, cfg.shadow: rec.shadow_versions[k]}
            if any(self.table.fmt.commits_touching(t, since[t], [k], histories[t]) for t in since):
                del found[k]
        return {k: rec.id for k, rec in found.items()}

    def promote(
        self,
        partitions: Sequence[str] | None = None,
        *,
        allow_warn: bool = False,
        strict: bool = False,
        promotion_id: str | None = None,
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        """Promote the plan's partitions in one commit. `strict`: refuse everything if any
        requested partition is refused (the CLI uses it when partitions are named explicitly).
        `promotion_id`: the id its commit will carry, when the caller records it first (a canary)."""
        promotion_id = promotion_id or new_id(PROMOTE)
        candidates = (
            [self.table.scheme.normalize(p) for p in partitions]
            if partitions is not None
            else self.table.scheme.sort(self.table.store.verdicts(self.table.config.shadow))
        )
        with live_partition_locks(self.table.store, self.table.config.live_table, candidates, promotion_id):
            self._histories = {}
            try:
                return self._promote_locked(promotion_id, partitions, allow_warn=allow_warn, strict=strict)
            finally:
                self._histories = None

    def _promote_locked(
        self, promotion_id: str, partitions: Sequence[str] | None, *, allow_warn: bool, strict: bool
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        for _ in range(MAX_REPLANS):
            try:
                return self._plan_and_commit(promotion_id, partitions, allow_warn=allow_warn, strict=strict)
            except LiveChangedError as err:
                if err.written is not None:
                    raise
                # Another writer committed to these partitions after the plan and the format
                # refused our commit: plan again, refusing exactly what the other writer touched.
                continue
            except Exception as exc:
                if not self.table.fmt.is_read_conflict(exc):
                    raise
                # A recompute committed to the shadow while we read it (its history while
                # planning, or the validated version while the write planned its read): nothing
                # was written; plan again with that commit in view.
                continue
        raise RefusedError(
            f"{self.table.live_table} kept changing while promoting ({MAX_REPLANS} attempts); nothing was written"
        )

    def _plan_and_commit(
        self, promotion_id: str, partitions: Sequence[str] | None, *, allow_warn: bool, strict: bool
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        # The live version is read before the history: a commit landing in between is seen in
        # the history (refused) or after the bound version (the commit fails), never lost.
        live_version = self._live_version()
        self._histories = {}
        # Planned under the locks: a promotion that finished just before us is seen as a live
        # change after validation, so nothing is applied twice.
        reconcile(
            self.table.fmt, self.table.store, self.table.config.live_table, self._history(self.table.config.live_table)
        )
        plan = self.plan(partitions, allow_warn=allow_warn, live_version=live_version)
        if strict and plan.refused:
            detail = "; ".join(f"{k}: {r}" for k, r in list(plan.refused.items())[:5])
            raise RefusedError(f"promotion refused, nothing written: {detail}")
        if not plan.partitions:
            return plan, None
        return plan, self._commit(promotion_id, plan)

    def _commit(self, promotion_id: str, plan: PromotionPlan) -> PromotionRecord:
        # The shadow is pinned from its read's planning to the end of the write that runs it:
        # a recompute of the same partitions (`run --force`) committing meanwhile would
        # otherwise move the validated files away under the job (folder tables), and live
        # would get data the gate never saw, or the job would fail on missing files.
        with self.table.fmt.pinned(self.table.config.shadow):
            return self._commit_pinned(promotion_id, plan)

    def _evolve_live(self, shadow: StructType, live: StructType) -> StructType:
        """Live's schema made ready for the promoted rows, before the data commit: declared
        widenings applied (where the format widens in place) and declared added columns added
        (nullable); a column declared removed stays in live, null in the promoted rows. Any
        other difference refuses the promotion, before anything is written."""
        cfg = self.table.config
        problems = _undeclared(shadow, live, cfg.validation.expected_schema_changes)
        if not problems.same:
            raise RefusedError(
                f"cannot promote {cfg.shadow} into {cfg.live_table}: its schema differs "
                f"({'; '.join(problems.problems('columns live does not have'))}); "
                "declare the change in validation.expected_schema_changes and validate again"
            )
        diff = diff_schemas(shadow, live)
        widened = {c: shadow[c].dataType for c, _, _ in diff.retyped}
        if widened and not self.table.fmt.widens_types:
            raise RefusedError(
                f"cannot promote into {cfg.live_table}: {self.table.fmt.name} tables cannot widen a column's type "
                "in place "
                f"({', '.join(f'{c} {a} -> {b}' for c, a, b in diff.retyped)}); nothing was promoted "
                "(widen live's column yourself, then promote again)"
            )
        new = [StructField(f.name, f.dataType, True) for f in shadow.fields if f.name in diff.extra]
        wanted = [*diff.extra, *widened]

        def taken() -> list[str]:
            """The columns live does not have as shadow does (yet)."""
            self.table.fmt.refresh(cfg.live_table)
            types = {f.name: f.dataType for f in self.table.fmt.schema(cfg.live_table).fields}
            return [c for c in wanted if types.get(c) != shadow[c].dataType]

        if widened:
            self._alter_live(
                f"widen {sorted(widened)}", lambda: self.table.fmt.widen_columns(cfg.live_table, widened), taken
            )
        if new:
            self._alter_live(
                f"add columns {diff.extra}", lambda: self.table.fmt.add_columns(cfg.live_table, new), taken
            )
        if not wanted:
            return live
        if missing := taken():
            # an engine that ignored the change would drop or cast the new values in the write
            raise RefusedError(f"live table {cfg.live_table} did not take the columns {missing}; nothing was promoted")
        return self.table.fmt.schema(cfg.live_table)

    def _alter_live(self, what: str, alter: Callable[[], None], left: Callable[[], list[str]]) -> None:
        """One change of live's schema, as one line naming it if the engine refuses it; a refusal
        because another promotion made the same change first (locks are per partition, so two
        promotions of other partitions may both add the column) is no refusal."""
        try:
            alter()
        except (PySparkException, RefusedError) as exc:  # an engine without the statement, or too late
            if not left():
                return
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RefusedError(
                f"cannot {what} in {self.table.config.live_table}: {detail}; nothing was promoted "
                "(change live's schema with ALTER TABLE on Spark, then promote again)"
            ) from None

    def _commit_pinned(self, promotion_id: str, plan: PromotionPlan) -> PromotionRecord:
        cfg = self.table.config
        live_schema = self.table.fmt.schema(cfg.live_table)
        frames = [
            self.table.fmt.read_partitions(cfg.shadow, ks, version)
            for version, ks in _group_by_value(plan.shadow_versions).items()
        ]
        shadow = reduce(DataFrame.unionByName, frames)
        schema_change = _carried(shadow.schema, live_schema, cfg.validation.expected_schema_changes)
        live_schema = self._evolve_live(shadow.schema, live_schema)
        rec = PromotionRecord.promotion(
            promotion_id,
            live_table=cfg.live_table,
            shadow_table=cfg.shadow,
            partitions=plan.partitions,
            live_version_before=plan.live_version,
            shadow_versions=plan.shadow_versions,
            validation_ids=plan.validation_ids,
            config_hash=cfg.config_hash,
            code_fingerprint=self.code_fingerprint,
            schema_change=schema_change,
            approval=self.approval,
        )
        if self.before_commit is not None:
            self.before_commit(plan)
        testpoints.reached(testpoints.PROMOTE_BEFORE_COMMIT)
        rec, lost = write_and_record(self.table.fmt, self.table.store, rec, conform(shadow, live_schema))
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


def _rewritten(key: str, record: PartitionRecord | None) -> str:
    """'partition K was rewritten by run-…': the run the store names as the partition's last
    writer (a `run --force` after the validation), when it is known to be the rewriter."""
    by = f" by {record.run_id}" if record is not None and record.run_id else ""
    return f"partition {key} was rewritten{by}"


def _rewriter_known(record: PartitionRecord, verdict: VerdictRecord) -> bool:
    """The store's run of a partition is the one that rewrote it after validation: it is
    writing it now, or wrote a commit other than the validated one."""
    return record.status == PartitionStatus.RUNNING or record.shadow_version != verdict.partition_version


def _group_by_value(d: dict[str, int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for k, v in d.items():
        out.setdefault(v, []).append(k)
    return out


def _carried(shadow: StructType, live: StructType, declared: SchemaChanges) -> list[str]:
    """The declared schema changes a promotion carries into live, as the audit trail records
    them: `+col` added, `-col` kept in live with null in the promoted rows, `col -> bigint`
    widened. Taken from the declaration, not from live's schema of the moment: a promotion
    planned again (or run again after a kill) once live has the column carries it all the same,
    and validations later tell a column the tool added from one live always had by it."""
    have = set(shadow.fieldNames())
    return (
        [f"+{c}" for c in declared.added if c in have]
        + [f"-{c}" for c in declared.removed if c not in have and c in live.fieldNames()]
        + [f"{c} -> {t}" for c, t in declared.retyped.items() if c in have and shadow[c].dataType.simpleString() == t]
    )


def _undeclared(shadow: StructType, live: StructType, declared: SchemaChanges) -> SchemaDiff:
    """How shadow's schema differs from live's beyond what the config declares."""
    diff = diff_schemas(shadow, live)
    return SchemaDiff(
        missing=[c for c in diff.missing if c not in declared.removed],
        extra=[c for c in diff.extra if c not in declared.added],
        retyped=[r for r in diff.retyped if declared.retyped.get(r[0]) != r[2]],
    )


def _rows(metrics: MetricsDoc) -> dict[str, int]:
    """A partition's row counts as the audit log records them ({} if never measured)."""
    return metrics.rows.as_json() if metrics.rows is not None else {}
