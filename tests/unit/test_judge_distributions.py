"""The judge computes the distribution statistics from the counts the jobs hand it, without
Spark: a partition's measurements in, checks and a verdict out."""

from __future__ import annotations

from shadow_backfill.config import ValidationSpec
from shadow_backfill.validate import stats
from shadow_backfill.validate.distributions import distribution
from shadow_backfill.validate.judge import Judge
from shadow_backfill.validate.measurements import (
    Categories,
    ColumnMeasurement,
    ColumnPlan,
    Histogram,
    PartitionProfile,
    SideStats,
)
from shadow_backfill.vocabulary import CheckStatus

LIVE = [100.0] * 10  # a histogram over the live deciles: 100 values in each bin
SHIFTED = [0.0, 0.0, 0.0, 50.0, 100.0, 100.0, 150.0, 200.0, 200.0, 200.0]


def _column(shadow_hist: list[float], n: int = 1000) -> ColumnMeasurement:
    side = SideStats(count=n, null_rate=0.0)
    return ColumnMeasurement(side, side, histogram=Histogram(tuple(range(9)), tuple(LIVE), tuple(shadow_hist)))


def test_statistics_come_from_the_counts_alone() -> None:
    got = distribution(_column(SHIFTED)).as_dict()
    assert got == {
        "psi": stats.psi(LIVE, SHIFTED),
        "ks": stats.ks(LIVE, SHIFTED),
        "drift_pvalue": stats.ks_pvalue(LIVE, SHIFTED),
    }
    live, shadow = {"a": 5, "b": 5}, {"a": 9, "b": 1}
    got = distribution(ColumnMeasurement(categories=Categories(live, shadow))).as_dict()
    assert got == {"js_distance": stats.js_distance(live, shadow), "drift_pvalue": stats.chi2_pvalue(live, shadow)}
    one_side = distribution(ColumnMeasurement(categories=Categories({}, shadow)))
    assert not one_side.tested and one_side.as_dict() == {}, "one side only: no test"
    assert distribution(ColumnMeasurement(live=SideStats(10, 0.0))).as_dict() == {}


def test_the_judge_fails_a_shifted_distribution_and_publishes_its_statistics() -> None:
    plan = ColumnPlan(numeric=["amount"], categorical=[], compared=["amount"], added=[], removed=[], retyped=[])
    judge = Judge(ValidationSpec(), plan)
    verdicts, profiles = {}, {}
    for name, hist in (("same", LIVE), ("shifted", SHIFTED)):
        profiles[name] = PartitionProfile(name, live_rows=1000, shadow_rows=1000, columns={"amount": _column(hist)})
        verdicts[name] = judge.judge(profiles[name], [])
    same, shifted = verdicts["same"], verdicts["shifted"]
    assert same.verdict is CheckStatus.PASS, same.reasons
    assert shifted.verdict is CheckStatus.FAIL
    assert {c.name for c in shifted.reasons} >= {"psi", "ks"}
    assert shifted.metrics.as_json()["columns"]["amount"]["psi"] == stats.psi(LIVE, SHIFTED)
    assert shifted.metrics.as_json()["columns"]["amount"]["hist"]["shadow"] == SHIFTED
