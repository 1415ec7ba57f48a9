"""How much each column changed, in the units its author thinks in.

Pure arithmetic on what the two drift jobs measured: the partition-level moments from the
profile (means, sums, null rates) and the per-key comparison from the facts job (keys whose
value differs beyond the tolerance, and by how much). This is what `expected_changes` bounds
and what report.json publishes per partition as `column_changes`.
"""

from __future__ import annotations

from typing import Any

from shadow_backfill.validate import stats
from shadow_backfill.validate.measurements import ColumnPlan, PartitionProfile


def column_changes(prof: PartitionProfile, plan: ColumnPlan) -> dict[str, dict[str, Any]]:
    """Per compared column: matched keys, changed keys, means, sums and null rates of both sides."""
    keys = prof.keys
    matched = keys.matched if keys is not None else None
    out: dict[str, dict[str, Any]] = {}
    for c in plan.compared:
        m = prof.columns.get(c, {})
        diff = keys.by_column.get(c) if keys is not None else None
        changed = diff.changed if diff is not None else None
        max_abs, mean_abs = diff.abs_diffs if diff is not None and diff.abs_diffs is not None else (None, None)
        mean_live, mean_shadow = m.get("live_mean"), m.get("shadow_mean")
        null_live, null_shadow = m.get("live_null_rate"), m.get("shadow_null_rate")
        out[c] = {
            "matched": matched,
            "changed": changed,
            "changed_share": (changed / matched)
            if matched and changed is not None
            else (0.0 if matched == 0 else None),
            "mean_live": mean_live,
            "mean_shadow": mean_shadow,
            "mean_change": abs(mean_shadow - mean_live) if mean_live is not None and mean_shadow is not None else None,
            "mean_change_pct": stats.change_pct(mean_live, mean_shadow),
            "sum_change_pct": stats.change_pct(m.get("live_sum"), m.get("shadow_sum")),
            "max_abs_diff": max_abs,
            "mean_abs_diff": mean_abs,
            "null_rate_live": null_live,
            "null_rate_shadow": null_shadow,
            "null_rate_change": abs(null_shadow - null_live)
            if null_live is not None and null_shadow is not None
            else None,
        }
    return out
