"""Reading live's KLL sketch (`measure/bins.py`): exact while it holds every value (the deciles
and counts the reference measurer takes), within the stated rank error above that, and NaN
ordered above every number as Spark orders it. Sketches built here by the same DataSketches
library whose format Spark's `kll_sketch_agg_double` writes (`tests/e2e/test_live_sketch.py`
reads one Spark built)."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence

import pytest
from datasketches import kll_doubles_sketch

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure.bins import QUANTILES, RANK_ERROR, K, LiveSketch, sketches_fit, thresholds

pytestmark = pytest.mark.unit


def _sketch(values: Sequence[float]) -> LiveSketch:
    sketch = kll_doubles_sketch(K)
    numbers = [v for v in values if not math.isnan(v)]
    for v in numbers:
        sketch.update(v)
    return LiveSketch(sketch.serialize(), len(values), len(values) - len(numbers))


def _exact_deciles(values: Sequence[float]) -> list[float]:
    """The reference measurer's: the value of rank ceil(q * n), NaN sorted last."""
    ordered = sorted(values, key=lambda v: (math.isnan(v), v))
    return [ordered[max(1, math.ceil(q * len(values))) - 1] for q in QUANTILES]


def _exact_counts(values: Sequence[float], cuts: Sequence[float]) -> list[float]:
    """Each value in bin 'number of thresholds it lies above', NaN above every threshold but
    a NaN one (Spark's order: NaN > x is true, NaN > NaN is false)."""
    counts = [0.0] * (len(cuts) + 1)
    for v in values:
        counts[sum(1 for t in cuts if (math.isnan(v) and not math.isnan(t)) or v > t)] += 1
    return counts


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(
    "values",
    [
        [float(i % 7) for i in range(40)],  # ties on every decile
        [1.5, -2.0, 3.25],  # fewer values than deciles
        [*(float(i) for i in range(30)), math.nan, math.nan, math.nan, math.nan],  # NaNs above
        [math.nan, math.nan],  # nothing but NaN
        [*(-math.inf for _ in range(25)), *(float(i) for i in range(75)), math.inf],  # infinite deciles
        [random.Random(7).gauss(0, 1) for _ in range(K)],  # as many values as the sketch keeps
    ],
    ids=["ties", "three values", "NaNs", "only NaN", "infinities", "K values"],
)
@pytest.mark.parametrize(
    "tolerance",
    [Tolerance(abs=0.0, rel=0.0), Tolerance(abs=0.5, rel=0.0), Tolerance(abs=0.0, rel=1.5)],
    ids=["exact", "abs", "rel above 1"],
)
def test_exact_while_the_sketch_holds_every_value(values: list[float], tolerance: Tolerance) -> None:
    live = _sketch(values)
    deciles = live.deciles()
    assert _same(deciles, _exact_deciles(values)), deciles
    cuts = thresholds(deciles, tolerance)
    assert live.counts(cuts) == _exact_counts(values, cuts)


def test_thresholds_stay_ascending_and_nan_stays_last() -> None:
    cuts = thresholds([-4.0, -1.0, 2.0, math.nan], Tolerance(abs=0.0, rel=1.5))  # -4 * (1 - 1.5) = 2 > -1 * ...
    assert cuts[:3] == [2.0, 2.0, 5.0] and math.isnan(cuts[3])
    # no tolerance moves an infinite decile (-inf + 0 * inf would be NaN, out of order)
    assert thresholds([-math.inf, 0.0, math.inf], Tolerance(abs=0.5, rel=0.0)) == [-math.inf, 0.5, math.inf]


def test_the_sketches_of_a_validation_fit_the_driver() -> None:
    assert sketches_fit(365, 10) and sketches_fit(90, 60)
    assert not sketches_fit(730, 60), "43,800 sketches: past the budget, the deciles come from a sample"


def test_estimates_within_the_stated_rank_error_above_k() -> None:
    """60,000 values, about 60 times what the sketch keeps: each decile's true rank and each
    threshold's share of values at or below it within `RANK_ERROR` of the exact ones."""
    rng = random.Random(11)
    values = [rng.lognormvariate(0, 1.2) for _ in range(60_000)] + [float(rng.randint(0, 9)) for _ in range(5_000)]
    live = _sketch(values)
    ordered = sorted(values)
    n = len(values)
    for q, d in zip(QUANTILES, live.deciles(), strict=True):
        low, high = bisect.bisect_left(ordered, d) / n, bisect.bisect_right(ordered, d) / n
        assert low - RANK_ERROR <= q <= high + RANK_ERROR, (q, d, low, high)
    cuts = thresholds(live.deciles(), EXACT)
    estimated, exact = live.counts(cuts), _exact_counts(values, cuts)
    for j in range(len(cuts)):
        below, truly = sum(estimated[: j + 1]) / n, sum(exact[: j + 1]) / n
        assert abs(below - truly) <= RANK_ERROR, (j, below, truly)


def test_one_tolerance_rule_for_numbers_and_edges() -> None:
    """`Tolerance.close` is the rule every measurer and the downstream judge use, `upper` the
    bin edge it implies: the largest value close to an edge is close to it, a larger one is not."""
    tol = Tolerance(abs=0.5, rel=0.1)
    assert tol.close(10.0 + 1.5, 10.0) and not tol.close(10.0 + 1.5001, 10.0)
    assert tol.close(tol.upper(-20.0), -20.0) and not tol.close(tol.upper(-20.0) + 1e-9, -20.0)
    assert tol.upper(math.inf) == math.inf and tol.upper(-math.inf) == -math.inf
    assert EXACT.close(1.0, 1.0) and not EXACT.close(1.0 + 1e-15, 1.0)
    with pytest.raises(ValueError, match="frozen"):
        tol.abs = 1.0  # type: ignore[misc]
