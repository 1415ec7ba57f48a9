"""The bins of a numeric column's histogram, in plain Python (no Spark, testable in the unit
tier): the deciles they are cut at and the thresholds a value is binned on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadow_backfill.config import Tolerance

QUANTILES = [i / 10 for i in range(1, 10)]  # the deciles: 10 bins


def thresholds(deciles: Sequence[float], tolerance: Tolerance) -> list[float]:
    """Each decile plus the tolerance (`Tolerance.upper`): a value within tolerance of an edge counts
    as on it, so float noise cannot move it across. Kept ascending, as the bins are searched
    (a relative tolerance above 1 would not keep negative deciles in order); a NaN decile
    (live NaNs) stays NaN, the largest, and an infinite one stays itself (no tolerance moves
    it, and -inf + rel * inf would be NaN)."""
    out: list[float] = []
    last = -math.inf
    for q in deciles:
        t = tolerance.upper(q)
        last = last if t < last else t
        out.append(last)
    return out
