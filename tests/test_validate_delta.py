"""The validation gate on Delta tables, over Spark Connect against Sail."""

from __future__ import annotations

from pathlib import Path

import pytest
import validate_cases as cases
from conftest import MakeBackfill

pytestmark = pytest.mark.sail


def test_drifting_partition_fails_and_reports(make_delta_backfill: MakeBackfill, tmp_path: Path) -> None:
    cases.drifting_partition_fails_and_reports(make_delta_backfill, tmp_path / "report")


def test_missing_live_follows_policy(make_delta_backfill: MakeBackfill) -> None:
    cases.missing_live_follows_policy(make_delta_backfill)


def test_schema_change_is_reported(make_delta_backfill: MakeBackfill) -> None:
    cases.schema_change_is_reported(make_delta_backfill)
