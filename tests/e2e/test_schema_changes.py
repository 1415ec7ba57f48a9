"""A logic change that adds a column and stops producing another, declared in
`validation.expected_schema_changes`, through the user's whole loop on every backend: calm
partitions pass and the broken one fails, the new column is judged by the null-rate bound its
author gave, promotion adds it to live with the promoted partitions' values (null in the
others) and keeps the removed one (null in the promoted partitions, every other value kept),
and a rollback restores the data and keeps the new column (null in the rolled-back rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType
from support import DRIFT, END, QUIET, START, MakeBackfill

from shadow_backfill import RefusedError
from shadow_backfill.vocabulary import CheckStatus

# adding, keeping and widening a column in live is the format's schema evolution
pytestmark = pytest.mark.every_backend

DECLARED = {
    **QUIET,
    "expected_schema_changes": {"added": ["plane_year"], "removed": ["legacy_score"]},
    "expected_changes": {"plane_year": {"null_rate": {"warn": 0.3, "fail": 0.5}}},
}


def _same(a: DataFrame, b: DataFrame) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


# a suite may hold expectations on the new column, as on any column of shadow
SUITE = {
    "expectations": [
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "plane_year", "min_value": 1990, "max_value": 2019},
        }
    ]
}


def test_a_declared_new_column_is_judged_promoted_and_rolled_back(make: MakeBackfill, tmp_path: Path) -> None:
    suite = tmp_path / "plane_year.json"
    suite.write_text(json.dumps(SUITE))
    bf = make(
        seed_live=False,
        transform={"function": "sb_test_transforms:with_plane_year"},
        validation=DECLARED,
        expectations=[str(suite)],
    )
    seeded = t.with_legacy_score(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    bf.table_format.create(bf.live_table, seeded.schema, ["ds"], data=seeded)
    assert bf.run(START, END).ok
    verdicts = {v.partition: v for v in bf.validate().verdicts}
    assert verdicts.pop(DRIFT).verdict is CheckStatus.FAIL
    assert {v.verdict for v in verdicts.values()} == {CheckStatus.PASS}, [v.reasons for v in verdicts.values()]
    checks = {(c.name, c.column): c for c in next(iter(verdicts.values())).checks}
    assert checks["schema_change", None].observed == [], "a declared column is no schema warning"
    assert checks["expected_schema_change", None].status is CheckStatus.PASS
    assert checks["null_rate", "plane_year"].observed == pytest.approx(0.2)
    suited = [c for c in checks.values() if "expect_column_values_to_be_between" in c.name]
    assert len(suited) == 1 and suited[0].status is CheckStatus.PASS, suited

    fmt, live = bf.table_format, bf.live_table
    live_before, before = fmt.current_version(live), bf.read_live().collect()
    drift_before = bf.read_live([DRIFT]).collect()
    _, rec = bf.promote()
    assert rec is not None and sorted(rec.partitions) == sorted(verdicts)
    assert fmt.schema(live)["plane_year"].nullable
    touching = fmt.commits_touching(live, live_before, [*sorted(verdicts), DRIFT])
    assert [c.version for c, _ in touching] == [rec.live_version_after], "the column's addition touches no partition"
    # the audit trail records the schema change: on the commit, in the store, in history
    assert rec.schema_change == ["+plane_year", "-legacy_score"]
    assert touching[0][0].properties["shadow-backfill.schema-change"] == "+plane_year,-legacy_score"
    assert [h.schema_change for h in bf.history() if h.id == rec.id] == [["+plane_year", "-legacy_score"]]
    promoted = bf.read_live(rec.partitions)
    assert promoted.filter(F.col("legacy_score").isNotNull()).count() == 0, "a removed column: null where promoted"
    _same(promoted.drop("legacy_score"), bf.read_shadow(rec.partitions))
    assert bf.read_live([DRIFT]).filter(F.col("plane_year").isNotNull()).count() == 0, "not promoted: null"
    assert sorted(bf.read_live([DRIFT]).drop("plane_year").collect()) == sorted(drift_before)

    bf.rollback(rec.id)
    assert "plane_year" in fmt.schema(live).fieldNames(), "a rollback keeps the column"
    after = bf.read_live()
    assert after.filter(F.col("plane_year").isNotNull()).count() == 0
    assert sorted(after.drop("plane_year").collect()) == sorted(before)


WIDENED = {**QUIET, "expected_schema_changes": {"retyped": {"sessions": "bigint"}}}


def test_a_declared_widening_is_promoted_where_the_format_widens_in_place(make: MakeBackfill) -> None:
    """int -> bigint, declared: validation passes; promotion widens live's column first where the
    format can (Iceberg), and elsewhere refuses in one line, writing nothing."""
    bf = make(seed_live=False, transform={"function": "sb_test_transforms:sessions_widened"}, validation=WIDENED)
    fmt, live, keys = bf.table_format, bf.live_table, bf.scheme.expand(START, END)
    seeded = t.with_sessions(bf.spark, [bf.scheme.value(k) for k in keys])
    fmt.create(live, seeded.schema, ["ds"], data=seeded)
    assert bf.run(START, END).ok
    assert {v.verdict for v in bf.validate().verdicts} == {CheckStatus.PASS}
    live_before = fmt.current_version(live)
    if not fmt.widens_types:
        with pytest.raises(RefusedError, match=r"cannot widen a column's type in place \(sessions int -> bigint\)"):
            bf.promote()
        assert fmt.current_version(live) == live_before and fmt.schema(live)["sessions"].dataType == IntegerType()
        return

    _, rec = bf.promote()
    assert rec is not None and rec.schema_change == ["sessions -> bigint"]
    assert fmt.schema(live)["sessions"].dataType == LongType()
    _same(bf.read_live(), bf.read_shadow())
    bf.rollback(rec.id)
    assert fmt.schema(live)["sessions"].dataType == LongType(), "a rollback keeps the wider type"
    _same(bf.read_live(), seeded.withColumn("sessions", F.col("sessions").cast("long")))
