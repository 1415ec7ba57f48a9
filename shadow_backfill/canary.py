"""Canary promotion: a few partitions reach readers first, are checked on live, then the rest.

A validation judges the shadow; what readers get is live after the commit. A canary promotes
the N earliest passing partitions (one commit, bound to what was validated, like any
promotion), then checks them *on live*: each holds the rows that were validated, and each of
the consumers' queries (`validation.downstream_queries`) runs on it and returns rows. Only
then are the other partitions promoted, in a second commit. A failed check rolls the canary's
commit back at once, so readers saw the new partitions for no longer than the checks took.
Both commits are steps of one promotion in the state store (`step`, `steps_of`).

The canary is recorded in the store (`canaries`, pending) *before* its commit, and the whole
canary holds the table's canary lock. A pending canary whose lock nobody holds was cut off
(a kill between the commit and the checks): the next promotion of the table finishes it
first (`canary_recovery`), and takes no other partition as a canary until it has.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadow_backfill import testpoints
from shadow_backfill.canary_recovery import CANARY, REST, FinishedCanary, checks_on_live, finish_all, undo
from shadow_backfill.errors import RefusedError, ShadowBackfillError, first_line
from shadow_backfill.ledger import LOCK_TTL_S
from shadow_backfill.promote import PromotionPlan
from shadow_backfill.state import PROMOTE, PromotionRecord, StateStore, describe_owner, lock_owner, new_id
from shadow_backfill.state.canaries import CHECKED, NOT_COMMITTED, ROLLED_BACK, CanaryRecord, too_few
from shadow_backfill.validate.downstream import LoadedQuery, load_queries
from shadow_backfill.vocabulary import Check, CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.promote import Promoter
    from shadow_backfill.table import TableContext

__all__ = [
    "CANARY",
    "REST",
    "CanaryResult",
    "FinishedCanary",
    "finish_unchecked",
    "promote_with_canary",
    "too_few",
]


@dataclass
class CanaryResult:
    """What a canary promotion did: its canary commit, the checks on live, and either the rest's
    commit or the rollback of the canary. `finished`: canaries a kill had left unchecked, whose
    checks this command ran first; if one failed (and was rolled back), nothing else was
    promoted (`canary` is None)."""

    plan: PromotionPlan
    canary: PromotionRecord | None
    checks: list[Check] = field(default_factory=list)
    rest: PromotionRecord | None = None
    rolled_back: PromotionRecord | None = None
    finished: list[FinishedCanary] = field(default_factory=list)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == CheckStatus.FAIL]


@contextmanager
def canary_lock(store: StateStore, live_table: str, holder: str) -> Iterator[None]:
    """Hold the table's canary lock for a whole canary (record, commit, checks), or refuse at
    once naming who holds it. A holder that died on this host lets go at once (its pid is gone):
    its pending canary is then the next command's to finish."""
    owner = lock_owner(holder)
    _, others = store.acquire([f"canary:{live_table}"], owner, LOCK_TTL_S)
    try:
        if others:
            who = ", ".join(describe_owner(o) for o in sorted(set(others.values())))
            raise RefusedError(
                f"a canary promotion of {live_table} is running ({who}); nothing was written, "
                "try again when it has finished"
            )
        yield
    finally:
        store.release(owner)


def finish_unchecked(table: TableContext) -> list[FinishedCanary]:
    """Finish the canaries of the table a kill left unchecked (see `canary_recovery`); a failed
    one is rolled back. Costs one store read when there is none."""
    if not table.store.unchecked_canaries(table.live_table):
        return []
    queries = load_queries(table.config)
    with canary_lock(table.store, table.live_table, new_id("canary-check")):
        return finish_all(table, queries)


def refuse_after_failed(finished: list[FinishedCanary]) -> None:
    """A canary that failed on live was rolled back: its data is not promoted again by the same
    command, canary or not (the command that finished it stops there, exit 1)."""
    failed = [f for f in finished if f.rolled_back is not None]
    if failed:
        raise RefusedError(f"{failed[0].line()}; nothing else was promoted")


