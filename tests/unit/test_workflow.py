"""The main job's rules shared by one table and a pipeline (`workflow`): which verdicts promote
and what a stopped run leaves to judge, as pure code (no Spark, no store)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from support.configs import sql_config

from shadow_backfill.config import BackfillConfig, load_config
from shadow_backfill.timebox import TimeBox
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.workflow import PromotionPolicy, stop_of, to_judge

NOON = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)


def _config(folder: Path, name: str, **promote: Any) -> BackfillConfig:
    return load_config(sql_config(folder, name, promote=promote))


def test_one_tables_policy_is_its_configs_unless_the_command_says(tmp_path: Path) -> None:
    warn_ok = _config(tmp_path, "a", allow_warn=True, canary=2)
    assert PromotionPolicy.of([warn_ok]) == PromotionPolicy(allow_warn=True, canary=2)
    assert PromotionPolicy.of([warn_ok], allow_warn=False).promotable == {CheckStatus.PASS}
    assert PromotionPolicy.of([_config(tmp_path, "b")], partial=True) == PromotionPolicy(partial=True)


def test_a_pipeline_promotes_a_warn_only_where_every_layer_allows_it(tmp_path: Path) -> None:
    strict, lenient = _config(tmp_path, "a"), _config(tmp_path, "b", allow_warn=True, canary=1)
    mixed = PromotionPolicy.of([lenient, strict])
    assert mixed.promotable == {CheckStatus.PASS} and mixed.canary is None
    assert PromotionPolicy.of([lenient, lenient]).promotable == {CheckStatus.PASS, CheckStatus.WARN}


def test_passing_keeps_the_promotable_verdicts_in_order() -> None:
    pairs = [("d3", CheckStatus.WARN), ("d1", "pass"), ("d2", CheckStatus.FAIL), ("d4", None)]
    assert PromotionPolicy().passing(pairs) == ["d1"]
    assert PromotionPolicy(allow_warn=True).passing(pairs) == ["d3", "d1"]


@pytest.mark.parametrize(
    ("stopped", "deadline", "expected"),
    [
        (None, None, None),
        ("SIGTERM", None, "SIGTERM"),
        (None, NOON + dt.timedelta(hours=1), None),
        (None, NOON - dt.timedelta(hours=1), "its time box (at 2024-01-01T11:00:00+00:00)"),
        ("SIGTERM", NOON - dt.timedelta(hours=1), "SIGTERM"),
    ],
)
def test_a_time_box_that_ran_out_after_the_last_chunk_stops_the_job(
    stopped: str | None, deadline: dt.datetime | None, expected: str | None
) -> None:
    box = TimeBox(deadline, lambda: NOON)
    assert stop_of(stopped, box) == expected
    assert stop_of(stopped, None) == stopped


def test_a_stopped_run_is_judged_over_what_it_finished_only_when_partial() -> None:
    requested, finished = ["d1", "d2", "d3"], ["d1"]
    assert to_judge(requested, finished, None, PromotionPolicy()) == requested
    assert to_judge(requested, finished, "SIGTERM", PromotionPolicy()) == []
    assert to_judge(requested, finished, "SIGTERM", PromotionPolicy(partial=True)) == ["d1"]
