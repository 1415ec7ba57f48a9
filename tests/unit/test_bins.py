"""The bins' thresholds (`measure/bins.py`): each decile plus the tolerance, kept ascending,
NaN last and infinities unmoved, by the one tolerance rule every measurer uses."""

from __future__ import annotations

import math

import pytest

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure.bins import thresholds

pytestmark = pytest.mark.unit


def test_thresholds_stay_ascending_and_nan_stays_last() -> None:
    cuts = thresholds([-4.0, -1.0, 2.0, math.nan], Tolerance(abs=0.0, rel=1.5))  # -4 * (1 - 1.5) = 2 > -1 * ...
    assert cuts[:3] == [2.0, 2.0, 5.0] and math.isnan(cuts[3])
    # no tolerance moves an infinite decile (-inf + 0 * inf would be NaN, out of order)
    assert thresholds([-math.inf, 0.0, math.inf], Tolerance(abs=0.5, rel=0.0)) == [-math.inf, 0.5, math.inf]


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
