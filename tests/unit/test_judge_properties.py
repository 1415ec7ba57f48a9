"""Properties of the judge over many generated partitions, without Spark (hypothesis).

The judge's rules in a sentence each, held over hundreds of random measurements: the sample-size
bands decide which distribution test judges; the change contract fails exactly the columns
that changed without being declared; a verdict is its worst judged check; and a larger value of
a metric never grades better than a smaller one.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shadow_backfill.config import ExpectedChange, PValue, Threshold, ValidationSpec
from shadow_backfill.validate.judge import Judge, grade, grade_pvalue
from shadow_backfill.validate.measurements import (
    ColumnDiff,
    ColumnMeasurement,
    ColumnPlan,
    Histogram,
    KeyDiff,
    Moments,
    PartitionProfile,
    SideStats,
)
from shadow_backfill.vocabulary import Check, CheckStatus

S = CheckStatus
DISTANCES = {"psi", "ks", "mean_shift", "std_change"}


def _expected_verdict(checks: list[Check]) -> CheckStatus:
    """A verdict as the docs state it (docs/concepts.md), written out: fail if any check failed, else warn if
    any warned, else pass (skipped checks count for nothing)."""
    statuses = {c.status for c in checks}
    return S.FAIL if S.FAIL in statuses else S.WARN if S.WARN in statuses else S.PASS


bins = st.lists(st.integers(0, 500).map(float), min_size=10, max_size=10).filter(lambda h: sum(h) > 0)
SETTINGS = settings(max_examples=300, deadline=None)


def _numeric(live_hist: list[float], shadow_hist: list[float], n_live: int, n_shadow: int) -> ColumnMeasurement:
    edges = tuple(float(i) for i in range(9))
    return ColumnMeasurement(
        live=SideStats(n_live, 0.0, Moments(5.0, 2.0, 5.0 * n_live)),
        shadow=SideStats(n_shadow, 0.0, Moments(5.5, 2.1, 5.5 * n_shadow)),
        histogram=Histogram(edges, tuple(live_hist), tuple(shadow_hist)),
    )


@SETTINGS
@given(live=bins, shadow=bins, n_live=st.integers(0, 5000), n_shadow=st.integers(0, 5000))
def test_the_sample_size_bands_pick_the_test_that_judges(
    live: list[float], shadow: list[float], n_live: int, n_shadow: int
) -> None:
    spec = ValidationSpec()
    plan = ColumnPlan(numeric=["x"], categorical=[], compared=["x"], added=[], removed=[], retyped=[])
    prof = PartitionProfile("p", live_rows=max(n_live, 1), shadow_rows=max(n_shadow, 1))
    prof.columns["x"] = _numeric(live, shadow, n_live, n_shadow)
    verdict = Judge(spec, plan).judge(prof, [])
    tests = {c.name: c for c in verdict.checks if c.column == "x" and c.name in DISTANCES | {"drift_pvalue"}}
    assert set(tests) == DISTANCES | {"drift_pvalue"}
    n = min(n_live, n_shadow)
    for name, check in tests.items():
        if n < spec.min_rows_for_distribution:
            assert check.status is S.SKIPPED, (n, check)
        elif (name == "drift_pvalue") == (n >= spec.min_rows_for_distance):
            assert check.status is S.PASS and check.threshold == "reported only", (n, check)
        else:
            th = spec.threshold(name, "x")
            graded = grade_pvalue(check.observed, th) if name == "drift_pvalue" else grade(check.observed, th)
            # the observed value is published rounded to 6 decimals: on a bound, it may round across
            near = any(b is not None and abs(check.observed - b) < 1e-6 for b in (th.warn, th.fail))
            assert check.threshold != "reported only" and (near or check.status is graded), (n, check)
    assert verdict.verdict is _expected_verdict(verdict.checks)


compared = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5, unique=True)


@SETTINGS
@given(
    columns=compared,
    data=st.data(),
    policy=st.sampled_from(["fail", "warn", "ignore"]),
)
def test_the_contract_flags_exactly_the_undeclared_changes(
    columns: list[str], data: st.DataObject, policy: str
) -> None:
    declared = data.draw(st.lists(st.sampled_from(columns), min_size=1, unique=True))
    changed = {c: data.draw(st.integers(0, 100)) for c in columns}
    spec = ValidationSpec(
        expected_changes={c: ExpectedChange() for c in declared},
        unexpected_changes=policy,  # type: ignore[arg-type]
    )
    plan = ColumnPlan(numeric=[], categorical=[], compared=columns, added=[], removed=[], retyped=[])
    keys = KeyDiff(matched=100, changed=max(changed.values()), by_column={c: ColumnDiff(n) for c, n in changed.items()})
    prof = PartitionProfile("p", live_rows=100, shadow_rows=100, keys=keys)
    verdict = Judge(spec, plan).judge(prof, [])
    unexpected = {c.column: c for c in verdict.checks if c.name == "unexpected_changes"}
    assert set(unexpected) == set(columns) - set(declared), "one check per undeclared column, none for a declared one"
    for c, check in unexpected.items():
        flagged = changed[c] > 0 and policy != "ignore"
        assert check.status is (S(policy) if flagged else S.PASS), (c, changed[c], check)
        assert check.observed == changed[c]
    assert verdict.verdict is _expected_verdict(verdict.checks)


bound = st.one_of(st.none(), st.floats(0, 10, allow_nan=False))


@SETTINGS
@given(a=st.floats(0, 20, allow_nan=False), b=st.floats(0, 20, allow_nan=False), warn=bound, fail=bound)
def test_a_larger_value_never_grades_better(a: float, b: float, warn: float | None, fail: float | None) -> None:
    if warn is not None and fail is not None and warn > fail:
        warn, fail = fail, warn  # a config with warn above fail is refused
    th = Threshold(warn=warn, fail=fail)
    low, high = sorted((a, b))
    assert grade(low, th).rank <= grade(high, th).rank
    assert grade(None, th) is S.PASS, "no value, nothing to judge"


probability = st.floats(0, 1, allow_nan=False)


@SETTINGS
@given(a=probability, b=probability, warn=st.one_of(st.none(), probability), fail=st.one_of(st.none(), probability))
def test_a_smaller_pvalue_never_grades_better(a: float, b: float, warn: float | None, fail: float | None) -> None:
    if warn is not None and fail is not None and fail > warn:
        warn, fail = fail, warn  # a p-value fails below `fail`, so `fail` is the smaller bound
    th = PValue(warn=warn, fail=fail)
    low, high = sorted((a, b))
    assert grade_pvalue(low, th).rank >= grade_pvalue(high, th).rank
