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
from shadow_backfill.report.arrivals import late_arrivals
from shadow_backfill.report.html import render_html
from shadow_backfill.report.markdown import render_markdown
from shadow_backfill.report.model import report_document, report_text
from shadow_backfill.state import StateStore, VerdictRecord
from shadow_backfill.state.store import reading
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.windows import partition_age

DAILY = PartitionScheme("ds", "daily", "date", "%Y-%m-%d")


def _at(night: int) -> dt.datetime:
    """The nightly job's run on 2024-01-(10 + night) at 03:00 UTC."""
    return dt.datetime(2024, 1, 10 + night, 3, tzinfo=dt.timezone.utc)


def _seen(key: str, night: int, live: int, shadow: int, changed: int) -> VerdictRecord:
    keys = KeyDiffDoc(added=shadow - live, removed=0, matched=live, changed=changed, duplicates=0)
    metrics = MetricsDoc(rows=RowsDoc(live=live, shadow=shadow), keys=keys)
    age = partition_age(DAILY, "UTC", key, _at(night))
    return VerdictRecord(
        key,
        CheckStatus.PASS,
        [],
        metrics,
        partition_version=night + 1,  # `--force`: each night writes the window's partitions anew
        validation_id=f"n{night}",
        observed_at=_at(night),
        age=age,
    )


# Three nights of `--last 3 --lag 1d --force`: a day has 6 rows by D+2, 8 by D+3 and 9 by D+4,
# and one row corrected at D+3; live holds what the night before promoted (5 rows at first).
NIGHTS = {
    "2024-01-06": [_seen("2024-01-06", 0, 5, 9, 1)],
    "2024-01-07": [_seen("2024-01-07", 0, 5, 8, 1), _seen("2024-01-07", 1, 8, 9, 0)],
    "2024-01-08": [_seen("2024-01-08", 0, 5, 6, 0), _seen("2024-01-08", 1, 6, 8, 1), _seen("2024-01-08", 2, 8, 9, 0)],
    "2024-01-09": [_seen("2024-01-09", 1, 5, 6, 0), _seen("2024-01-09", 2, 6, 8, 1)],
    "2024-01-10": [_seen("2024-01-10", 2, 5, 6, 0)],
}


def test_ages_count_the_periods_a_window_counts() -> None:
    assert partition_age(DAILY, "UTC", "2024-01-08", _at(0)) == 2
    # 03:00 UTC on the 10th is still the 9th in New York: D+1 there
    assert partition_age(DAILY, "America/New_York", "2024-01-08", _at(0)) == 1
    # a timestamp column's periods are UTC whatever the time zone (as `--last` counts them)
    hours = PartitionScheme("ts", "hourly", "timestamp", None)
    assert partition_age(hours, "America/New_York", "2024-01-10T01", _at(0)) == 2
    # a string column's hours are the zone's: elapsed hours across the spring-forward gap
    local = PartitionScheme("h", "hourly", "string", "%Y-%m-%d-%H")
    four = dt.datetime(2024, 3, 10, 4, tzinfo=ZoneInfo("America/New_York"))
    assert partition_age(local, "America/New_York", "2024-03-10T00", four) == 3
    months = PartitionScheme("m", "monthly", "string", "%Y-%m")
    assert partition_age(months, "UTC", "2023-11", _at(0)) == 2


def test_the_view_by_age_has_the_rows_that_came_late() -> None:
    view = late_arrivals(NIGHTS, DAILY)
    assert view is not None and (view.unit, view.horizon) == ("day", "D+4")
    # 2024-01-06 and 2024-01-10 were read at one age only: not in the view
    assert [p.partition for p in view.partitions] == ["2024-01-07", "2024-01-08", "2024-01-09"]
    points = {p.partition: [(x.label, x.shadow_rows, x.added, x.changed) for x in p.points] for p in view.partitions}
    assert points["2024-01-08"] == [("D+2", 6, 1, 0), ("D+3", 8, 2, 1), ("D+4", 9, 1, 0)]
    assert points["2024-01-07"] == [("D+3", 8, 3, 1), ("D+4", 9, 1, 0)]
    ages = [(a.label, a.partitions, a.shadow_rows, a.added, a.removed, a.changed, a.compared) for a in view.by_age]
    assert ages == [
        ("D+2", 2, 12, 2, 0, 0, 1),
        ("D+3", 3, 24, 7, 0, 3, 2),
        ("D+4", 2, 18, 2, 0, 0, 2),
    ]
    # of the partitions seen at D+4: 6 of 9 rows by D+2 (2024-01-09, never seen at D+4, is not
    # counted as complete at 8), 16 of 18 by D+3
    assert [a.present_share for a in view.by_age] == [pytest.approx(6 / 9), pytest.approx(16 / 18), 1.0]


