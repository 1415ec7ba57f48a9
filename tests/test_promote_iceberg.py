"""Promotion and rollback on Iceberg with real Spark."""

from __future__ import annotations

import promote_cases as cases
from conftest import MakeBackfill


def test_promote_exactly_the_passing_partitions_then_roll_back(make_backfill: MakeBackfill) -> None:
    cases.promote_exactly_the_passing_partitions_then_roll_back(make_backfill)


def test_refusals(make_backfill: MakeBackfill) -> None:
    cases.refusals(make_backfill)


def test_backfill_main_job(make_backfill: MakeBackfill) -> None:
    cases.backfill_main_job(make_backfill)
