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


# Three nights of `--last 3 --lag 1d --force` over `late_arriving`: each night's days, and
# their ages then (D+2, D+3, D+4).
NIGHTS = ["2024-01-10T03:00Z", "2024-01-11T03:00Z", "2024-01-12T03:00Z"]
LATE = {
    **QUIET,
    "row_count_change": {"warn": None, "fail": None},
    "keys_added": {"warn": None, "fail": None},
    "new_categories": "pass",
    "expected_changes": {"amount": {"changed_share": {"fail": 0.5}}},
}


def test_three_nights_of_late_rows_give_the_late_arrival_view(
    make: MakeBackfill, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A day has 6 rows at D+2, 8 at D+3 (one row corrected) and 9 at D+4; each night promotes
    what it validated, so live holds the night before's rows, and what shadow adds is what
    arrived since. The view counts exactly that, in report.json, `history --late-arrivals`,
    the HTML and the Markdown."""
    bf = make(transform={"function": "sb_test_transforms:late_arriving"}, validation=LATE)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    for night in NIGHTS:
        monkeypatch.setenv(NOW_VARIABLE, night)
        done = CliRunner().invoke(app, ["backfill", cfg, "--last", "3", "--lag", "1d", "--force"])
        assert done.exit_code == 0, done.output
        assert "promoted 3 partition(s)" in done.output

    shown = CliRunner().invoke(app, ["history", cfg, "--late-arrivals", "--json"])
    assert shown.exit_code == 0, shown.output
    late = published(shown.stdout, "late-arrivals.schema.json")["late_arrivals"]
    assert late["unit"] == "day"
    ages = [
        (a["label"], a["partitions"], a["shadow_rows"], a["added"], a["removed"], a["changed"]) for a in late["by_age"]
    ]
    assert ages == [("D+2", 2, 12, 2, 0, 0), ("D+3", 3, 24, 7, 0, 3), ("D+4", 2, 18, 2, 0, 0)]
    assert late["horizon"] == "D+4" and [a["compared"] for a in late["by_age"]] == [1, 2, 2]
    assert [a["present_share"] for a in late["by_age"]] == [pytest.approx(6 / 9), pytest.approx(16 / 18), 1.0]
    points = {
        p["partition"]: [(x["label"], x["shadow_rows"], x["added"], x["changed"]) for x in p["points"]]
        for p in late["partitions"]
    }
    assert points == {
        "2024-01-07": [("D+3", 8, 3, 1), ("D+4", 9, 1, 0)],
        "2024-01-08": [("D+2", 6, 1, 0), ("D+3", 8, 2, 1), ("D+4", 9, 1, 0)],
        "2024-01-09": [("D+2", 6, 1, 0), ("D+3", 8, 2, 1)],
    }

    text = CliRunner().invoke(app, ["history", cfg, "--late-arrivals"])
    assert text.exit_code == 0 and "66.7% of 1" in text.stdout, text.output

    # the last night again without --force: nothing is recomputed, the same data validated
    # again is no new point (it would read as "no rows came late by D+5")
    again = CliRunner().invoke(app, ["backfill", cfg, "--last", "3", "--lag", "1d"])
    assert again.exit_code == 0, again.output
    shown = CliRunner().invoke(app, ["history", cfg, "--late-arrivals", "--json"])
    assert published(shown.stdout, "late-arrivals.schema.json")["late_arrivals"] == late
    out = tmp_path / "report"
    assert CliRunner().invoke(app, ["report", cfg, "--report", str(out)]).exit_code == 0
    report = published((out / "report.json").read_text(), "report.schema.json")
    assert report["late_arrivals"] == late
    assert (
        "<td>D+3</td><td>3</td><td>24</td><td>7</td><td>0</td><td>3</td><td>88.9% of 2</td>"
        in (out / "report.html").read_text()
    )
    assert "| D+4 | 2 | 18 | 2 | 0 | 0 | 100.0% of 2 |" in (out / "report.md").read_text()
