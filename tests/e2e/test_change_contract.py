"""The gate judges a logic change as its author declares it (validation.expected_changes), on
every backend: what was meant to change and by how much, that nothing else did, float noise
is not a change, and distribution tests need enough rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
from pyspark.sql import functions as F
from support import END, START, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill import Backfill, ConfigError
from shadow_backfill.cli import app
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.validate.measure import sample_cut
from shadow_backfill.validate.measure.facts_spec import _threshold, bin_of
from shadow_backfill.validate.measure.live_grid import EXACT_BELOW
from shadow_backfill.validate.measure.profile_job import DECILE_SAMPLE, decile_every

# The judge works on the rows read, whatever their format: one backend per Spark engine (the
# e2e default).
BIG, WARN, CAT = (d.isoformat() for d in (t.BIG_DAY, t.WARN_DAY, t.CAT_DAY))
CONTRACT: dict[str, Any] = {
    "expected_changes": {"amount": {"mean_change": {"warn": 0.3, "fail": 1.0}}},
    "unexpected_changes": "fail",
}


def _verdicts(bf: Backfill, start: str = START, end: str = END) -> dict[str, PartitionVerdict]:
    assert bf.run(start, end).ok
    return {v.partition: v for v in bf.validate().verdicts}


def _check(v: PartitionVerdict, check_id: str) -> Any:
    return next(c for c in v.checks if c.id == check_id)


def test_contract_judges_the_intended_change_and_nothing_else(make: MakeBackfill, tmp_path: Path) -> None:
    bf = make(transform={"function": "sb_test_transforms:amount_moves"}, validation=CONTRACT)
    verdicts = _verdicts(bf)
    assert {k: v.verdict for k, v in verdicts.items() if v.verdict != "pass"} == {
        BIG: "fail",
        WARN: "warn",
        CAT: "fail",
    }

    # amount is judged only by its bound: mean change 0.2 passes, 0.4 warns, 20 fails
    assert _check(verdicts["2024-01-01"], "mean_change[amount]").observed == pytest.approx(0.2)
    assert _check(verdicts[WARN], "mean_change[amount]").status == "warn"
    big = verdicts[BIG]
    assert [c.id for c in big.reasons] == ["mean_change[amount]"], big.reasons
    assert big.reasons[0].observed == pytest.approx(20.0)
    assert not any(c.column == "amount" and c.name in ("psi", "ks", "mean_shift") for c in big.checks)

    # cat was not meant to change: the reason names it, the count and an example
    (reason,) = verdicts[CAT].reasons
    assert reason.id == "unexpected_changes[cat]" and reason.status == "fail" and reason.observed == 2
    assert "'cat' changed on 2 of 5 matched keys" in reason.message and "id=1: " in reason.message
    assert "-> 'z'" in reason.message

    changes = verdicts[CAT].metrics.as_json()["column_changes"]
    assert changes["cat"]["changed"] == 2 and changes["cat"]["changed_share"] == pytest.approx(0.4)
    assert changes["amount"]["changed"] == 4 and changes["amount"]["max_abs_diff"] == pytest.approx(0.4)
    # samples: unexpected columns first in each turn, largest differences first within a column
    samples = verdicts[CAT].metrics.as_json()["samples"]
    assert [(s["column"], s["keys"]["id"]) for s in samples[:4]] == [
        ("cat", 1),
        ("amount", 4),
        ("cat", 2),
        ("amount", 3),
    ]
    assert samples[0]["shadow"] == "z" and samples[0]["live"] in ("a", "b", "c")
    amount = [s for s in samples if s["column"] == "amount"]
    assert [s["keys"]["id"] for s in amount] == [4, 3, 2, 1]
    assert amount[0]["shadow"] - amount[0]["live"] == pytest.approx(0.4)

    doc = json.loads(bf.report(tmp_path / "r")["json"].read_text())
    part = next(p for p in doc["partitions"] if p["partition"] == CAT)
    assert set(part["metrics"]["column_changes"]["amount"]) >= {
        "matched",
        "changed",
        "changed_share",
        "mean_live",
        "mean_shadow",
        "mean_change",
        "mean_change_pct",
        "max_abs_diff",
        "null_rate_live",
        "null_rate_shadow",
    }
    assert part["metrics"]["samples"][0] == {
        "keys": {"id": 1},
        "column": "cat",
        "live": samples[0]["live"],
        "shadow": "z",
    }


def test_unexpected_changes_policy_and_sample_limit(make: MakeBackfill) -> None:
    bf = make(
        transform={"function": "sb_test_transforms:amount_moves"},
        validation={**CONTRACT, "unexpected_changes": "warn", "sample_rows": 3},
    )
    verdicts = _verdicts(bf, "2024-01-06", "2024-01-07")
    assert verdicts[CAT].verdict == "warn" and verdicts[CAT].reasons[0].id == "unexpected_changes[cat]"
    assert (
        len(verdicts[CAT].metrics.as_json()["samples"]) == 3
        and len(verdicts["2024-01-06"].metrics.as_json()["samples"]) == 3
    )


def test_float_noise_is_not_a_change(make: MakeBackfill) -> None:
    contract = {"expected_changes": {"cat": {"changed_share": {"fail": 0.0}}}}
    bf = make(transform={"function": "sb_test_transforms:float_noise"}, validation=contract)
    verdicts = _verdicts(bf, START, "2024-01-02")
    assert {v.verdict for v in verdicts.values()} == {"pass"}
    v = verdicts[START]
    assert _check(v, "unexpected_changes[amount]").observed == 0
    assert v.metrics.as_json()["column_changes"]["amount"]["changed"] == 0 and v.metrics.as_json()["samples"] == []
    assert v.metrics.as_json()["keys"]["changed"] == 0
    hist = v.metrics.as_json()["columns"]["amount"]["hist"]  # a value on a decile stays in its bin
    assert hist["live"] == hist["shadow"] and v.metrics.as_json()["columns"]["amount"]["psi"] == 0
    assert hist["edges_every"] == 1  # small partitions: the deciles of every live row

    exact = make(
        transform={"function": "sb_test_transforms:float_noise"},
        validation={**contract, "tolerance": {"abs": 0, "rel": 0}},
    )
    verdicts = _verdicts(exact, START, "2024-01-02")
    assert {v.verdict for v in verdicts.values()} == {"fail"}
    assert verdicts[START].reasons[0].id == "unexpected_changes[amount]"
    hist = verdicts[START].metrics.as_json()["columns"]["amount"]["hist"]
    assert hist["live"] != hist["shadow"]  # without tolerance the deciles' own rows move up a bin


def test_distribution_tests_need_enough_rows(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:amount_moves"})
    v = _verdicts(bf, BIG, BIG)[BIG]
    skipped = {c.id: c.message for c in v.checks if c.status == "skipped"}
    for metric in ("psi", "ks", "mean_shift", "std_change", "drift_pvalue"):
        assert "not enough rows (5 < 100)" in skipped[f"{metric}[amount]"], skipped
    assert "js_distance[cat]" in skipped
    assert v.verdict == "pass"  # skipped checks never pass, warn or fail: nothing else differs
    # the CLI says that a pass on small partitions judged no distribution, and what to do
    result = CliRunner().invoke(app, ["validate", str(bf.config_path), "--start", BIG, "--end", BIG])  # type: ignore[attr-defined]
    assert result.exit_code == 0, result.output
    assert "distribution checks in 1 partition(s) were not judged (too few rows)" in result.output
    assert "validation.expected_changes" in result.output


def _seed_wide(bf: Backfill, start: str, end: str, rows: int = t.WIDE_ROWS) -> None:
    keys = bf.scheme.expand(start, end)
    df = t.wide(bf.spark, [bf.scheme.value(k) for k in keys], rows)
    bf.table_format.create(bf.live_table, df.schema, ["ds"])
    bf.table_format.overwrite_partitions(bf.live_table, df, keys)


def test_modest_samples_are_judged_by_a_pvalue(make: MakeBackfill) -> None:
    shift, nudge = t.SHIFT_DAY.isoformat(), t.NUDGE_DAY.isoformat()
    bf = make(seed_live=False, transform={"function": "sb_test_transforms:wide_shifted"})
    _seed_wide(bf, shift, nudge)
    verdicts = _verdicts(bf, shift, nudge)
    moved = _check(verdicts[shift], "drift_pvalue[amount]")
    assert moved.status == "fail" and moved.observed < 1e-6 and "KS test p-value" in moved.message
    psi = _check(verdicts[shift], "psi[amount]")
    assert psi.status == "pass" and "reported only" in psi.message and psi.observed > 0.25
    assert _check(verdicts[nudge], "drift_pvalue[amount]").status == "pass"
    assert verdicts[nudge].verdict == "pass"

    # from min_rows_for_distance on, the distances judge and the p-value is reported only
    big = make(
        seed_live=False,
        live_table=bf.live_table,
        state={"url": bf.config.state_url},
        transform={"function": "sb_test_transforms:wide_shifted"},
        validation={"min_rows_for_distance": 200},
    )
    v = {x.partition: x for x in big.validate(shift, nudge).verdicts}[shift]
    assert _check(v, "psi[amount]").status == "fail"
    assert "reported only" in _check(v, "drift_pvalue[amount]").message


def test_samples_are_the_largest_changes_however_many_keys_changed(
    make: MakeBackfill, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every key changed, the samples are ranked only above a cut (`sample_cut`, here from
    the first row on): they must still be the largest differences, ties broken by key, a
    missing difference first, and a text's changes by key, taken in turns across the columns;
    and the same as without the cut."""
    monkeypatch.setattr(sample_cut, "FROM_ROWS", 0)
    shift, nudge = t.SHIFT_DAY.isoformat(), t.NUDGE_DAY.isoformat()
    bf = make(seed_live=False, transform={"function": "sb_test_transforms:wide_ranked"}, validation={"sample_rows": 5})
    keys = bf.scheme.expand(shift, nudge)
    live = t.wide(bf.spark, [bf.scheme.value(k) for k in keys]).withColumn("label", F.lit("a"))
    bf.table_format.create(bf.live_table, live.schema, ["ds"])
    bf.table_format.overwrite_partitions(bf.live_table, live, keys)
    verdicts = _verdicts(bf, shift, nudge)

    def sampled(day: str) -> list[tuple[str, int]]:
        return [(s["column"], s["keys"]["id"]) for s in verdicts[day].metrics.as_json()["samples"]]

    def plainly_ranked(day: str, column: str) -> list[int]:  # every change, by a join of the tables
        live, shadow = (bf.table_format.read_partitions(table, [day]) for table in (bf.live_table, bf.shadow_table))
        s, lv = F.col(f"s.{column}"), F.col(f"l.{column}")
        size = F.abs(s - lv) if column == "amount" else F.lit(None).cast("double")
        top = (
            shadow.alias("s")
            .join(live.alias("l"), ["ds", "id"])
            .filter(~s.eqNullSafe(lv))
            .select("id", F.coalesce(size, F.lit(float("inf"))).alias("a"))
            .orderBy(F.col("a").desc(), "id")
            .limit(5)
        )
        return [r["id"] for r in top.collect()]

    amounts = plainly_ranked(shift, "amount")
    assert amounts[:2] == [10, 20] and sampled(shift) == [("amount", i) for i in amounts]
    amounts, labels = plainly_ranked(nudge, "amount"), plainly_ranked(nudge, "label")
    assert amounts == [299, 298, 297, 296, 295] and labels == [0, 3, 6, 9, 12]
    turns = [("amount", amounts[0]), ("label", labels[0]), ("amount", amounts[1]), ("label", labels[1])]
    assert sampled(nudge) == [*turns, ("amount", amounts[2])]
    top = verdicts[nudge].metrics.as_json()["samples"][0]
    assert top["shadow"] - top["live"] == pytest.approx(2.99)

    monkeypatch.setattr(sample_cut, "FROM_ROWS", 10**9)  # every change ranked
    again = {v.partition: v.metrics.as_json()["samples"] for v in bf.validate(shift, nudge).verdicts}
    assert again == {day: verdicts[day].metrics.as_json()["samples"] for day in (shift, nudge)}


