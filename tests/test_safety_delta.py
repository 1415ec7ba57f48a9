"""Safety on Delta over Spark Connect (Sail): another writer's commit survives a promotion; a
shadow path that is live spelled another way, or lies inside it, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import safety_cases as cases
from conftest import MakeBackfill

pytestmark = pytest.mark.sail


def test_concurrent_writer_commit_survives(make_delta_backfill: MakeBackfill) -> None:
    cases.concurrent_writer_commit_survives(make_delta_backfill)


def test_shadow_aliasing_live_by_another_path_is_refused(make_delta_backfill: MakeBackfill) -> None:
    bf = make_delta_backfill()
    live = Path(bf.live_table)
    alias = f"{live.parent}/../{live.parent.name}/{live.name}"
    cases.shadow_aliasing_live_is_refused(bf, make_delta_backfill, alias)


def test_shadow_inside_live_is_refused(make_delta_backfill: MakeBackfill) -> None:
    bf = make_delta_backfill()
    cases.shadow_inside_live_is_refused(bf, make_delta_backfill, f"{bf.live_table}/shadow")
