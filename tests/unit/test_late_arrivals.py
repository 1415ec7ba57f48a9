"""The late-arrival view (`report.arrivals`): a partition's validations placed by its age, and
the ages summed, from the metric history; its round trip through the store (SQLite and
PostgreSQL) and its rendering in report.json, HTML and Markdown. Pure code: no Spark."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import replace
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.document import KeyDiffDoc, MetricsDoc, ReportDoc, RowsDoc
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.report import ReportData
from shadow_backfill.report.arrivals import age, late_arrivals
from shadow_backfill.report.html import render_html
from shadow_backfill.report.markdown import render_markdown
from shadow_backfill.report.model import report_document, report_text
from shadow_backfill.state import StateStore, VerdictRecord
from shadow_backfill.vocabulary import CheckStatus

UTC = ZoneInfo("UTC")
DAILY = PartitionScheme("ds", "daily", "date", "%Y-%m-%d")


def _at(night: int) -> dt.datetime:
    """The nightly job's run on 2024-01-(10 + night) at 03:00 UTC."""
    return dt.datetime(2024, 1, 10 + night, 3, tzinfo=dt.timezone.utc)


def _seen(key: str, night: int, live: int, shadow: int, changed: int) -> VerdictRecord:
    keys = KeyDiffDoc(added=shadow - live, removed=0, matched=live, changed=changed, duplicates=0)
    metrics = MetricsDoc(rows=RowsDoc(live=live, shadow=shadow), keys=keys)
    return VerdictRecord(key, CheckStatus.PASS, [], metrics, validation_id=f"n{night}", observed_at=_at(night))


# Three nights of `--last 3 --lag 1d`: a day has 6 rows by D+2, 8 by D+3 and 9 by D+4, and one
# row corrected at D+3; live holds what the night before promoted (5 rows at first).
NIGHTS = {
    "2024-01-06": [_seen("2024-01-06", 0, 5, 9, 1)],
    "2024-01-07": [_seen("2024-01-07", 0, 5, 8, 1), _seen("2024-01-07", 1, 8, 9, 0)],
    "2024-01-08": [_seen("2024-01-08", 0, 5, 6, 0), _seen("2024-01-08", 1, 6, 8, 1), _seen("2024-01-08", 2, 8, 9, 0)],
    "2024-01-09": [_seen("2024-01-09", 1, 5, 6, 0), _seen("2024-01-09", 2, 6, 8, 1)],
    "2024-01-10": [_seen("2024-01-10", 2, 5, 6, 0)],
}


def test_ages_count_periods_on_the_wall_clock_of_the_time_zone() -> None:
    day = dt.datetime(2024, 1, 8)
    assert age(day, _at(0), "daily", UTC) == 2
    # 03:00 UTC on the 10th is still the 9th in New York: D+1 there
    assert age(day, _at(0), "daily", ZoneInfo("America/New_York")) == 1
    # hours are elapsed hours: 00:00 to 04:00 New York time across the spring-forward gap is 3
    spring = dt.datetime(2024, 3, 10, 0)
    four = dt.datetime(2024, 3, 10, 4, tzinfo=ZoneInfo("America/New_York"))
    assert age(spring, four, "hourly", ZoneInfo("America/New_York")) == 3
    assert age(dt.datetime(2023, 11, 1), _at(0), "monthly", UTC) == 2


def test_the_view_by_age_has_the_rows_that_came_late() -> None:
    view = late_arrivals(NIGHTS, DAILY, UTC)
    assert view is not None and view.unit == "day"
    # 2024-01-06 and 2024-01-10 were validated at one age only: not in the view
    assert [p.partition for p in view.partitions] == ["2024-01-07", "2024-01-08", "2024-01-09"]
    points = {p.partition: [(x.label, x.shadow_rows, x.added, x.changed) for x in p.points] for p in view.partitions}
    assert points["2024-01-08"] == [("D+2", 6, 1, 0), ("D+3", 8, 2, 1), ("D+4", 9, 1, 0)]
    assert points["2024-01-07"] == [("D+3", 8, 3, 1), ("D+4", 9, 1, 0)]
    ages = [(a.label, a.partitions, a.shadow_rows, a.added, a.removed, a.changed, a.compared) for a in view.by_age]
    assert ages == [
        ("D+2", 2, 12, 2, 0, 0, 2),
        ("D+3", 3, 24, 7, 0, 3, 2),
        ("D+4", 2, 18, 2, 0, 0, 0),
    ]
    shares = [a.present_share for a in view.by_age]
    assert shares == [pytest.approx(12 / 17), pytest.approx(16 / 18), None]


