"""The distribution statistics of one column, from what the measuring jobs counted.

The jobs count; the judge computes. For a numeric column the jobs count both sides' values into
the bins of the live deciles (`hist`); for a categorical one, each side's value frequencies
(`categories`). From those alone come PSI, the KS statistic and its p-value, the Jensen-Shannon
distance and the chi-square p-value: pure arithmetic, tested without Spark, and the same
whichever job (or engine) did the counting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shadow_backfill.validate import stats


def distribution_statistics(measured: Mapping[str, Any]) -> dict[str, Any]:
    """The statistics one column's counts allow, by the names report.json publishes them under
    (`psi`, `ks`, `drift_pvalue` for a histogram; `js_distance`, `drift_pvalue` for categories
    counted on both sides); empty when there are no counts."""
    if (hist := measured.get("hist")) is not None:
        live, shadow = hist["live"], hist["shadow"]
        return {
            "psi": stats.psi(live, shadow),
            "ks": stats.ks(live, shadow),
            "drift_pvalue": stats.ks_pvalue(live, shadow),
        }
    categories = measured.get("categories")
    if categories is not None and categories["live"] and categories["shadow"]:
        live, shadow = categories["live"], categories["shadow"]
        return {"js_distance": stats.js_distance(live, shadow), "drift_pvalue": stats.chi2_pvalue(live, shadow)}
    return {}


def with_statistics(columns: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each column's measurements with its distribution statistics beside them."""
    return {c: {**m, **distribution_statistics(m)} for c, m in columns.items()}
