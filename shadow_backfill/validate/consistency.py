"""A declared change judged by its consistency across the validated range (`consistent`).

A logic change moves every partition of a backfill in a similar way, and a partition the new
logic broke stands out from the rest of the range. So instead of bounds the author would have
to guess, each partition's change of a declared column is compared with the range's typical
change: the median over the partitions, with the range's spread as 1.4826 x the median
absolute deviation (the standard deviation's robust twin: a few broken partitions move neither).
A partition more than `warn` / `fail` spreads from the median warns / fails.

Pure code over the judge's published measurements (`MetricsDoc`): no Spark, and the same
verdicts whatever the order of the partitions. Below `min_partitions` partitions with the
change measured the rule abstains with a skipped check that says why. The spread has a floor
per metric (`FLOORS`), so a change applied exactly alike everywhere (spread 0) does not make
float noise a distance: a partition must differ from the typical change by more than `fail`
floors to fail.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shadow_backfill.config import Consistency, Threshold, ValidationSpec
from shadow_backfill.document import MetricsDoc, Number
from shadow_backfill.validate.judge import PartitionVerdict, grade
from shadow_backfill.vocabulary import Check, CheckStatus, worst


class Measured(Protocol):
    """A partition's measurements: a fresh verdict or a stored one (`state.VerdictRecord`)."""

    @property
    def partition(self) -> str: ...
    @property
    def metrics(self) -> MetricsDoc: ...


MAD_TO_SD = 1.4826  # a normal distribution's standard deviation per median absolute deviation


@dataclass(frozen=True)
class Metric:
    """One change metric the rule compares across the range, in the units users read it in."""

    name: str
    read: Callable[[MetricsDoc, str], float | None]
    floor: Callable[[float], float]  # the least spread, given the typical value
    shown: Callable[[float], str]
    said: str  # how a partition's value reads: "{column} {value}" -> "spend +41.0%"
    noun: str  # what the range's typical value is of: "the range's typical change"


def _finite(x: Number) -> float | None:
    """A published number, or None where it is missing or not finite (published as text): an
    infinite mean has no distance from the others."""
    return x if isinstance(x, float | int) and math.isfinite(x) else None


def _mean_change_pct(m: MetricsDoc, column: str) -> float | None:
    """The signed change of the mean, % of |live mean| (a drop and a rise are different changes)."""
    c = m.column_changes.get(column)
    live, shadow = (None, None) if c is None else (_finite(c.mean_live), _finite(c.mean_shadow))
    if live is None or shadow is None or live == 0:
        return None
    return (shadow - live) / abs(live) * 100


def _changed_share_pct(m: MetricsDoc, column: str) -> float | None:
    """Of the matched keys only: a partition without one (no live side) has no share, not 0%."""
    c = m.column_changes.get(column)
    share = None if c is None or not c.matched else _finite(c.changed_share)
    return None if share is None else share * 100


def _null_rate_pct(m: MetricsDoc, column: str) -> float | None:
    c = m.columns.get(column)
    return None if c is None or c.shadow_null_rate is None else c.shadow_null_rate * 100


def _mean(m: MetricsDoc, column: str) -> float | None:
    c = m.columns.get(column)
    return None if c is None else _finite(c.shadow_mean)


def _points(_: float) -> float:
    return 0.1  # a tenth of a percentage point


def _pct(x: float) -> str:
    return f"{x:+.1f}%"


def _share(x: float) -> str:
    return f"{x:.1f}%"


# Of a compared column: its mean's change and the share of keys it changed on; of a column the
# change adds (no live side): its null rate and, for a number, its mean.
COMPARED = (
    Metric("mean_change_pct", _mean_change_pct, _points, _pct, "{column} {value}", "change"),
    Metric(
        "changed_share", _changed_share_pct, _points, _share, "{column} changed on {value} of matched keys", "share"
    ),
)
ADDED = (
    Metric("null_rate", _null_rate_pct, _points, _share, "{column} null on {value} of rows", "null rate"),
    Metric(
        "mean",
        _mean,
        lambda typical: max(abs(typical) * 1e-3, 1e-12),
        lambda x: f"{x:.6g}",
        "{column} mean {value}",
        "mean",
    ),
)


