"""Concurrency on Delta (Sail), with the state store on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import concurrency_cases as cases
import pytest
from conftest import MakeBackfill

pytestmark = pytest.mark.sail


def test_overlapping_promotions_apply_once(make_delta_backfill: MakeBackfill, state_url: str) -> None:
    cases.overlapping_promotions_apply_once(make_delta_backfill, state_url)


def test_duplicate_recomputes_split_the_work(make_delta_backfill: MakeBackfill, state_url: str) -> None:
    cases.duplicate_recomputes_split_the_work(make_delta_backfill, state_url)
