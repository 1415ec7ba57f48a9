"""The `consistent` rule of a declared change, without Spark: each partition's change against
the range's median, in robust spreads (`validate/consistency.py`)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from shadow_backfill.config import ValidationSpec
from shadow_backfill.document import ColumnChangeDoc, ColumnDoc, MetricsDoc
from shadow_backfill.validate.consistency import judge_range, spread_of
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.vocabulary import CheckStatus

SPEC = ValidationSpec.model_validate({"expected_changes": {"spend": "consistent"}})


def _day(i: int) -> str:
    return f"2024-{1 + i // 28:02d}-{1 + i % 28:02d}"


def _verdict(partition: str, change_pct: float, share: float = 1.0) -> PartitionVerdict:
    live = 100.0
    change = ColumnChangeDoc(mean_live=live, mean_shadow=live * (1 + change_pct / 100), changed_share=share, matched=20)
    return PartitionVerdict(partition, CheckStatus.PASS, [], MetricsDoc(column_changes={"spend": change}))


def _range(changes: list[float]) -> list[PartitionVerdict]:
    return [_verdict(_day(i), c) for i, c in enumerate(changes)]


def test_three_broken_days_among_57_consistent_ones_fail_and_name_the_column() -> None:
    rng = random.Random(7)
    changes = [4.0 + rng.uniform(-0.5, 0.5) for _ in range(60)]
    broken = {5, 33, 47}
    for i in broken:
        changes[i] = 40.0 + rng.uniform(-1, 1)
    verdicts = _range(changes)
    judge_range(verdicts, SPEC)
    failed = {v.partition for v in verdicts if v.verdict == CheckStatus.FAIL}
    assert failed == {_day(i) for i in broken}
    assert all(v.verdict == CheckStatus.PASS for v in verdicts if v.partition not in failed)
    (reason,) = verdicts[5].reasons
    assert reason.name == "consistent_mean_change_pct" and reason.column == "spend"
    typical = r"the range's typical change is \+(3\.[5-9]|4\.[0-4])% ± 0\.\d+ over 60 partitions"
    assert re.match(rf"spend \+{changes[5]:.1f}% on {_day(5)}; {typical}", reason.message), reason.message
    assert "fail > 5" in reason.message
    # the share of keys changed is alike everywhere (every key), so it passes on every day
    shares = [c for v in verdicts for c in v.checks if c.name == "consistent_changed_share"]
    assert len(shares) == 60 and {c.status for c in shares} == {CheckStatus.PASS}


def test_a_range_below_the_minimum_abstains_and_says_why() -> None:
    # `consistent` alone: nothing else bounds the change, so the partitions are held (warn)
    verdicts = _range([4.0, 4.1, 40.0, 3.9, 4.0])
    judge_range(verdicts, SPEC)
    assert {v.verdict for v in verdicts} == {CheckStatus.WARN}
    checks = [c for v in verdicts for c in v.checks]
    assert {c.status for c in checks} == {CheckStatus.WARN}
    assert "5 partitions have its mean_change_pct measured, the rule needs at least 8" in checks[0].message
    assert checks[0].message.endswith("nothing else bounds it: held")
    # beside written bounds, which judge it, it only says it abstained
    bounded = ValidationSpec.model_validate(
        {"expected_changes": {"spend": {"consistent": True, "mean_change_pct": {"fail": 50}}}}
    )
    verdicts = _range([4.0, 4.1, 40.0, 3.9, 4.0])
    judge_range(verdicts, bounded)
    assert {v.verdict for v in verdicts} == {CheckStatus.PASS}
    assert {c.status for v in verdicts for c in v.checks} == {CheckStatus.SKIPPED}


def test_a_few_partitions_are_judged_against_the_stored_rest_of_the_range() -> None:
    earlier = _range([4.0 + i * 0.01 for i in range(20)])
    again = [_verdict(_day(3), 4.0), _verdict(_day(40), 40.0)]  # day 3 re-validated, day 40 new
    judge_range(again, SPEC, earlier)
    assert [v.verdict for v in again] == [CheckStatus.PASS, CheckStatus.FAIL]
    assert "over 21 partitions" in again[1].reasons[0].message  # 19 stored others, and these 2
    assert all(not v.checks for v in earlier), "the stored partitions get no check"


def test_a_partition_without_matched_keys_has_no_changed_share() -> None:
    verdicts = _range([4.0] * 12)
    lonely = verdicts[3].metrics.column_changes["spend"]
    verdicts[3].metrics.column_changes["spend"] = lonely.model_copy(update={"matched": 0, "changed_share": 0.0})
    judge_range(verdicts, SPEC)
    assert {v.verdict for v in verdicts} == {CheckStatus.PASS}
    assert not [c for c in verdicts[3].checks if c.name == "consistent_changed_share"]


def test_a_change_applied_exactly_alike_does_not_make_float_noise_a_distance() -> None:
    verdicts = _range([4.0] * 20 + [4.0 + 1e-9, 4.04, 4.7])
    judge_range(verdicts, SPEC)
    statuses = [v.verdict for v in verdicts]
    assert statuses[:22] == [CheckStatus.PASS] * 22  # spread floor 0.1 percentage points
    assert statuses[22] == CheckStatus.FAIL  # 0.7 points from a change every other day made alike


def test_a_drop_is_not_a_rise() -> None:
    verdicts = _range([4.0] * 10 + [-4.0])
    judge_range(verdicts, SPEC)
    assert verdicts[-1].verdict == CheckStatus.FAIL


def test_consistent_beside_bounds_takes_its_own_distances() -> None:
    spec = ValidationSpec.model_validate(
        {"expected_changes": {"spend": {"consistent": {"warn": 2, "fail": None}, "mean_change_pct": {"fail": 5}}}}
    )
    assert spec.expected_changes["spend"].consistent is not None
    verdicts = _range([4.0] * 10 + [4.5])
    judge_range(verdicts, spec)
    assert verdicts[-1].verdict == CheckStatus.WARN  # 5 floors away: a warning only, no fail bound


def test_an_added_column_is_judged_on_its_null_rate_and_mean() -> None:
    spec = ValidationSpec.model_validate(
        {"expected_changes": {"tier": "consistent"}, "expected_schema_changes": {"added": ["tier"]}}
    )
    verdicts = [
        PartitionVerdict(
            _day(i),
            CheckStatus.PASS,
            [],
            MetricsDoc(columns={"tier": ColumnDoc(shadow_null_rate=0.5 if i == 3 else 0.02, shadow_mean=2.0)}),
        )
        for i in range(12)
    ]
    judge_range(verdicts, spec)
    assert [v.partition for v in verdicts if v.verdict == CheckStatus.FAIL] == [_day(3)]
    assert "tier null on 50.0% of rows" in verdicts[3].reasons[0].message
    assert {c.name for c in verdicts[0].checks} == {"consistent_null_rate", "consistent_mean"}


def test_config_forms_and_a_typo() -> None:
    assert SPEC.expected_changes["spend"].consistent is not None
    flag = ValidationSpec.model_validate({"expected_changes": {"spend": {"consistent": True}}})
    assert flag.expected_changes["spend"].consistent == SPEC.expected_changes["spend"].consistent
    with pytest.raises(ValidationError, match="'consistant' is not an expected change"):
        ValidationSpec.model_validate({"expected_changes": {"spend": "consistant"}})
    with pytest.raises(ValidationError, match="must not exceed"):
        ValidationSpec.model_validate({"expected_changes": {"spend": {"consistent": {"warn": 6, "fail": 5}}}})
    with pytest.raises(ValidationError):
        ValidationSpec.model_validate({"expected_changes": {"spend": {"consistent": {"min_partitions": 2}}}})


def test_the_spread_is_the_median_absolute_deviation_scaled() -> None:
    found = spread_of([1.0, 2.0, 3.0, 4.0, 100.0], floor=0.0)
    assert found.typical == 3.0 and found.spread == pytest.approx(1.4826 * 1.0)
    assert spread_of([5.0] * 4, floor=0.1).spread == 0.1


changes = st.floats(min_value=-50, max_value=200, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(typical=changes, n=st.integers(8, 60), seed=st.integers(0, 2**32 - 1))
def test_a_consistent_range_passes_whatever_its_typical_change(typical: float, n: int, seed: int) -> None:
    rng = random.Random(seed)
    verdicts = _range([typical + rng.uniform(-0.05, 0.05) for _ in range(n)])
    judge_range(verdicts, SPEC)
    assert {v.verdict for v in verdicts} == {CheckStatus.PASS}


@settings(max_examples=150, deadline=None)
@given(typical=changes, n=st.integers(8, 60), seed=st.integers(0, 2**32 - 1), shift=st.floats(2, 100))
def test_a_shifted_partition_among_consistent_ones_is_found_in_any_order(
    typical: float, n: int, seed: int, shift: float
) -> None:
    rng = random.Random(seed)
    values = [typical + rng.uniform(-0.05, 0.05) for _ in range(n)]
    odd = rng.randrange(n)
    values[odd] += shift * rng.choice((-1, 1))
    verdicts, again = _range(values), _range(values)
    shuffled = list(again)
    rng.shuffle(shuffled)
    judge_range(verdicts, SPEC)
    judge_range(shuffled, SPEC)
    assert [v.partition for v in verdicts if v.verdict == CheckStatus.FAIL] == [_day(odd)]
    assert [(v.verdict, v.checks) for v in verdicts] == [(v.verdict, v.checks) for v in again]