def test_deciles_of_a_large_partition_come_from_a_sample(make: MakeBackfill) -> None:
    """Past twice DECILE_SAMPLE live rows, the bin edges come from every m-th live row (the
    percentiles cost per row); each bin still holds about a tenth of live, and the histograms
    add up to every row (live's, for a column no key changed, read off the percentile grid,
    scaled from its sample)."""
    day = t.SHIFT_DAY.isoformat()
    bf = make(seed_live=False, transform={"function": "sb_test_transforms:wide_big"})
    _seed_wide(bf, day, day, t.WIDE_BIG_ROWS)
    v = _verdicts(bf, day, day)[day]
    hist = v.metrics.as_json()["columns"]["amount"]["hist"]
    assert hist["edges_every"] == 4 and DECILE_SAMPLE <= t.WIDE_BIG_ROWS / 4 < 2 * DECILE_SAMPLE
    assert sum(hist["live"]) == sum(hist["shadow"]) == t.WIDE_BIG_ROWS
    assert all(0.09 * t.WIDE_BIG_ROWS <= n <= 0.11 * t.WIDE_BIG_ROWS for n in hist["live"]), hist["live"]
    assert hist["live"] == hist["shadow"] and v.verdict == "pass"
    # without keys a row has no identity to be chosen by: the deciles of every row
    keyless = make(seed_live=False, keys=[], live_table=bf.live_table, state={"url": bf.config.state_url})
    v = {x.partition: x for x in keyless.validate(day, day).verdicts}[day]
    assert v.metrics.as_json()["columns"]["amount"]["hist"]["edges_every"] == 1


