"""The nightly late-data job: `backfill --last 3 --lag 2d`, planned with `--dry-run --json` and
"now" pinned, then run twice on the same night (the second run changes nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sb_test_transforms as t
from support import QUIET, MakeBackfill, published
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.windows import NOW_VARIABLE

NIGHT = "2024-01-12T03:00Z"  # minus 2 days: the days ending by 2024-01-10T03:00Z
LAST_THREE = ["2024-01-07", "2024-01-08", "2024-01-09"]


def _plan(cfg: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["backfill", cfg, "--last", "3", "--lag", "2d", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    return published(result.stdout, "run-plan.schema.json")  # type: ignore[no-any-return]


@pytest.mark.store
def test_nightly_last_three_days_two_days_late(
    make: MakeBackfill, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = tmp_path / "not-yet" / "state.db"
    live = make().live_table  # seeded by another config (on a bucket, its locks made that one's store)
    bf = make(seed_live=False, live_table=live, validation=QUIET, state={"url": f"sqlite:///{db}"})
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    monkeypatch.setenv(NOW_VARIABLE, NIGHT)

    # The plan before the work: the window, from metadata, and nothing written (not even the store).
    before = _plan(cfg)
    assert before["recompute"] == LAST_THREE and before["skip"] == []
    assert before["window"]["time_zone"] == "UTC" and before["window"]["lag_seconds"] == 2 * 86400
    assert before["window"]["complete_before"] == "2024-01-10T03:00:00+00:00"
    rows = {p["partition"]: (p["action"], p["live_rows"], p["shadow_rows"]) for p in before["partitions"]}
    assert rows == {k: ("recompute", t.ROWS_PER_DAY, None) for k in LAST_THREE}
    assert sum(len(c) for c in before["chunks"]) == 3
    assert not bf.table_format.exists(bf.shadow_table)
    assert not db.exists() and not db.parent.exists()
    live_version = bf.table_format.current_version(bf.live_table)

    night = CliRunner().invoke(app, ["backfill", cfg, "--last", "3", "--lag", "2d"])
    assert night.exit_code == 0, night.output
    assert "promoted 3 partition(s)" in night.output
    promoted = bf.table_format.current_version(bf.live_table)
    assert promoted != live_version
    assert sorted(r.partition for r in bf.status()) == LAST_THREE

    # The same night again: every partition is skipped, live gets no commit, and it exits 0.
    after = _plan(cfg)
    assert after["recompute"] == [] and after["skip"] == LAST_THREE
    assert {p["reason"] for p in after["partitions"]} == {"already written"}
    assert {p["shadow_rows"] for p in after["partitions"]} == {t.ROWS_PER_DAY}
    again = CliRunner().invoke(app, ["backfill", cfg, "--last", "3", "--lag", "2d"])
    assert again.exit_code == 0, again.output
    assert bf.table_format.current_version(bf.live_table) == promoted
    assert len(bf.history(reconcile_live=False)) == 1


def test_a_window_outside_the_range_names_what_is_missing(make: MakeBackfill, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next night's window reaches a day the live table does not have yet: the plan shows it
    with no live rows, as the run would write it."""
    bf = make(validation=QUIET)
    monkeypatch.setenv(NOW_VARIABLE, "2024-01-14T00:00Z")
    plan = _plan(str(bf.config_path))  # type: ignore[attr-defined]
    assert plan["recompute"] == ["2024-01-09", "2024-01-10", "2024-01-11"]
    assert [p["live_rows"] for p in plan["partitions"]] == [t.ROWS_PER_DAY, t.ROWS_PER_DAY, None]
