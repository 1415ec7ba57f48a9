"""The distribution statistics of one column, from what the measuring jobs counted.

The jobs count; the judge computes. For a numeric column the jobs count both sides' values into
the bins of the live deciles (a `Histogram`); for a categorical one, each side's value
frequencies (`Categories`). From those alone come PSI, the KS statistic and its p-value, the
Jensen-Shannon distance and the chi-square p-value: pure arithmetic, tested without Spark, and
the same whichever job (or engine) did the counting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadow_backfill.validate import stats
from shadow_backfill.validate.measurements import ColumnMeasurement


@dataclass(frozen=True)
class Distribution:
    """The statistics one column's counts allow: PSI, KS and its p-value for a histogram; the
    JS distance and the chi-square p-value for categories counted on both sides; none without
    counts (`tested` is False)."""

    psi: float | None = None
    ks: float | None = None
    js_distance: float | None = None
    drift_pvalue: float | None = None

    @property
    def tested(self) -> bool:
        return self.drift_pvalue is not None

    @property
    def numeric(self) -> bool:
        """Tested on a histogram (KS), not on categories (chi-square)."""
        return self.psi is not None

    def as_dict(self) -> dict[str, Any]:
        """The published form: only the statistics computed, by their report.json names."""
        if self.numeric:
            return {"psi": self.psi, "ks": self.ks, "drift_pvalue": self.drift_pvalue}
        if self.tested:
            return {"js_distance": self.js_distance, "drift_pvalue": self.drift_pvalue}
        return {}


def distribution(measured: ColumnMeasurement) -> Distribution:
    """The statistics of one column's counts (see `Distribution`)."""
    if (h := measured.histogram) is not None:
        return Distribution(
            psi=stats.psi(h.live, h.shadow),
            ks=stats.ks(h.live, h.shadow),
            drift_pvalue=stats.ks_pvalue(h.live, h.shadow),
        )
    c = measured.categories
    if c is not None and c.live and c.shadow:
        return Distribution(
            js_distance=stats.js_distance(c.live, c.shadow), drift_pvalue=stats.chi2_pvalue(c.live, c.shadow)
        )
    return Distribution()
