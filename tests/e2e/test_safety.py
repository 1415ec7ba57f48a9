"""Safety on every table backend: a promotion never erases another writer's commit, and a shadow
never resolves to the live table under another name (the backend spells the alias: a second
Iceberg catalog over the same warehouse, a Delta path through `..`) nor lies inside it."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from support import DRIFT, END, START, Backend, MakeBackfill, validated

from shadow_backfill import Backfill
from shadow_backfill.errors import ConfigError

# the checks are the format's own: its commit binding, its identity of a table by any name
pytestmark = pytest.mark.every_backend

TOUCHED = "2024-01-02"
FOREIGN_ID = 999_999


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _foreign_rows(bf: Backfill) -> Any:
    """One row for TOUCHED, as another job writing to the live table would add it."""
    return bf.read_live([TOUCHED]).limit(1).withColumn("id", F.lit(FOREIGN_ID).cast("long"))


@pytest.mark.store
def test_concurrent_writer_commit_survives(make: MakeBackfill) -> None:
    bf = validated(make)
    fmt = bf.table_format
    expected = [k for k in bf.scheme.expand(START, END) if k != DRIFT]
    shadow_rows = {k: bf.read_shadow([k]).collect() for k in expected}
    promoter = bf.promoter()
    injected: list[int | None] = []

    def other_writer(plan: Any) -> None:
        # Exactly in the window: after the plan was made and bound, before the commit.
        if not injected:
            assert TOUCHED in plan.partitions
            fmt.append(bf.live_table, _foreign_rows(bf))
            injected.append(fmt.current_version(bf.live_table))

    promoter.before_commit = other_writer
    plan, rec = promoter.promote()
    assert injected, "the other writer ran"
    assert rec is not None
    # the other writer's row survives, and its partition was not promoted
    assert bf.read_live([TOUCHED]).filter(F.col("id") == FOREIGN_ID).count() == 1
    assert "live changed after validation" in plan.refused[TOUCHED], plan.refused
    assert TOUCHED not in rec.partitions
    # every other passing partition was promoted, exactly as validated
    assert sorted(rec.partitions) == sorted(k for k in expected if k != TOUCHED)
    for k in rec.partitions:
        assert sorted(bf.read_live([k]).collect()) == sorted(shadow_rows[k])
    # the audit record names the real parent: the other writer's commit, not the planned version
    assert rec.live_version_before == injected[0]
    stored = bf.store.promotion(rec.id)
    assert stored is not None and stored.live_version_before == injected[0]
    assert sorted(stored.partitions) == sorted(rec.partitions)
    # rolling the promotion back keeps the other writer's row too
    bf.rollback(rec.id)
    assert bf.read_live([TOUCHED]).filter(F.col("id") == FOREIGN_ID).count() == 1


@pytest.mark.store
def test_shadow_aliasing_live_is_refused(make: MakeBackfill, backend: Backend) -> None:
    """The backend's alias names live table `bf.live_table` another way: `run` and `promote`
    refuse it and nothing is written."""
    bf = make()
    alias = backend.alias(bf)
    fmt = bf.table_format
    before = fmt.current_version(bf.live_table)
    rows = sorted(bf.read_live().collect())
    aliased = make(seed_live=False, live_table=bf.live_table, shadow_table=alias)
    with pytest.raises(ConfigError, match="live table"):
        aliased.run(START, END)
    with pytest.raises(ConfigError, match="live table"):
        aliased.plan_promotion()
    assert fmt.current_version(bf.live_table) == before
    assert sorted(bf.read_live().collect()) == rows


@pytest.mark.store
def test_shadow_inside_live_is_refused(make: MakeBackfill, backend: Backend, request: pytest.FixtureRequest) -> None:
    backend.known_gap(request, "shadow-inside-live")
    bf = make()
    inside = backend.inside(bf)
    fmt = bf.table_format
    before = fmt.current_version(bf.live_table)
    nested = make(seed_live=False, live_table=bf.live_table, shadow_table=inside)
    with pytest.raises(ConfigError, match="lies inside"):
        nested.run(START, END)
    assert fmt.current_version(bf.live_table) == before
