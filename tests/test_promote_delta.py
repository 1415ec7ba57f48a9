"""Promotion and rollback on Delta over Spark Connect against Sail."""

from __future__ import annotations

import promote_cases as cases
import pytest
from conftest import MakeBackfill

pytestmark = pytest.mark.sail


def test_promote_exactly_the_passing_partitions_then_roll_back(make_delta_backfill: MakeBackfill) -> None:
    cases.promote_exactly_the_passing_partitions_then_roll_back(make_delta_backfill)


def test_refusals(make_delta_backfill: MakeBackfill) -> None:
    cases.refusals(make_delta_backfill)


def test_backfill_main_job(make_delta_backfill: MakeBackfill) -> None:
    cases.backfill_main_job(make_delta_backfill)