@dataclass(frozen=True)
class Spread:
    """The range's typical value of a metric (its median) and its robust spread."""

    typical: float
    spread: float
    partitions: int


def spread_of(values: Sequence[float], floor: float) -> Spread:
    """Median and 1.4826 x median absolute deviation, the latter at least `floor`."""
    typical = statistics.median(values)
    mad = statistics.median(abs(v - typical) for v in values)
    return Spread(typical, max(MAD_TO_SD * mad, floor), len(values))


def judge_range(verdicts: Sequence[PartitionVerdict], spec: ValidationSpec, earlier: Sequence[Measured] = ()) -> None:
    """Add the `consistent` checks of every declared column to the measured partitions of one
    validation, and their verdicts' worst check; the other partitions are left as they are.

    `earlier`: the stored measurements of the shadow's other partitions (their latest
    validation). They join the range the typical change is taken over, and get no check: a
    validation of a few partitions (a re-run of the ones that failed, a nightly window, a
    pipeline's chunk) is judged against the whole backfill rather than abstaining."""
    judged = {v.partition for v in verdicts}
    earlier = [e for e in earlier if e.partition not in judged]
    added = set(spec.expected_schema_changes.added)
    before = {id(v): len(v.checks) for v in verdicts}
    for column, change in spec.expected_changes.items():
        if change.consistent is None:
            continue
        bounded = bool(change.model_fields_set - {"consistent"})
        for metric in ADDED if column in added else COMPARED:
            _judge_metric(verdicts, earlier, column, metric, change.consistent, bounded)
    for v in verdicts:  # a verdict only worsens by the checks added here
        v.verdict = worst([v.verdict, *(c.status for c in v.checks[before[id(v)] :])])


def _judge_metric(
    verdicts: Sequence[PartitionVerdict],
    earlier: Sequence[Measured],
    column: str,
    metric: Metric,
    rule: Consistency,
    bounded: bool,
) -> None:
    """`bounded`: the column has written bounds beside `consistent` (they judge it when this abstains)."""
    values = {v.partition: x for v in [*earlier, *verdicts] if (x := metric.read(v.metrics, column)) is not None}
    if not values:
        return  # not measured anywhere (e.g. no keys for a changed share): nothing to judge
    name = f"consistent_{metric.name}"
    if len(values) < rule.min_partitions:
        # With no written bound beside it, nothing else judges how much the column moved: the
        # partition is held for approval (warn) rather than passed unjudged.
        status, held = (CheckStatus.SKIPPED, "") if bounded else (CheckStatus.WARN, "; nothing else bounds it: held")
        why = (
            f"{column}: not judged for consistency: {len(values)} partitions have its {metric.name} "
            f"measured, the rule needs at least {rule.min_partitions} (consistent.min_partitions){held}"
        )
        for v in verdicts:
            if v.partition in values:
                v.checks.append(Check(name, column, status, None, "abstained", why))
        return
    found = spread_of(list(values.values()), metric.floor(statistics.median(values.values())))
    bounds = Threshold(warn=rule.warn, fail=rule.fail)
    limits = ", ".join(f"{n} > {b:g}" for n, b in (("warn", rule.warn), ("fail", rule.fail)) if b is not None)
    typical = f"{metric.shown(found.typical)} ± {found.spread:.2g}"
    for v in verdicts:
        x = values.get(v.partition)
        if x is None:
            continue
        distance = abs(x - found.typical) / found.spread
        status = grade(distance, bounds)
        said = metric.said.format(column=column, value=metric.shown(x))
        message = (
            f"{said} on {v.partition}; the range's typical {metric.noun} is {typical} over {found.partitions} "
            f"partitions (robust distance {distance:.3g}; {limits or 'reported only'})"
        )
        threshold = f"robust distance {limits or 'reported only'} from {typical}"
        v.checks.append(Check(name, column, status, round(x, 6), threshold, message))
