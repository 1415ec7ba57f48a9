"""The bins of a numeric column's histogram, in plain Python (no Spark, testable in the unit
tier): the thresholds a value is binned on, and live's deciles and counts read from a KLL
sketch of live's values (`live_sketch.py` has Spark build it; `LiveSketch` reads it).

A sketch is exact while it holds every value (at most `K` values in a partition): the deciles
are the values of rank ceil(q * n), as the reference measurer's, and the counts are exact.
Above `K` it estimates ranks: DataSketches bounds a rank's error by about 0.27% for K = 1024
(99% confidence); `tests/unit/test_bins.py` holds the deciles' ranks and the bins' shares of
60,000 values within `RANK_ERROR` of the exact ones, and `tests/e2e/test_live_sketch.py` a
sketch built by Spark to the exact counts.

NaN. The sketch skips NaN, while Spark orders NaN above every number (as the reference and
the row bins do), so a partition's NaNs are counted beside the sketch and stand above its
values: a decile whose rank falls among them is NaN, and a NaN threshold holds every value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadow_backfill.config import Tolerance

QUANTILES = [i / 10 for i in range(1, 10)]  # the deciles: 10 bins
K = 1024  # the sketch's size parameter: exact up to this many values per partition
RANK_ERROR = 0.005  # the tests' bound on a decile's rank and a bin's share; the sketch's is 0.27%
# What the sketches of one validation may bring to the driver. A sketch of K = 1024 is about
# 22-24 kB from 45,000 to a million values; past this budget (about 5,500 partition-columns)
# the deciles come from a sample instead (`percentile_approx`, nine numbers each), so the
# collect stays far below Spark's 1 GB `spark.driver.maxResultSize`.
SKETCH_BYTES, SKETCH_BUDGET = 24_000, 128 * 2**20


def sketches_fit(partitions: int, columns: int, each: int = SKETCH_BYTES) -> bool:
    """Whether one sketch (or `each` bytes of another summary: `live_grid.GRID_BYTES`) per
    partition and numeric column fits the driver's budget."""
    return partitions * columns * each <= SKETCH_BUDGET


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


class LiveSketch:
    """Live's values of one partition and column: a KLL sketch of its numbers (as Spark's
    `kll_sketch_agg_double` serializes it), how many values it has, NaN included, and NaNs."""

    def __init__(self, sketch: bytes, values: int, nans: int) -> None:
        from datasketches import kll_doubles_sketch

        self.sketch = kll_doubles_sketch.deserialize(sketch)
        self.values, self.nans = values, nans
        self.numbers = values - nans  # the values the sketch holds

    def deciles(self) -> list[float]:
        """The value of rank ceil(q * n) (1 at least) among live's values, NaN above the
        numbers. The sketch is asked at the middle of that rank, (r - 0.5) / n, so that no
        rounding of r / n can land it on the next value."""
        out = []
        for q in QUANTILES:
            rank = max(1, math.ceil(q * self.values))
            at = (rank - 0.5) / self.numbers if rank <= self.numbers else None
            out.append(math.nan if at is None else float(self.sketch.get_quantile(at, True)))
        return out

    def counts(self, thresholds: Sequence[float]) -> list[float]:
        """Live's values per bin of the ascending thresholds, a value's bin being the number
        of thresholds it lies above: the sketch's inclusive ranks times its numbers, rounded
        (exact while the sketch holds every value); a NaN lies above every number and on a NaN
        threshold, as Spark compares them."""
        at_or_below = [
            float(self.values) if math.isnan(t) else float(round(self.sketch.get_rank(t, True) * self.numbers))
            for t in thresholds
        ]
        at_or_below.append(float(self.values))
        return [at_or_below[0]] + [at_or_below[j] - at_or_below[j - 1] for j in range(1, len(at_or_below))]