def test_the_same_data_read_again_is_no_new_point_and_the_first_at_an_age_counts() -> None:
    first = NIGHTS["2024-01-08"]
    # a rerun without --force the next night: the same written version, read at D+3 -> no point
    again = replace(first[0], validation_id="again", observed_at=_at(1), age=3)
    view = late_arrivals({"2024-01-08": [first[0], again]}, DAILY)
    assert view is None, "one version of the data, read twice, is one point"
    # a rerun with --force the same night, after the first promoted: the first counts
    rerun = replace(_seen("2024-01-08", 0, 6, 6, 0), partition_version=9, validation_id="rerun")
    view = late_arrivals({"2024-01-08": [first[0], rerun, *first[1:]]}, DAILY)
    assert view is not None
    assert next((p.label, p.validation_id, p.added) for p in view.partitions[0].points) == ("D+2", "n0", 1)
    once = {k: v[:1] for k, v in NIGHTS.items()}
    assert late_arrivals(once, DAILY) is None
    unseen = {k: [replace(r, observed_at=None, age=None) for r in v] for k, v in NIGHTS.items()}
    assert late_arrivals(unseen, DAILY) is None, "validations stored before the age was kept have none"


def test_hourly_keys_are_counted_in_hours_whatever_the_config_says() -> None:
    """The report reads the store without the table: its scheme may be the config's default
    (daily) where the table's transform says hours. The keys' shape names the unit."""
    hours = PartitionScheme("ts", "hourly", "timestamp", None)
    seen = [
        replace(
            _seen("2024-01-08", n, 5, 6 + n, 0),
            partition="2024-01-10T01",
            age=partition_age(hours, "UTC", "2024-01-10T01", _at(n)),
        )
        for n in range(2)
    ]
    view = late_arrivals({"2024-01-10T01": seen}, DAILY)
    assert view is not None and view.unit == "hour"
    assert [p.label for p in view.partitions[0].points] == ["H+2", "H+26"]


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
    assert [r.age for r in kept] == [2, 3, 4, 2], "the ages as stored (the last one's as given)"
    assert [r.partition_version for r in kept] == [1, 2, 3, 1]
    store.close()


def _document() -> str:
    verdicts = [r[-1] for r in NIGHTS.values()]
    view = late_arrivals(NIGHTS, DAILY)
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
    assert "<td>D+3</td><td>3</td><td>24</td><td>7</td><td>0</td><td>3</td><td>88.9% of 2</td>" in page
    assert "<th>rows present by then, of those at D+4</th>" in page
    assert "<td>2024-01-08</td><td>6 (+1 −0 ~0)</td><td>8 (+2 −0 ~1)</td><td>9 (+1 −0 ~0)</td>" in page
    assert 'aria-label="share of rows present, by age"' in page
    markdown = render_markdown(full)
    assert "| D+2 | 2 | 12 | 2 | 0 | 0 | 66.7% of 1 |" in markdown


def test_late_arrivals_goes_with_no_partition_option(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    good = {"live_table": "local.db.features", "format": "iceberg", "partition": {"column": "ds"}}
    p.write_text(yaml.safe_dump({**good, "transform": {"function": "m:f"}}))
    for args in (["--partition", "2024-01-05"], ["--metrics"], ["--reconcile"]):
        result = CliRunner().invoke(app, ["history", str(p), "--late-arrivals", *args])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: --late-arrivals"), result.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.yaml"], "nothing written"


def test_a_history_kept_before_ages_were_reads_as_it_is_and_gains_them(tmp_path: Path) -> None:
    """A store of the previous version has `verdict_history` without `observed_at` and `age`:
    read as it is (a dry run, `report`), its rows have none; opened to write, the columns are
    added and the next validation has them."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = StateStore(url)
    store.save_verdicts("db.t_v2", NIGHTS["2024-01-08"][:1])
    with store.engine.begin() as c:  # as the previous version made it
        c.exec_driver_sql("ALTER TABLE verdict_history DROP COLUMN observed_at")
        c.exec_driver_sql("ALTER TABLE verdict_history DROP COLUMN age")
    store.close()
    old = reading(url)
    kept = old.metric_history("db.t_v2", "2024-01-08")
    assert [(r.validation_id, r.observed_at, r.age) for r in kept] == [("n0", None, None)]
    assert late_arrivals(old.metric_histories("db.t_v2"), DAILY) is None
    old.close()
    store = StateStore(url)
    store.save_verdicts("db.t_v2", NIGHTS["2024-01-08"][1:])
    kept = store.metric_history("db.t_v2", "2024-01-08")
    assert [(r.validation_id, r.age) for r in kept] == [("n0", None), ("n1", 3), ("n2", 4)]
    view = late_arrivals(store.metric_histories("db.t_v2"), DAILY)
    assert view is not None and [p.label for p in view.partitions[0].points] == ["D+3", "D+4"]
    store.close()