def test_the_decile_sample_leaves_each_partition_enough_rows() -> None:
    """Each partition's own m, a power of two, leaves it `DECILE_SAMPLE` rows or more and fewer
    than twice that: below percentile_approx's accuracy, where its summary keeps every value,
    so the deciles are exact on the sample whatever order Spark merges the tasks' summaries in,
    however the partitions' sizes differ."""
    assert decile_every({"a": 45_000, "b": 7_999, "c": 0, "d": 8_000}) == {"a": 8, "b": 1, "c": 1, "d": 2}
    assert decile_every({}) == {}
    for rows in (DECILE_SAMPLE * 2 - 1, DECILE_SAMPLE * 2, 45_000, 444_400, 10**9 + 7):
        every = decile_every({"p": rows})["p"]
        assert every & (every - 1) == 0 and (rows < 2 * DECILE_SAMPLE or rows / every >= DECILE_SAMPLE)
        taken = rows / every  # and the hash's spread: five standard deviations
        assert taken < 2 * DECILE_SAMPLE and taken + 5 * taken**0.5 < EXACT_BELOW, (rows, every)


def test_a_value_s_bin_is_the_number_of_thresholds_it_lies_above(spark: Any) -> None:
    """The binary search of `bin_of` against a plain count, on ties (equal deciles), both
    infinities, NaN (Spark orders it above every number) and null (no bin)."""
    thresholds = [-2.0, -1.0, 0.0, 0.0, 0.5, 1.0, 1.0, 3.0, 7.0]
    values = [float("-inf"), -3.0, -2.0, -1.5, -1.0, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 6.9, 7.0, 8.0, float("inf")]
    names = [_threshold(0, j) for j in range(len(thresholds))]
    rows = [(v, *thresholds) for v in [*values, float("nan"), None]]
    df = spark.createDataFrame(rows, "v double, " + ", ".join(f"{n} double" for n in names))
    got = [r["b"] for r in df.select(bin_of(0, "v").alias("b")).collect()]
    assert got == [sum(v > q for q in thresholds) for v in values] + [len(thresholds), None]


