"""Canary promotion: a few partitions reach readers first, are checked on live, then the rest.

A validation judges the shadow; what readers get is live after the commit. A canary promotes
the N earliest passing partitions (one commit, bound to what was validated, like any
promotion), then checks them *on live*: each holds the rows that were validated, and each of
the consumers' queries (`validation.downstream_queries`) runs on it and returns rows. Only
then are the other partitions promoted, in a second commit. A failed check rolls the canary's
commit back at once, so readers saw the new partitions for no longer than the checks took.
Both commits are steps of one promotion in the state store (`step`, `steps_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadow_backfill.state import PromotionRecord
from shadow_backfill.validate.downstream import judge_on_live, load_queries
from shadow_backfill.validate.measure.downstream import measure_queries
from shadow_backfill.vocabulary import Check, CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.promote import PromotionPlan

CANARY, REST = "canary", "rest"


@dataclass
class CanaryResult:
    """What a canary promotion did: its canary commit, the checks on live, and either the rest's
    commit or the rollback of the canary."""

    plan: PromotionPlan
    canary: PromotionRecord | None
    checks: list[Check] = field(default_factory=list)
    rest: PromotionRecord | None = None
    rolled_back: PromotionRecord | None = None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == CheckStatus.FAIL]


def promote_with_canary(bf: Backfill, n: int, partitions: list[str] | None, allow_warn: bool | None) -> CanaryResult:
    """Promote the `n` earliest passing partitions, check them on live, then the rest."""
    plan = bf.plan_promotion(partitions, allow_warn=allow_warn)
    keys = bf.scheme.sort(plan.partitions) if partitions is None else plan.partitions
    if not keys or (partitions is not None and plan.refused):
        return CanaryResult(plan, *bf.promote(partitions, allow_warn=allow_warn)[1:])
    first, rest = keys[:n], keys[n:]
    plan1, canary = bf.promote(first, allow_warn=allow_warn)
    if canary is None:
        return CanaryResult(plan1, None)
    bf.store.mark_step(canary.id, CANARY, canary.id)
    result = CanaryResult(plan1, canary, checks_on_live(bf, first, plan1))
    if result.failed:
        result.rolled_back = bf.rollback(canary.id)
        return result
    if rest:
        _plan, result.rest = bf.promote(rest, allow_warn=allow_warn)
        if result.rest is not None:
            bf.store.mark_step(result.rest.id, REST, canary.id)
    return result


def checks_on_live(bf: Backfill, keys: list[str], plan: PromotionPlan) -> list[Check]:
    """Each canary partition on live now: the validated row count, and every downstream query
    runs and returns rows."""
    fmt, scheme = bf.table_format, bf.scheme
    fmt.refresh(bf.live_table)
    live = fmt.read_partitions(bf.live_table, keys)
    counted = live.groupBy(scheme.key_column().alias("k")).count().collect()
    found = {scheme.key_from_column_text(r["k"]): r["count"] for r in counted}
    checks = []
    for k in keys:
        expected = plan.rows.get(k, {}).get("shadow")
        got = found.get(k, 0)
        status = CheckStatus.PASS if expected is None or got == expected else CheckStatus.FAIL
        message = f"live partition {k} holds {got} row(s) after promotion, {expected} validated"
        checks.append(Check("canary_rows", k, status, got, f"== {expected}", message))
    queries = load_queries(bf.config)
    if queries:
        runs = measure_queries(bf.spark, queries, live, None, {k: scheme.value(k) for k in keys})
        checks += [judge_on_live(q.name, k, on_live) for k, found_runs in runs.items() for q, on_live, _ in found_runs]
    return checks
