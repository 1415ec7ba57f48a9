"""The canary's checks on live, and the finishing of a canary a kill left unchecked.

A canary is recorded as pending before its commit (`state.canaries`). One still pending when
the next promotion of its table takes the canary lock was cut off: the kill came before its
commit (live's history has no commit with its id: nothing to do), or after it and before its
checks (its partitions are live, unchecked). Then its checks run on live now, with the row
counts it recorded, before anything else is promoted; a failed check rolls it back, as the
killed command would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadow_backfill.errors import RefusedError, first_line
from shadow_backfill.ledger import reconcile
from shadow_backfill.rollback import Rollback
from shadow_backfill.state import PromotionRecord
from shadow_backfill.state.canaries import CHECKED, NOT_COMMITTED, ROLLED_BACK, CanaryRecord
from shadow_backfill.validate.downstream import LoadedQuery, judge_on_live
from shadow_backfill.validate.measure.downstream import measure_queries
from shadow_backfill.vocabulary import Check, CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.table import TableContext

CANARY, REST = "canary", "rest"  # a canary promotion's steps, as the store's `step` names them


@dataclass
class FinishedCanary:
    """A canary a kill had left unchecked, finished: `record` is its promotion (None if its
    commit never reached live), with the checks run now and the rollback if one failed."""

    canary: CanaryRecord
    record: PromotionRecord | None
    checks: list[Check] = field(default_factory=list)
    rolled_back: PromotionRecord | None = None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == CheckStatus.FAIL]

    def line(self) -> str:
        """What was done, in one line for stdout."""
        parts = ", ".join(self.canary.partitions[:5]) + (" …" if len(self.canary.partitions) > 5 else "")
        head = f"finished an unchecked canary of {parts} from promotion {self.canary.id}"
        if self.record is None:
            return f"{head}: its commit never reached live (cut off before it); nothing to check"
        if self.rolled_back is not None:
            why = self.failed[0].message if self.failed else "it was undone since"
            return f"{head}: failed on live ({why}); rolled back as {self.rolled_back.id} (live is as before)"
        if self.record.undone_by is not None:
            return f"{head}: it was rolled back since (by {self.record.undone_by}); nothing to check"
        return f"{head}: its {len(self.checks)} check(s) on live passed"


def finish_all(table: TableContext, queries: list[LoadedQuery]) -> list[FinishedCanary]:
    """Finish every pending canary of the table, oldest first; the caller holds the canary lock."""
    pending = table.store.unchecked_canaries(table.live_table)
    if not pending:
        return []
    # a kill between the canary's commit and its audit row left only the commit: record it
    reconcile(table.fmt, table.store, table.live_table)
    return [_finish(table, c, queries) for c in pending]


def _finish(table: TableContext, canary: CanaryRecord, queries: list[LoadedQuery]) -> FinishedCanary:
    rec = table.store.promotion(canary.id)
    if rec is None:
        table.store.end_canary(canary.id, NOT_COMMITTED)
        return FinishedCanary(canary, None)
    table.store.mark_step(rec.id, CANARY, rec.id)
    done = FinishedCanary(canary, rec)
    if rec.undone_by is not None:
        table.store.end_canary(canary.id, ROLLED_BACK)
        return done
    try:
        done.checks = checks_on_live(table, rec.partitions, canary.rows, queries)
    except Exception as exc:
        undo(table, rec, f"the checks on live could not run ({first_line(exc)})")
        table.store.end_canary(canary.id, ROLLED_BACK)
        raise
    if done.failed:
        done.rolled_back = undo(table, rec, done.failed[0].message)
        table.store.end_canary(canary.id, ROLLED_BACK)
    else:
        table.store.end_canary(canary.id, CHECKED)
    return done


def undo(table: TableContext, canary: PromotionRecord, why: str) -> PromotionRecord:
    """Roll the canary back; if even that fails, the error names the check and the canary."""
    try:
        return Rollback(table).undo(canary.id)
    except Exception as exc:
        raise RefusedError(
            f"canary {canary.id} failed on live ({why}) and its rollback failed ({first_line(exc)}): "
            f"run `shadow-backfill rollback CONFIG --promotion {canary.id}`"
        ) from exc


def checks_on_live(
    table: TableContext, keys: list[str], rows: Mapping[str, int | None], queries: list[LoadedQuery]
) -> list[Check]:
    """Each canary partition on live now: the validated row count (`rows`), and every
    downstream query runs and returns rows."""
    fmt, scheme = table.fmt, table.scheme
    fmt.refresh(table.live_table)
    live = fmt.read_partitions(table.live_table, keys)
    counted = live.groupBy(scheme.key_column().alias("k")).count().collect()
    found = {scheme.key_from_column_text(r["k"]): r["count"] for r in counted}
    checks = []
    for k in keys:
        expected = rows.get(k)
        got = found.get(k, 0)
        status = CheckStatus.PASS if expected is None or got == expected else CheckStatus.FAIL
        message = f"live partition {k} holds {got} row(s) after promotion, {expected} validated"
        checks.append(Check("canary_rows", k, status, got, f"== {expected}", message))
    if queries:
        values = {k: scheme.value(k) for k in keys}
        runs = measure_queries(table.spark, queries, live, None, values, lambda df, k: df.filter(scheme.predicate([k])))
        checks += [judge_on_live(r.query.name, k, r.judged) for k, results in runs.items() for r in results]
    return checks
