"""How much each column changed, in the units its author thinks in.

Pure arithmetic on what the two drift jobs measured: the partition-level moments from the
profile (means, sums, null rates) and the per-key comparison from the facts job (keys whose
value differs beyond the tolerance, and by how much). This is what `expected_changes` bounds
and what report.json publishes per partition as `column_changes`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from shadow_backfill.validate import stats
from shadow_backfill.validate.measurements import ColumnMeasurement, ColumnPlan, Moments, PartitionProfile


@dataclass(frozen=True)
class ColumnChange:
    """One compared column of one partition, shadow against live (None: not measured, e.g.
    no key columns for the per-key counts, or a non-numeric column for the means)."""

    matched: int | None
    changed: int | None
    changed_share: float | None
    mean_live: float | None
    mean_shadow: float | None
    mean_change: float | None
    mean_change_pct: float | None
    sum_change_pct: float | None
    max_abs_diff: float | None
    mean_abs_diff: float | None
    null_rate_live: float | None
    null_rate_shadow: float | None
    null_rate_change: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        """The published form (report.json's `column_changes.<column>`)."""
        return asdict(self)


def _moments(m: ColumnMeasurement, side: str) -> Moments:
    s = m.side(side)
    return s.moments if s is not None and s.moments is not None else Moments()


def _null_rate(m: ColumnMeasurement, side: str) -> float | None:
    s = m.side(side)
    return s.null_rate if s is not None else None


def _difference(a: float | None, b: float | None) -> float | None:
    return abs(b - a) if a is not None and b is not None else None


def column_changes(prof: PartitionProfile, plan: ColumnPlan) -> dict[str, ColumnChange]:
    """Per compared column: matched keys, changed keys, means, sums and null rates of both sides."""
    keys = prof.keys
    matched = keys.matched if keys is not None else None
    out: dict[str, ColumnChange] = {}
    for c in plan.compared:
        m = prof.columns.get(c, ColumnMeasurement())
        diff = keys.by_column.get(c) if keys is not None else None
        changed = diff.changed if diff is not None else None
        max_abs, mean_abs = diff.abs_diffs if diff is not None and diff.abs_diffs is not None else (None, None)
        live, shadow = _moments(m, "live"), _moments(m, "shadow")
        null_live, null_shadow = _null_rate(m, "live"), _null_rate(m, "shadow")
        share = (changed / matched) if matched and changed is not None else (0.0 if matched == 0 else None)
        out[c] = ColumnChange(
            matched=matched,
            changed=changed,
            changed_share=share,
            mean_live=live.mean,
            mean_shadow=shadow.mean,
            mean_change=_difference(live.mean, shadow.mean),
            mean_change_pct=stats.change_pct(live.mean, shadow.mean),
            sum_change_pct=stats.change_pct(live.sum, shadow.sum),
            max_abs_diff=max_abs,
            mean_abs_diff=mean_abs,
            null_rate_live=null_live,
            null_rate_shadow=null_shadow,
            null_rate_change=_difference(null_live, null_shadow),
        )
    return out
