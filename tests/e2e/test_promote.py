"""Promotion and rollback behaviour every table backend must have (each test runs once per `backend`)."""

from __future__ import annotations

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import functions as F
from support import DRIFT, END, QUIET, START, MakeBackfill, published, seed, validated
from typer.testing import CliRunner

from shadow_backfill import RefusedError, UsageError
from shadow_backfill.cli import app

# a promotion's and a rollback's commits, and the refusals that read live's history, are the format's
pytestmark = pytest.mark.every_backend


def _same(a, b) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


@pytest.mark.store
@pytest.mark.smoke  # the one end-to-end scenario per backend on the second Spark line
def test_promote_exactly_the_passing_partitions_then_roll_back(make: MakeBackfill) -> None:
    bf = validated(make)
    fmt = bf.table_format
    live_before = fmt.current_version(bf.live_table)
    before = bf.read_live().collect()

    plan = bf.plan_promotion()
    assert DRIFT in plan.refused and "verdict fail" in plan.refused[DRIFT]
    assert len(plan.partitions) == 9 and plan.live_version == live_before
    assert fmt.current_version(bf.live_table) == live_before, "a dry run writes nothing"

    plan, rec = bf.promote()
    assert rec is not None and rec.partitions == plan.partitions and DRIFT not in rec.partitions
    assert rec.live_version_before == live_before and rec.live_version_after == fmt.current_version(bf.live_table)
    # exactly one commit on live, carrying the audit trail
    commits = fmt.commits_touching(bf.live_table, live_before, rec.partitions)
    assert [c.version for c, _ in commits] == [rec.live_version_after]
    props = commits[0][0].properties
    assert props["shadow-backfill.promotion-id"] == rec.id and props["shadow-backfill.kind"] == "promote"
    assert props["shadow-backfill.config-hash"] == bf.config.config_hash
    # promoted live partitions equal their shadow partitions; the failed one is unchanged
    _same(bf.read_live(rec.partitions), bf.read_shadow(rec.partitions))
    _same(bf.read_live([DRIFT]), bf.read_live([DRIFT], version=live_before))
    assert bf.read_live([DRIFT]).count() == t.ROWS_PER_DAY

    # promoting again changes nothing: live changed after validation, so everything is refused
    again_plan, again = bf.promote()
    assert again is None and set(again_plan.refused) == set(bf.scheme.expand(START, END))

    rb = bf.rollback(rec.id)
    assert rb.target == rec.id and sorted(rb.partitions) == sorted(rec.partitions)
    assert sorted(bf.read_live().collect()) == sorted(before), "rollback restores the pre-promotion content"
    with pytest.raises(RefusedError, match="already rolled back"):
        bf.rollback(rec.id)
    # a rollback can itself be undone: the promotion is back
    redo = bf.rollback(rb.id)
    _same(bf.read_live(rec.partitions), bf.read_shadow(rec.partitions))
    hist = bf.history()
    assert [h.kind for h in hist] == ["promote", "rollback", "rollback"]
    assert hist[0].undone_by is None and hist[1].undone_by == redo.id

    # the whole table back to the version before the promotion
    whole = bf.rollback(to_version=live_before)
    assert whole.to_version == live_before
    assert sorted(bf.read_live().collect()) == sorted(before)

    history = CliRunner().invoke(app, ["history", str(bf.config_path), "--json"])  # type: ignore[attr-defined]
    rows = published(history.stdout, "history.schema.json")
    assert [r["kind"] for r in rows] == ["promote", "rollback", "rollback", "rollback"]
    for key in ("id", "kind", "partitions", "live_version_before", "live_version_after", "at"):
        assert key in rows[0]


