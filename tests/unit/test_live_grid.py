"""Live's histogram read off a grid of percentiles (`measure/live_grid.py`): exact for a
partition of at most `STEPS` values, within a grid step above, NaN ordered above every number
as Spark orders it, and the bins adding up to live's values. The grid here is what
`percentile_approx` gives where it is exact (`_grid`);
`tests/formats/test_measure_reference.py` holds Spark's own to the reference."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure import live_grid
from shadow_backfill.validate.measure.bins import QUANTILES, thresholds

pytestmark = pytest.mark.unit


def _ordered(values: Sequence[float]) -> list[float]:
    return sorted(values, key=lambda v: (math.isnan(v), v))


def _grid(values: Sequence[float]) -> list[float]:
    """Spark's rule (`QuantileSummaries.query`, exact below its accuracy): the first value at
    p = 0 and the last at p = 1, else the value of rank ceil(p * n) taken in doubles, so that
    0.28 * 25 gives rank 8."""
    ordered = _ordered(values)
    return [
        ordered[0] if p == 0 else ordered[-1] if p == 1 else ordered[math.ceil(p * len(values)) - 1]
        for p in live_grid.GRID
    ]


def _exact(values: Sequence[float], cuts: Sequence[float]) -> list[float]:
    counts = [0.0] * (len(cuts) + 1)
    for v in values:
        counts[sum(1 for t in cuts if math.isnan(t) is False and (math.isnan(v) or v > t))] += 1
    return counts


def _deciles(values: Sequence[float]) -> list[float]:
    ordered = _ordered(values)
    return [ordered[max(1, math.ceil(q * len(values))) - 1] for q in QUANTILES]


@pytest.mark.parametrize("n", [1, 7, 100, 999, 1000])
def test_exact_up_to_the_grid_s_steps(n: int) -> None:
    rnd = random.Random(n)
    values = [float(rnd.randint(0, 12)) for _ in range(n)]  # ties on every edge
    values += [math.nan] * (n // 20)
    grid = _grid(values)
    assert live_grid.deciles(grid) == _deciles(values), "the grid's every 100th value is a decile"
    cuts = thresholds(live_grid.deciles(grid), Tolerance(abs=0.5, rel=0.0))
    assert list(live_grid.counts(grid, len(values), len(values), cuts)) == _exact(values, cuts)


def test_the_deciles_are_the_grid_s_every_hundredth_percentage() -> None:
    assert [live_grid.GRID[j] for j in live_grid.DECILE_AT] == QUANTILES


def test_a_rank_is_taken_in_doubles_as_spark_takes_it() -> None:
    assert live_grid.GRID[280] * 25 > 7, "0.28 * 25 in doubles is above 7"
    assert live_grid._rank(280, 25) == 8 and live_grid._rank(0, 25) == 1


def test_within_a_grid_step_above_it() -> None:
    rnd = random.Random(5)
    values = [math.exp(rnd.gauss(0, 1)) for _ in range(45_000)]
    grid = _grid(values)
    cuts = thresholds(live_grid.deciles(grid), EXACT)
    found, exact = live_grid.counts(grid, len(values), len(values), cuts), _exact(values, cuts)
    assert sum(found) == len(values)
    for j in range(len(cuts)):
        shares = [sum(h[: j + 1]) / len(values) for h in (found, exact)]
        assert abs(shares[0] - shares[1]) <= 0.5 / live_grid.STEPS + 1e-12, (j, shares)


def test_a_sample_s_counts_are_scaled_to_live_s_values() -> None:
    values = [float(i % 10) for i in range(1000)]
    cuts = thresholds(live_grid.deciles(_grid(values)), EXACT)
    assert live_grid.counts(_grid(values), 1000, 4000, cuts) == tuple(4 * c for c in _exact(values, cuts))
    assert live_grid.counts(_grid(values), 0, 0, cuts) == (0.0,) * (len(cuts) + 1)


def test_nan_lies_above_every_number_and_on_a_nan_threshold() -> None:
    values = [1.0, 2.0, math.nan, math.nan]
    grid = _grid(values)
    assert live_grid.count_at_or_below(grid, 4, 1.5) == 1
    assert live_grid.count_at_or_below(grid, 4, math.inf) == 2
    assert live_grid.count_at_or_below(grid, 4, math.nan) == 4
    assert live_grid.count_at_or_below(grid, 4, 0.5) == 0


def test_the_grids_of_a_validation_fit_the_driver() -> None:
    assert live_grid.fits(365, 8) and live_grid.fits(90, 30)
    assert not live_grid.fits(1095, 40), "43,800 grids: past the budget, nine deciles and the row bins"