def test_a_later_validation_at_the_same_age_wins_and_a_one_off_backfill_has_no_view() -> None:
    rerun = replace(_seen("2024-01-08", 0, 5, 7, 0), validation_id="again", observed_at=_at(0) + dt.timedelta(hours=2))
    view = late_arrivals({"2024-01-08": [*NIGHTS["2024-01-08"], rerun]}, DAILY, UTC)
    assert view is not None
    assert next((p.label, p.validation_id, p.shadow_rows) for p in view.partitions[0].points) == ("D+2", "again", 7)
    once = {k: v[:1] for k, v in NIGHTS.items()}
    assert late_arrivals(once, DAILY, UTC) is None
    unseen = {k: [replace(r, observed_at=None) for r in v] for k, v in NIGHTS.items()}
    assert late_arrivals(unseen, DAILY, UTC) is None, "validations stored before observed_at have no age"


def test_observed_at_round_trips_through_the_store(state_url: str) -> None:
    shadow = f"lake.events_{uuid.uuid4().hex[:8]}_v2"
    store = StateStore(state_url)
    for night in NIGHTS["2024-01-08"]:
        store.save_verdicts(shadow, [night], keep_days=30)
    new_york = dt.datetime(2024, 1, 12, 22, 0, tzinfo=ZoneInfo("America/New_York"))
    later = replace(NIGHTS["2024-01-08"][0], validation_id="ny", observed_at=new_york)
    store.save_verdicts(shadow, [later], keep_days=30)
    kept = store.metric_history(shadow, "2024-01-08")
    assert [(r.validation_id, r.observed_at) for r in kept] == [
        ("n0", _at(0)),
        ("n1", _at(1)),
        ("n2", _at(2)),
        ("ny", dt.datetime(2024, 1, 13, 3, tzinfo=dt.timezone.utc)),
    ]
    view = late_arrivals(store.metric_histories(shadow), DAILY, UTC)
    assert view is not None and [p.label for p in view.partitions[0].points] == ["D+2", "D+3", "D+4", "D+5"]
    store.close()


def _document() -> str:
    verdicts = [r[-1] for r in NIGHTS.values()]
    view = late_arrivals(NIGHTS, DAILY, UTC)
    data = ReportData("lake.events", "lake.events_v2", "delta", verdicts, {}, NIGHTS, late_arrivals=view)
    return report_text(report_document(data))


def test_the_reports_show_the_view_by_age() -> None:
    doc = report_document(ReportData("l", "s", "delta", [r[-1] for r in NIGHTS.values()], {}, NIGHTS))
    assert json.loads(report_text(doc))["late_arrivals"] is None, "null where none was computed"
    published = json.loads(_document())
    assert published["schema_version"] == 7
    assert [a["label"] for a in published["late_arrivals"]["by_age"]] == ["D+2", "D+3", "D+4"]
    full = ReportDoc.model_validate(published)
    page = render_html(full)
    assert "Late arrivals: rows against live by the partition" in page
    assert "<td>D+3</td><td>3</td><td>24</td><td>7</td><td>0</td><td>3</td><td>88.9% (of 2 seen later)</td>" in page
    assert "<td>2024-01-08</td><td>6 (+1 −0 ~0)</td><td>8 (+2 −0 ~1)</td><td>9 (+1 −0 ~0)</td>" in page
    assert 'aria-label="share of rows present, by age"' in page
    markdown = render_markdown(full)
    assert "| D+2 | 2 | 12 | 2 | 0 | 0 | 70.6% of 2 |" in markdown


def test_late_arrivals_goes_with_no_partition_option(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    good = {"live_table": "local.db.features", "format": "iceberg", "partition": {"column": "ds"}}
    p.write_text(yaml.safe_dump({**good, "transform": {"function": "m:f"}}))
    for args in (["--partition", "2024-01-05"], ["--metrics"], ["--reconcile"]):
        result = CliRunner().invoke(app, ["history", str(p), "--late-arrivals", *args])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: --late-arrivals"), result.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.yaml"], "nothing written"