def test_refusals(make: MakeBackfill) -> None:
    bf = validated(make)
    live_before = bf.table_format.current_version(bf.live_table)
    with pytest.raises(RefusedError, match=f"{DRIFT}: verdict fail"):
        bf.promote([DRIFT, "2024-01-01"])  # named partitions: all or nothing
    with pytest.raises(UsageError, match="never recomputed"):
        bf.promote(["2023-12-31"])
    with pytest.raises(UsageError, match="unknown promotion id"):
        bf.rollback("promote-nope")
    # a dry run's twin plans as its object does and refuses to write; the object stays writing
    twin = bf.for_dry_run()
    assert twin.plan_promotion().partitions == bf.plan_promotion().partitions and not bf.read_only
    with pytest.raises(UsageError, match="promote: this object is read-only"):
        twin.promote(["2024-01-01"])
    assert bf.table_format.current_version(bf.live_table) == live_before
    # the shadow partition is rewritten after validation -> refused, says which
    rewrite = bf.run(partitions=["2024-01-02"], force=True)
    plan = bf.plan_promotion()
    # named as the race with `run --force` it is, not as "no partition passed" (issue 57)
    named = f"partition 2024-01-02 was rewritten by {rewrite.run_id} after it was validated"
    assert plan.refused["2024-01-02"].startswith(named), plan.refused
    # the live partition changes after validation -> refused, says which
    live_df = bf.read_live(["2024-01-03"]).withColumn("amount", F.col("amount") + 1)
    bf.table_format.overwrite_partitions(bf.live_table, live_df, ["2024-01-03"])
    plan = bf.plan_promotion()
    assert "live changed after validation" in plan.refused["2024-01-03"]
    assert "2024-01-04" in plan.partitions
    assert bf.table_format.current_version(bf.live_table) != live_before
    # a rollback refuses when the partitions changed after the promotion, unless forced
    _, rec = bf.promote(["2024-01-04"])
    assert rec is not None
    changed = bf.read_live(["2024-01-04"]).withColumn("amount", F.col("amount") + 1)
    bf.table_format.overwrite_partitions(bf.live_table, changed, ["2024-01-04"])
    with pytest.raises(RefusedError, match="changed after"):
        bf.rollback(rec.id)
    forced = bf.rollback(rec.id, force=True)
    assert forced.target == rec.id


@pytest.mark.store
def test_backfill_main_job(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    out = bf.config.base_dir / "rep"
    result = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END, "--report", str(out)])
    assert result.exit_code == 1, result.output  # one partition failed validation
    assert "9 pass, 0 warn, 1 fail" in result.output and "promoted 9 partition(s)" in result.output
    assert (out / "report.html").is_file()
    promoted = [k for k in bf.scheme.expand(START, END) if k != DRIFT]
    _same(bf.read_live(promoted), bf.read_shadow(promoted))
    assert bf.read_live([DRIFT]).count() == t.ROWS_PER_DAY


def test_partitions_held_for_approval_exit_3(make_backfill: MakeBackfill) -> None:
    """A backfill whose only problem is a `warn` promotes what passed and exits 3, not 0: a
    scheduler must not report success while a partition waits for a human. The exit codes do
    not depend on the table format (Iceberg only)."""
    warn_only = {"warn": 0.01, "fail": None}
    bf = make_backfill(
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        validation={**QUIET, "keys_removed": warn_only, "row_count_change": warn_only},
    )
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END])
    assert result.exit_code == 3, result.output
    assert "9 pass, 1 warn, 0 fail" in result.output and "promoted 9 partition(s)" in result.output
    assert f"held: 1 partition(s) held for approval (verdict warn, not promoted): {DRIFT}" in result.output
    again = CliRunner().invoke(app, ["validate", cfg, "--partitions", DRIFT])
    assert again.exit_code == 3 and "0 pass, 1 warn, 0 fail" in again.output, again.output
    passing = CliRunner().invoke(app, ["validate", cfg, "--partitions", START])
    assert passing.exit_code == 0, passing.output


def test_a_table_partitioned_by_date_and_category_is_backfilled_by_date(make: MakeBackfill) -> None:
    """Every sub-partition of a recomputed date is replaced, the ones the new logic no longer
    produces are cleared (in the shadow and, on promotion, in live), and validation judges
    dates, not (date, category) pairs."""
    bf = make(
        seed_live=False,
        transform={"function": "sb_test_transforms:category_c_retired"},
        validation={
            **QUIET,
            "row_count_change": {"warn": None, "fail": None},
            "keys_removed": {"warn": None, "fail": None},
            "vanished_categories": "pass",
        },
    )
    seed(bf, partitioned_by=("ds", "cat"))
    keys = bf.scheme.expand(START, END)
    before = bf.read_live()
    before = bf.spark.createDataFrame(before.collect(), before.schema)
    assert before.filter(F.col("cat") == "c").count() > 0

    assert bf.run(START, END).ok
    assert bf.table_format.partition_columns(bf.shadow_table) == ["ds", "cat"]
    expected = t.category_c_retired(bf.spark, [bf.scheme.value(k) for k in keys])
    _same(bf.read_shadow(), expected)
    verdicts = bf.validate().verdicts
    assert sorted(v.partition for v in verdicts) == keys and {v.verdict for v in verdicts} == {"pass"}

    promoted = keys[:6]
    _, rec = bf.promote(promoted)
    assert rec is not None and rec.partitions == promoted
    _same(bf.read_live(promoted), bf.read_shadow(promoted))
    assert bf.read_live(promoted).filter(F.col("cat") == "c").count() == 0, "retired sub-partitions cleared"
    rest = keys[6:]
    _same(bf.read_live(rest), before.filter(F.col("ds").isin([bf.scheme.value(k) for k in rest])))

    bf.rollback(rec.id)
    _same(bf.read_live(), before)
