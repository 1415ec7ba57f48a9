"""From measurements to a verdict: every check becomes observed value vs threshold.

A partition's verdict is its worst check: pass < warn < fail. All checks are kept, passing
ones too, so reports and JUnit can show what was looked at, not only what broke.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from shadow_backfill.config import PValue, Threshold, ValidationSpec
from shadow_backfill.document import MetricsDoc
from shadow_backfill.validate import stats
from shadow_backfill.validate.changes import ColumnChange, column_changes
from shadow_backfill.validate.distributions import Distribution, distribution
from shadow_backfill.validate.measurements import ColumnMeasurement, ColumnPlan, Outcome, PartitionProfile
from shadow_backfill.vocabulary import Check, CheckStatus, reasons, worst

__all__ = ["Check", "CheckStatus", "Judge", "PartitionVerdict", "grade", "worst"]

# What a partition with no live counterpart gets, by the `missing_live` policy.
MISSING_LIVE = {"suites_only": CheckStatus.PASS, "needs_approval": CheckStatus.WARN, "fail": CheckStatus.FAIL}


@dataclass
class PartitionVerdict:
    partition: str
    verdict: CheckStatus
    checks: list[Check] = field(default_factory=list)
    metrics: MetricsDoc = field(default_factory=MetricsDoc)  # report.json's `metrics`

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
            "metrics": self.metrics.as_json(),
        }


def grade(value: float | None, th: Threshold) -> CheckStatus:
    """fail when the value exceeds `fail`, warn when it exceeds `warn`; equal to a bound passes."""
    if value is None:
        return CheckStatus.PASS
    if th.fail is not None and value > th.fail:
        return CheckStatus.FAIL
    if th.warn is not None and value > th.warn:
        return CheckStatus.WARN
    return CheckStatus.PASS


def grade_pvalue(p: float | None, th: PValue) -> CheckStatus:
    """A significance test: fail when the p-value is below `fail`, warn below `warn`."""
    if p is None:
        return CheckStatus.PASS
    if th.fail is not None and p < th.fail:
        return CheckStatus.FAIL
    if th.warn is not None and p < th.warn:
        return CheckStatus.WARN
    return CheckStatus.PASS


def _fmt(th: Threshold | PValue) -> str:
    sign = "<" if isinstance(th, PValue) else ">"
    parts = [f"{name} {sign} {v}" for name, v in (("warn", th.warn), ("fail", th.fail)) if v is not None]
    return ", ".join(parts) or "reported only"


def _num(v: float | None) -> float | None:
    if v is None:
        return None
    return round(float(v), 6) if math.isfinite(v) else float(v)


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


# (metric, unit shown after the value) for the change metrics of one column
_CHANGE_TEXT = {
    "mean_change": "mean change",
    "mean_change_pct": "mean change, % of live mean",
    "sum_change_pct": "sum change, % of live sum",
    "changed_share": "share of matched keys changed beyond tolerance",
    "max_abs_diff": "largest |shadow - live| on a matched key",
    "mean_abs_diff": "mean |shadow - live| over matched keys",
}


class Judge:
    """Grades one partition's measurements against the config: the change contract when one is
    declared, the drift thresholds otherwise (the rules: docs/concepts.md, "The change contract")."""

    def __init__(self, spec: ValidationSpec, plan: ColumnPlan) -> None:
        self.spec = spec
        self.plan = plan

    def _metric(
        self, checks: list[Check], name: str, column: str | None, value: float | None, what: str, th: Any = None
    ) -> None:
        th = self.spec.threshold(name, column) if th is None else th
        status = grade_pvalue(value, th) if isinstance(th, PValue) else grade(value, th)
        checks.append(Check(name, column, status, _num(value), _fmt(th), f"{what} {_shown(value)} ({_fmt(th)})"))

    def _policy(self, checks: list[Check], name: str, column: str | None, values: list[str], what: str) -> None:
        policy = self.spec.policy(name, column)
        status = CheckStatus.PASS if not values else CheckStatus(policy)
        msg = f"{what}: {values[:10]}" if values else f"no {what}"
        checks.append(Check(name, column, status, values, f"policy {policy}", msg))

    def judge(self, prof: PartitionProfile, outcomes: list[Outcome]) -> PartitionVerdict:
        checks: list[Check] = []
        for o in outcomes:
            status = CheckStatus.PASS if o.success else CheckStatus(o.severity)
            checks.append(
                Check(o.expectation, None, status, _jsonable(o.observed), "expectation", f"{o.expectation}: {o.detail}")
            )
        changes = column_changes(prof, self.plan)
        tests = {c: distribution(m) for c, m in prof.columns.items()}
        if prof.live_missing:
            policy = self.spec.missing_live
            status = MISSING_LIVE[policy]
            msg = f"no live partition to compare with (policy {policy})"
            checks.append(Check("live_missing", None, status, 0, f"policy {policy}", msg))
            for c, m in prof.columns.items():
                self._added_null_rate(checks, c, m)
        else:
            self._drift(checks, prof, tests, changes)
        metrics = {
            "rows": {"live": prof.live_rows, "shadow": prof.shadow_rows},
            "columns": {c: {**m.as_dict(), **tests[c].as_dict()} for c, m in prof.columns.items()},
            "keys": prof.keys.as_dict() if prof.keys is not None else {},
            "column_changes": {c: change.as_dict() for c, change in changes.items()},
            "samples": [sample.as_dict() for sample in prof.samples],
            "schema": {
                "added": self.plan.added,
                "removed": self.plan.removed,
                "retyped": [list(r) for r in self.plan.retyped],
            },
        }
        published = MetricsDoc.model_validate(_jsonable(metrics))
        return PartitionVerdict(prof.key, worst(c.status for c in checks), checks, published)

    def _drift(
        self,
        checks: list[Check],
        prof: PartitionProfile,
        tests: dict[str, Distribution],
        changes: dict[str, ColumnChange],
    ) -> None:
        change = abs(prof.shadow_rows - prof.live_rows) / prof.live_rows
        what = f"row count {prof.live_rows} -> {prof.shadow_rows}, relative change"
        self._metric(checks, "row_count_change", None, change, what)
        contract = bool(self.spec.contract)
        for c, m in prof.columns.items():
            if self.spec.ignored(c) or (contract and c not in self.spec.expected_changes and c in self.plan.compared):
                continue  # ignored, or held to equality below
            self._column(checks, c, m, tests[c], changes.get(c))
        self._key_drift(checks, prof)
        if contract and prof.keys is not None:
            self._unexpected(checks, prof, changes)
        self._schema(checks)

    def _schema(self, checks: list[Check]) -> None:
        """Schema changes nobody declared, by the `schema_change` policy; a declared one that did
        not happen warns, naming it (the new logic does not do what its author said it does)."""
        p, declared = self.plan, self.spec.expected_schema_changes
        undeclared = (
            [f"+{c}" for c in p.added if c not in declared.added]
            + [f"-{c}" for c in p.removed if c not in declared.removed]
            + [f"{c}: {a} -> {b}" for c, a, b in p.retyped if declared.retyped.get(c) != b]
        )
        self._policy(checks, "schema_change", None, undeclared, "schema changes")
        if not (declared.added or declared.removed or declared.retyped):
            return
        types = p.shadow_types
        absent = (
            [f"+{c}" for c in declared.added if c not in types]
            + [f"-{c}" for c in declared.removed if c in types]
            + [f"{c}: -> {t}" for c, t in declared.retyped.items() if types.get(c) != t]
        )
        status = CheckStatus.WARN if absent else CheckStatus.PASS
        msg = f"declared schema changes that did not happen: {absent}" if absent else "declared schema changes happened"
        checks.append(Check("expected_schema_change", None, status, absent, "declared", msg))

    def _column(
        self, checks: list[Check], c: str, m: ColumnMeasurement, test: Distribution, ch: ColumnChange | None
    ) -> None:
        """One column's null rate, change metrics (where bounded) and distribution tests."""
        listed = c in self.spec.expected_changes
        self._added_null_rate(checks, c, m)
        if m.live is not None and m.shadow is not None and self.spec.threshold("null_rate_change", c):
            what = f"null rate {m.live.null_rate:.2%} -> {m.shadow.null_rate:.2%}, change"
            self._metric(checks, "null_rate_change", c, abs(m.shadow.null_rate - m.live.null_rate), what)
        for name, text in _CHANGE_TEXT.items():
            th = self.spec.threshold(name, c)
            value = getattr(ch, name) if ch is not None else None
            if th is not None and (th.warn is not None or th.fail is not None) and value is not None:
                self._metric(checks, name, c, value, f"{c}: {text}")
        self._distributions(checks, c, m, test)
        if (cats := m.categories) is not None:
            for name, values, what in (
                ("new_categories", cats.new, "new categories"),
                ("vanished_categories", cats.vanished, "vanished categories"),
            ):
                if not listed or self.spec.column_override(name, c) is not None:
                    self._policy(checks, name, c, values, what)

    def _added_null_rate(self, checks: list[Check], c: str, m: ColumnMeasurement) -> None:
        """An added column's only bound, `expected_changes.<column>.null_rate`: it has no live
        side, so it is judged on shadow alone, with or without a live partition."""
        if c in self.plan.added and m.shadow is not None and (th := self.spec.column_override("null_rate", c)):
            self._metric(checks, "null_rate", c, m.shadow.null_rate, f"{c}: null rate in shadow (added column)", th)

    def _distributions(self, checks: list[Check], c: str, m: ColumnMeasurement, test: Distribution) -> None:
        """Distribution tests, judged only on enough rows: between the two minimums by the
        p-value, from `min_rows_for_distance` on by the distances (see ValidationSpec)."""
        spec = self.spec
        n = min(m.live.count if m.live else 0, m.shadow.count if m.shadow else 0)
        pvalue_test = "KS test p-value" if test.numeric else "chi-square test p-value"
        tests: list[tuple[str, float | None, str]] = []
        if test.numeric:
            tests += [("psi", test.psi, "PSI"), ("ks", test.ks, "KS statistic")]
        live, shadow = (s.moments if s is not None else None for s in (m.live, m.shadow))
        if live is not None and shadow is not None and live.mean is not None and shadow.mean is not None:
            shift = stats.mean_shift(live.mean, shadow.mean, live.std)
            tests += [
                ("mean_shift", shift, f"mean {live.mean:.4g} -> {shadow.mean:.4g}, shift in live std"),
                ("std_change", stats.std_change(live.std, shadow.std), "relative std change"),
            ]
        if test.js_distance is not None:
            tests.append(("js_distance", test.js_distance, "Jensen-Shannon distance"))
        if test.tested:
            tests.append(("drift_pvalue", test.drift_pvalue, pvalue_test))
        for name, value, what in tests:
            th = spec.threshold(name, c)
            if th is None:
                continue  # an expected-change column without a bound for this test
            if n < spec.min_rows_for_distribution:
                need = f"needs {spec.min_rows_for_distribution} rows per side"
                msg = f"{what}: not enough rows ({n} < {spec.min_rows_for_distribution})"
                checks.append(Check(name, c, CheckStatus.SKIPPED, _num(value), need, msg))
            elif spec.column_override(name, c) is None and (name == "drift_pvalue") == (
                n >= spec.min_rows_for_distance
            ):
                regime = (
                    f"from {spec.min_rows_for_distance} rows per side the distances judge"
                    if name == "drift_pvalue"
                    else f"below {spec.min_rows_for_distance} rows per side the {pvalue_test} judges"
                )
                msg = f"{what} {_shown(value)} (reported only: {regime})"
                checks.append(Check(name, c, CheckStatus.PASS, _num(value), "reported only", msg))
            else:
                self._metric(checks, name, c, value, what, th)

    def _unexpected(self, checks: list[Check], prof: PartitionProfile, changes: dict[str, ColumnChange]) -> None:
        """Every compared column outside the contract must be equal on every matched key."""
        policy = self.spec.unexpected_changes
        for c in self.plan.compared:
            if c in self.spec.expected_changes or self.spec.ignored(c):
                continue
            n, matched = changes[c].changed or 0, changes[c].matched or 0
            status = CheckStatus.PASS if n == 0 or policy == "ignore" else CheckStatus(policy)
            msg = f"{c!r} is equal on all {matched} matched keys within tolerance"
            if n:
                msg = f"{c!r} changed on {n} of {matched} matched keys, but is not in expected_changes"
                example = next((s for s in prof.samples if s.column == c), None)
                if example is not None:
                    keys = ", ".join(f"{k}={v}" for k, v in example.keys.items())
                    msg += f"; e.g. {keys}: {example.live!r} -> {example.shadow!r}"
            checks.append(Check("unexpected_changes", c, status, n, f"policy {policy}", msg))

    def _key_drift(self, checks: list[Check], prof: PartitionProfile) -> None:
        keys = prof.keys
        if keys is None:
            return
        self._metric(checks, "duplicate_keys", None, float(keys.duplicates), "duplicate key rows")
        self._metric(checks, "keys_added", None, keys.added / prof.live_rows, "share of keys only in shadow")
        self._metric(
            checks, "keys_removed", None, keys.removed / prof.live_rows, "share of live keys missing from shadow"
        )
        matched = keys.matched
        self._metric(
            checks,
            "changed_fraction",
            None,
            (keys.changed / matched) if matched else 0.0,
            f"{keys.changed} of {matched} matched rows changed beyond tolerance; share",
        )
        for c, diff in keys.by_column.items():
            col_spec = self.spec.columns.get(c)
            if col_spec is not None and col_spec.changed_fraction is not None and not col_spec.ignore:
                self._metric(
                    checks,
                    "changed_fraction",
                    c,
                    (diff.changed / matched) if matched else 0.0,
                    f"{diff.changed} of {matched} values changed; share",
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