def test_contract_mistakes_are_refused(make: MakeBackfill) -> None:
    bf = make(
        transform={"function": "sb_test_transforms:amount_moves"},
        validation={"expected_changes": {"amuont": {"mean_change": {"fail": 1}}}},
    )
    assert bf.run(START, "2024-01-01").ok
    with pytest.raises(ConfigError, match=r"expected_changes: \['amuont'\] is not a column of both tables"):
        bf.validate()
    assert bf.verdicts() == []
    with pytest.raises(ConfigError, match="expected_changes needs keys"):
        make(seed_live=False, keys=[], validation=CONTRACT)
    with pytest.raises(ConfigError, match="is the partition column or a key"):
        make(seed_live=False, validation={"expected_changes": {"id": {}}})


def test_change_bounds_without_a_contract(make: MakeBackfill) -> None:
    """Without expected_changes the change metrics can still be bounded per column or table-wide;
    every column stays judged by its drift checks."""
    bf = make(
        transform={"function": "sb_test_transforms:amount_moves"},
        validation={"columns": {"amount": {"mean_change_pct": {"fail": 10}}}, "max_abs_diff": {"warn": 0.35}},
    )
    verdicts = _verdicts(bf, "2024-01-02", BIG)
    assert [c.id for c in verdicts[BIG].reasons if c.status == "fail"] == ["mean_change_pct[amount]"]
    assert _check(verdicts["2024-01-02"], "mean_change_pct[amount]").status == "pass"
    assert _check(verdicts["2024-01-02"], "max_abs_diff[amount]").status == "warn"  # 0.4 > 0.35
    assert not any(c.name == "unexpected_changes" for c in verdicts[BIG].checks)
    assert _check(verdicts[BIG], "null_rate_change[cat]").status == "pass"