def promote_with_canary(promoter: Promoter, n: int, partitions: list[str] | None, allow_warn: bool) -> CanaryResult:
    """Promote the `n` earliest passing partitions, check them on live, then the rest: the
    promotion policy beside a plain promotion, over the same promoter. `partitions`: named
    (normalized) partitions, promoted all or none."""
    table = promoter.table
    queries = load_queries(table.config)  # a bad query file is named before anything commits
    canary_id = new_id(PROMOTE)
    with canary_lock(table.store, table.live_table, canary_id):
        finished = finish_all(table, queries)
        if any(f.rolled_back is not None for f in finished):  # its data is not promoted again now
            return CanaryResult(PromotionPlan([], {}, None, {}), None, finished=finished)
        plan = promoter.plan(partitions, allow_warn=allow_warn)
        if not plan.partitions or (partitions is not None and plan.refused):
            return CanaryResult(plan, *_promote(promoter, partitions, allow_warn)[1:], finished=finished)
        if checked := [f for f in finished if f.record is not None and f.rolled_back is None]:
            # the cut-off canary passed its checks now: what is left is its rest, as it would have been
            result = CanaryResult(plan, checked[-1].record, checked[-1].checks, finished=finished)
            return _promote_rest(promoter, result, plan.partitions, allow_warn)
        if n >= len(plan.partitions):
            raise too_few(n, len(plan.partitions))
        keys = table.scheme.sort(plan.partitions)
        result = _canary(promoter, canary_id, keys[:n], plan, queries, allow_warn)
        result.finished = finished
        if result.canary is None or result.rolled_back is not None:
            return result
        return _promote_rest(promoter, result, keys[n:], allow_warn)


def _canary(
    promoter: Promoter, canary_id: str, first: list[str], plan: PromotionPlan, queries: list[LoadedQuery], allow: bool
) -> CanaryResult:
    """The canary's commit, recorded as pending before it, then its checks on live."""
    table = promoter.table
    rows = {k: plan.rows.get(k, {}).get("shadow") for k in first}
    table.store.begin_canary(
        CanaryRecord(
            id=canary_id, live_table=table.live_table, shadow_table=table.shadow_table, partitions=first, rows=rows
        )
    )
    plan1, canary = _promote(promoter, first, allow, promotion_id=canary_id)
    if canary is None:
        table.store.end_canary(canary_id, NOT_COMMITTED)
        return CanaryResult(plan1, None)
    table.store.mark_step(canary.id, CANARY, canary.id)
    testpoints.reached(testpoints.CANARY_BEFORE_CHECKS)
    result = CanaryResult(plan1, canary)
    try:
        result.checks = checks_on_live(table, canary.partitions, rows, queries)
    except Exception as exc:  # a check that cannot run is a check that failed: undo, then say why
        undo(table, canary, f"the checks on live could not run ({first_line(exc)})")
        table.store.end_canary(canary_id, ROLLED_BACK)
        raise
    if result.failed:
        result.rolled_back = undo(table, canary, result.failed[0].message)
        table.store.end_canary(canary_id, ROLLED_BACK)
        return result
    table.store.end_canary(canary_id, CHECKED)
    return result


def _promote(
    promoter: Promoter, keys: list[str] | None, allow_warn: bool, promotion_id: str | None = None
) -> tuple[PromotionPlan, PromotionRecord | None]:
    """One of the canary's commits: named partitions are promoted all or none."""
    return promoter.promote(keys, allow_warn=allow_warn, strict=keys is not None, promotion_id=promotion_id)


def _promote_rest(promoter: Promoter, result: CanaryResult, rest: list[str], allow_warn: bool) -> CanaryResult:
    """The partitions after a canary that passed its checks, as that canary's `rest` step."""
    canary = result.canary
    assert canary is not None
    if not rest:
        return result
    try:
        _plan, result.rest = _promote(promoter, rest, allow_warn)
    except ShadowBackfillError as exc:
        raise RefusedError(f"canary {canary.id} is live and passed its checks; the rest was refused: {exc}") from exc
    if result.rest is not None:
        promoter.table.store.mark_step(result.rest.id, REST, canary.id)
    return result
