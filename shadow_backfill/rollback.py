"""Rollback: put live partitions back exactly as they were before a promotion.

A rollback reads the live table as of the version before the promotion (time travel) and
overwrites exactly the promotion's partitions in one commit, so other partitions and later
unrelated commits stay as they are. It refuses when a later commit touched those partitions,
unless forced. A rollback is itself a recorded promotion-like entry and can be undone the same
way.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from shadow_backfill.errors import RefusedError, UsageError
from shadow_backfill.formats.base import LiveChangedError
from shadow_backfill.ledger import live_partition_locks, reconcile, write_and_record
from shadow_backfill.preflight import check_version
from shadow_backfill.schema import conform
from shadow_backfill.state import ROLLBACK, PromotionRecord, new_id
from shadow_backfill.table import TableContext


@dataclass(eq=False)
class Rollback:
    """Undoes one promotion (or rollback) by id, or restores the whole live table to a version."""

    table: TableContext

    def undo(self, promotion_id: str, *, force: bool = False) -> PromotionRecord:
        """Restore the partitions of promotion (or rollback) `promotion_id` to their content before it."""
        live = self.table.config.live_table
        reconcile(self.table.fmt, self.table.store, live)
        rec = self.table.store.promotion(promotion_id)
        if rec is None or rec.live_table != live:
            raise UsageError(f"unknown promotion id {promotion_id!r} for {live} (see `shadow-backfill history`)")
        if rec.undone_by:
            raise RefusedError(
                f"{promotion_id} was already rolled back by {rec.undone_by}; "
                f"to bring it back, roll back {rec.undone_by}"
            )
        rollback_id = new_id(ROLLBACK)
        with live_partition_locks(self.table.store, live, rec.partitions, rollback_id):
            again = self.table.store.promotion(promotion_id)
            if again is not None and again.undone_by:  # undone while we waited for the locks
                raise RefusedError(f"{promotion_id} was already rolled back by {again.undone_by}")
            # Read before the history: the restore is bound to this version, so a commit landing
            # after the check below still makes the restore fail or get undone, never lost.
            self.table.fmt.refresh(live)
            bound = self.table.fmt.current_version(live)
            changed = self.table.fmt.commits_touching(live, rec.live_version_after, rec.partitions)
            if changed and not force:
                first, hit = changed[0]
                raise RefusedError(
                    f"partitions {hit[:5]} of {live} changed after {promotion_id} (commit {first.version}); "
                    "nothing was written. Pass --force to restore them anyway"
                )
            try:
                return self._restore(
                    rollback_id, rec.partitions, rec.live_version_before, bound, target=promotion_id, to_version=None
                )
            except RefusedError as err:
                if not self.table.fmt.is_expired(err):
                    raise
                raise RefusedError(
                    f"the rollback target of {promotion_id} expired: gc deleted the data it replaced after "
                    f"promote.retention_days ({self.table.config.promote.retention_days:g} day(s)); nothing was written"
                ) from None

    def to_version(self, version: int) -> PromotionRecord:
        """Restore the whole live table to `version` in one commit (partitions added since are cleared)."""
        live = self.table.config.live_table
        check_version(self.table.fmt, live, version)
        keys = self.table.scheme.sort(set(self.table.fmt.list_partitions(live)) | set(self._keys_at(version)))
        if not keys:
            raise UsageError(f"{live} has no partitions now or at version {version}: nothing to restore")
        rollback_id = new_id(ROLLBACK)
        with live_partition_locks(self.table.store, live, keys, rollback_id):
            self.table.fmt.refresh(live)
            bound = self.table.fmt.current_version(live)
            return self._restore(rollback_id, keys, version, bound, target=None, to_version=version)

    def _keys_at(self, version: int) -> list[str]:
        rows = (
            self.table.fmt.read(self.table.config.live_table, version)
            .select(self.table.scheme.key_column().alias("k"))
            .distinct()
            .collect()
        )
        return [k for k in (self.table.scheme.key_from_column_text(r["k"]) for r in rows) if k is not None]

    def _restore(
        self,
        rollback_id: str,
        keys: list[str],
        version: int | None,
        bound: int | None,
        *,
        target: str | None,
        to_version: int | None,
    ) -> PromotionRecord:
        live = self.table.config.live_table
        # An empty table before (version None): restoring means clearing the partitions.
        df: DataFrame = (
            self.table.fmt.read(live).limit(0)
            if version is None
            else self.table.fmt.read_partitions(live, keys, version)
        )
        # A version from before a promotion added columns: they are kept, and the rows hold null.
        df = conform(df, self.table.fmt.schema(live))
        rec = PromotionRecord.rollback(
            rollback_id,
            live_table=live,
            partitions=keys,
            live_version_before=bound,
            target=target,
            to_version=to_version,
            config_hash=self.table.config.config_hash,
        )
        try:
            done, lost = write_and_record(self.table.fmt, self.table.store, rec, df)
        except LiveChangedError as err:
            raise RefusedError(f"{err}; nothing was written: check the live table and roll back again") from None
        if lost:
            raise RefusedError(
                f"partitions {sorted(lost)[:5]} of {live} changed during the rollback and were left as the other "
                f"writer made them; the others were restored as {done.id}"
            )
        return done
