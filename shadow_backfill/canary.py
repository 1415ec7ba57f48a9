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

from shadow_backfill.errors import RefusedError, ShadowBackfillError, first_line
from shadow_backfill.state import PromotionRecord
from shadow_backfill.validate.downstream import LoadedQuery, judge_on_live, load_queries
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
    queries = load_queries(bf.config)  # a bad query file is named before anything commits
    plan = bf.plan_promotion(partitions, allow_warn=allow_warn)
    if not plan.partitions or (partitions is not None and plan.refused):
        return CanaryResult(plan, *bf.promote(partitions, allow_warn=allow_warn)[1:])
    keys = bf.scheme.sort(plan.partitions)
    first, rest = keys[:n], keys[n:]
    plan1, canary = bf.promote(first, allow_warn=allow_warn)
    if canary is None:
        return CanaryResult(plan1, None)
    bf.store.mark_step(canary.id, CANARY, canary.id)
    result = CanaryResult(plan1, canary)
    try:
        result.checks = checks_on_live(bf, first, plan1, queries)
    except Exception as exc:  # a check that cannot run is a check that failed: undo, then say why
        _undo(bf, canary, f"the checks on live could not run ({first_line(exc)})")
        raise
    if result.failed:
        result.rolled_back = _undo(bf, canary, result.failed[0].message)
        return result
    if rest:
        try:
            _plan, result.rest = bf.promote(rest, allow_warn=allow_warn)
        except ShadowBackfillError as exc:
            raise RefusedError(
                f"canary {canary.id} is live and passed its checks; the rest was refused: {exc}"
            ) from exc
        if result.rest is not None:
            bf.store.mark_step(result.rest.id, REST, canary.id)
    return result


def _undo(bf: Backfill, canary: PromotionRecord, why: str) -> PromotionRecord:
    """Roll the canary back; if even that fails, the error names the check and the canary."""
    try:
        return bf.rollback(canary.id)
    except Exception as exc:
        raise RefusedError(
            f"canary {canary.id} failed on live ({why}) and its rollback failed ({first_line(exc)}): "
            f"run `shadow-backfill rollback CONFIG --promotion {canary.id}`"
        ) from exc


def checks_on_live(bf: Backfill, keys: list[str], plan: PromotionPlan, queries: list[LoadedQuery]) -> list[Check]:
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
    if queries:
        values = {k: scheme.value(k) for k in keys}
        runs = measure_queries(bf.spark, queries, live, None, values, lambda df, k: df.filter(scheme.predicate([k])))
        checks += [judge_on_live(r.query.name, k, r.judged) for k, results in runs.items() for r in results]
    return checks
