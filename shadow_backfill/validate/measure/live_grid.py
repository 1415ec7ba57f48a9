"""Live's histogram from the percentiles the profile job takes anyway: live's rows are not
read again to count it.

The profile job takes live's deciles with `percentile_approx` on a sample of live's keys (every
m-th, `profile_job.decile_every`), and the facts job used to read every live row once more to
count it into the bins of those deciles: on an unchanged table that read was a third of the
facts job (4.6 of 10.4 task seconds at 4.05 M rows per side, PySpark 3.5). Asked for 1,001
percentiles (0, 0.001, ..., 1) instead of nine, the same aggregation over the same sample
gives its whole distribution function, from which live's count at or below each threshold is
read here, in plain Python. The deciles are the grid's every 100th value: the same numbers the
nine percentages gave.

How close: where the grid is taken from at most `STEPS` values and every live row the counts
are exact, as the percentiles are; above, a count lies between two grid points 0.1% of the
values apart and is taken at their middle, and a sampled partition adds the sample's error,
about 0.5% of a share at 4,000 rows (its standard error). Below `EXACT_BELOW` values the grid
is exact on the sample, so every run reads the same counts. Verdicts do not rest on them: the
count is used only for a column whose fingerprints agree on both sides, whose shadow histogram
is then the same copy, or where shadow has no rows. A changed column is counted exactly, from
the key grouping.

On Spark 4.1 a KLL sketch of every live row gave the deciles and counts before, about as fast
(the measuring jobs of `logic` at 4.05 M rows per side: 19.1-19.7 s with it, 19.8-22.0 s with
the grid) but with other deciles on each run, as its compactions are random
(`docs/design/validation.md`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

STEPS = 1000
ACCURACY = 20_000  # percentile_approx's: a percentile's rank is within n / ACCURACY of its own
# Below this many values a summary is exact: Spark's `QuantileSummaries` gives a value inserted
# or merged after n others a margin of floor(2 n / ACCURACY) ranks, and with any margin its
# quantiles may come out a rank low, and depend on the order the tasks' summaries merge in.
EXACT_BELOW = ACCURACY // 2
# A grid held on the driver: 1,001 floats in the collected row, about 42 kB in Python (measured
# with tracemalloc). Past `BUDGET` (about 2,900 partition-columns) the profile keeps the nine
# deciles and the facts job counts live's histograms from the rows, so the collect stays far
# below Spark's 1 GB `spark.driver.maxResultSize` (`python -m bench budget`).
GRID_BYTES, BUDGET = 45_000, 128 * 2**20
GRID = [j / STEPS for j in range(STEPS + 1)]  # j / 1000 is the same float as i / 10 at j = 100 i
DECILE_AT = [100 * i for i in range(1, 10)]  # the grid's indexes of QUANTILES


def fits(partitions: int, columns: int) -> bool:
    """Whether one grid per partition and numeric column fits the driver's budget."""
    return partitions * columns * GRID_BYTES <= BUDGET


def grid_sql() -> str:
    """The grid as one SQL array of our own constants: built as 1,001 literal Columns it cost
    4,000 calls into the JVM, 2.5-3 s of planning per validation (measured on PySpark 3.5)."""
    return "array(" + ", ".join(f"{p!r}D" for p in GRID) + ")"


def deciles(grid: Sequence[float]) -> list[float]:
    return [float(grid[j]) for j in DECILE_AT]


def _numbers(grid: Sequence[float]) -> list[float]:
    """The grid's values below its NaNs (Spark orders NaN above every number, so they close it)."""
    out = [float(v) for v in grid]
    while out and math.isnan(out[-1]):
        out.pop()
    return out


def _rank(j: int, n: int) -> int:
    """The rank (1-based) of the value `percentile_approx` gives at GRID[j] among n values:
    Spark's `QuantileSummaries.query` takes ceil(p * n) in doubles (0.28 * 25 gives 8, not 7),
    and the first value at p = 0."""
    return max(1, math.ceil(GRID[j] * n))


def count_at_or_below(grid: Sequence[float], n: int, threshold: float) -> float:
    """How many of the sample's n values lie at or below `threshold`: between the rank of the
    last grid value at or below it and one less than the rank of the next (equal, so exact,
    while n <= STEPS), taken at the middle. A NaN threshold holds every value, as Spark
    compares them."""
    return _count(_numbers(grid), n, threshold)


def _count(numbers: Sequence[float], n: int, threshold: float) -> float:
    """`count_at_or_below` on the grid's numbers, found by bisection (the grid is ascending)."""
    if math.isnan(threshold):
        return float(n)
    j = bisect.bisect_right(numbers, threshold) - 1
    if j < 0:
        return 0.0
    if j == STEPS:
        return float(n)
    low, high = _rank(j, n), _rank(j + 1, n) - 1
    return (low + max(low, high)) / 2


def counts(grid: Sequence[float], sampled: int, values: int, thresholds: Sequence[float]) -> tuple[float, ...]:
    """Live's `values` per bin of the ascending thresholds (a value's bin being the number of
    thresholds it lies above), from the grid of a sample of `sampled` of them, scaled to all and
    rounded; the last bin takes the rest, so the bins add up to `values`."""
    if sampled <= 0:
        return tuple(0.0 for _ in range(len(thresholds) + 1))
    scale = values / sampled
    numbers = _numbers(grid)
    at_or_below = [float(round(_count(numbers, sampled, t) * scale)) for t in thresholds]
    at_or_below.append(float(values))
    return tuple([at_or_below[0]] + [at_or_below[k] - at_or_below[k - 1] for k in range(1, len(at_or_below))])
