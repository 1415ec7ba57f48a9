"""From measurements to a verdict: every check becomes observed value vs threshold.

A partition's verdict is its worst check: pass < warn < fail. All checks are kept, passing
ones too, so reports and JUnit can show what was looked at, not only what broke.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from shadow_backfill.config import Threshold, ValidationSpec
from shadow_backfill.validate import stats
from shadow_backfill.validate.check import FAIL, PASS, WARN, Check, reasons, worst
from shadow_backfill.validate.expectations import Outcome
from shadow_backfill.validate.plan import ColumnPlan, PartitionProfile

__all__ = ["FAIL", "PASS", "WARN", "Check", "Judge", "PartitionVerdict", "grade", "worst"]


@dataclass
class PartitionVerdict:
    partition: str
    verdict: str
    checks: list[Check] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def reasons(self) -> list[Check]:
        """The checks that made the verdict worse than pass, failures first."""
        return reasons(self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "verdict": self.verdict,
            "reasons": [c.as_dict() for c in self.reasons],
            "checks": [c.as_dict() for c in self.checks],
            "metrics": self.metrics,
        }


def grade(value: float | None, th: Threshold) -> str:
    """fail when the value exceeds `fail`, warn when it exceeds `warn`; equal to a bound passes."""
    if value is None:
        return PASS
    if th.fail is not None and value > th.fail:
        return FAIL
    if th.warn is not None and value > th.warn:
        return WARN
    return PASS


def _fmt(th: Threshold) -> str:
    parts = [f"{name} > {v}" for name, v in (("warn", th.warn), ("fail", th.fail)) if v is not None]
    return ", ".join(parts) or "reported only"


def _num(v: float | None) -> float | None:
    if v is None:
        return None
    return round(float(v), 6) if math.isfinite(v) else float(v)


class Judge:
    def __init__(self, spec: ValidationSpec, plan: ColumnPlan) -> None:
        self.spec = spec
        self.plan = plan

    def _metric(self, checks: list[Check], name: str, column: str | None, value: float | None, what: str) -> None:
        th = self.spec.threshold(name, column)
        status = grade(value, th)
        shown = "n/a" if value is None else f"{value:.4g}"
        checks.append(Check(name, column, status, _num(value), _fmt(th), f"{what} {shown} ({_fmt(th)})"))

    def _policy(self, checks: list[Check], name: str, column: str | None, values: list[str], what: str) -> None:
        policy = self.spec.policy(name, column)
        status = PASS if not values or policy == PASS else policy
        msg = f"{what}: {values[:10]}" if values else f"no {what}"
        checks.append(Check(name, column, status, values, f"policy {policy}", msg))

    def judge(self, prof: PartitionProfile, outcomes: list[Outcome]) -> PartitionVerdict:
        checks: list[Check] = []
        for o in outcomes:
            status = PASS if o.success else o.severity
            checks.append(
                Check(o.expectation, None, status, _jsonable(o.observed), "expectation", f"{o.expectation}: {o.detail}")
            )
        if prof.live_missing:
            policy = self.spec.missing_live
            status = {"suites_only": PASS, "needs_approval": WARN, "fail": FAIL}[policy]
            checks.append(
                Check(
                    "live_missing",
                    None,
                    status,
                    0,
                    f"policy {policy}",
                    f"no live partition to compare with (policy {policy})",
                )
            )
        else:
            self._drift(checks, prof)
        metrics = {
            "rows": {"live": prof.live_rows, "shadow": prof.shadow_rows},
            "columns": prof.columns,
            "keys": prof.keys,
            "schema": {
                "added": self.plan.added,
                "removed": self.plan.removed,
                "retyped": [list(r) for r in self.plan.retyped],
            },
        }
        return PartitionVerdict(prof.key, worst(c.status for c in checks), checks, _jsonable(metrics))

    def _drift(self, checks: list[Check], prof: PartitionProfile) -> None:
        spec = self.spec
        change = abs(prof.shadow_rows - prof.live_rows) / prof.live_rows
        self._metric(
            checks,
            "row_count_change",
            None,
            change,
            f"row count {prof.live_rows} -> {prof.shadow_rows}, relative change",
        )
        for c, m in prof.columns.items():
            if not spec.ignored(c):
                self._column_drift(checks, c, m)
        self._key_drift(checks, prof)
        p = self.plan
        schema_changes = (
            [f"+{c}" for c in p.added] + [f"-{c}" for c in p.removed] + [f"{c}: {a} -> {b}" for c, a, b in p.retyped]
        )
        self._policy(checks, "schema_change", None, schema_changes, "schema changes")

    def _column_drift(self, checks: list[Check], c: str, m: dict[str, Any]) -> None:
        if "live_null_rate" in m and "shadow_null_rate" in m:
            self._metric(
                checks,
                "null_rate_change",
                c,
                abs(m["shadow_null_rate"] - m["live_null_rate"]),
                f"null rate {m['live_null_rate']:.2%} -> {m['shadow_null_rate']:.2%}, change",
            )
        if "psi" in m:
            self._metric(checks, "psi", c, m["psi"], "PSI")
            self._metric(checks, "ks", c, m["ks"], "KS statistic")
        if m.get("live_mean") is not None and m.get("shadow_mean") is not None:
            self._metric(
                checks,
                "mean_shift",
                c,
                stats.mean_shift(m["live_mean"], m["shadow_mean"], m.get("live_std")),
                f"mean {m['live_mean']:.4g} -> {m['shadow_mean']:.4g}, shift in live std",
            )
            self._metric(
                checks,
                "std_change",
                c,
                stats.std_change(m.get("live_std"), m.get("shadow_std")),
                "relative std change",
            )
        if "js_distance" in m:
            self._metric(checks, "js_distance", c, m["js_distance"], "Jensen-Shannon distance")
        if "categories" in m:
            self._policy(checks, "new_categories", c, m.get("new", []), "new categories")
            self._policy(checks, "vanished_categories", c, m.get("vanished", []), "vanished categories")

    def _key_drift(self, checks: list[Check], prof: PartitionProfile) -> None:
        spec = self.spec
        keys = prof.keys
        if "duplicates" in keys:
            self._metric(checks, "duplicate_keys", None, float(keys["duplicates"]), "duplicate key rows")
        if "added" in keys:
            self._metric(checks, "keys_added", None, keys["added"] / prof.live_rows, "share of keys only in shadow")
            self._metric(
                checks, "keys_removed", None, keys["removed"] / prof.live_rows, "share of live keys missing from shadow"
            )
            matched = keys.get("matched") or 0
            self._metric(
                checks,
                "changed_fraction",
                None,
                (keys["changed"] / matched) if matched else 0.0,
                f"{keys['changed']} of {matched} matched rows changed; share",
            )
            for c, n in keys.get("changed_by_column", {}).items():
                col_spec = spec.columns.get(c)
                if col_spec is not None and col_spec.changed_fraction is not None and not col_spec.ignore:
                    self._metric(
                        checks,
                        "changed_fraction",
                        c,
                        (n / matched) if matched else 0.0,
                        f"{n} of {matched} values changed; share",
                    )


def _jsonable(v: Any) -> Any:
    """Plain JSON types only (Decimal, dates and numpy-ish values become float/str)."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)
