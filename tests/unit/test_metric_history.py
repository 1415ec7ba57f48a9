"""Every validation's measurements of a partition are kept (`verdict_history`), on SQLite and
PostgreSQL, without samples, for `state.metric_history_days`; the latest verdict stays one row."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import yaml
from sqlalchemy import update
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.document import CategoriesDoc, ColumnChangeDoc, ColumnDoc, MetricsDoc, RowsDoc, SampleDoc
from shadow_backfill.state import StateStore, VerdictRecord
from shadow_backfill.state.schema import verdict_history
from shadow_backfill.state.store import reading
from shadow_backfill.vocabulary import CheckStatus


def _record(
    validation: str, live_rows: int, verdict: CheckStatus = CheckStatus.PASS, partition: str = "2024-01-05"
) -> VerdictRecord:
    metrics = MetricsDoc(
        rows=RowsDoc(live=live_rows, shadow=100),
        columns={
            "country": ColumnDoc(
                shadow_null_rate=0.1, categories=CategoriesDoc(live={"NL": 3}, shadow={"NL": 2, "DE": 1}), new=["DE"]
            )
        },
        column_changes={"spend": ColumnChangeDoc(matched=live_rows, changed=3, changed_share=3 / live_rows)},
        samples=[SampleDoc(keys={"id": 7}, column="spend", live=1.0, shadow=2.0)],
    )
    return VerdictRecord(partition, verdict, [], metrics, shadow_version=4, live_version=2, validation_id=validation)


def test_three_validations_are_three_entries_and_old_ones_are_pruned(state_url: str) -> None:
    shadow = f"lake.events_{uuid.uuid4().hex[:8]}_v2"
    store = StateStore(state_url)
    for validation, rows in (("v1", 80), ("v2", 95), ("v3", 100)):
        store.save_verdicts(shadow, [_record(validation, rows)], keep_days=30)
    kept = store.metric_history(shadow, "2024-01-05")
    assert [(r.validation_id, r.metrics.live_rows) for r in kept] == [("v1", 80), ("v2", 95), ("v3", 100)]
    assert all(r.metrics.samples == [] for r in kept), "no rows of data in the history"
    country = kept[0].metrics.columns["country"]
    assert (country.categories, country.new, country.shadow_null_rate) == (None, None, 0.1), "no values of data"
    assert store.verdicts(shadow)["2024-01-05"].metrics.samples, "the latest verdict keeps its samples"
    assert len(store.verdicts(shadow)) == 1
    assert store.metric_history(shadow, "2024-01-06") == []

    # another shadow's rows, and another partition's, as old: pruning is per shadow table
    other = shadow.replace("_v2", "_v3")
    store.save_verdicts(other, [_record("o1", 50)], keep_days=30)
    store.save_verdicts(shadow, [_record("p1", 70, partition="2024-01-06")], keep_days=30)

    # v1, v2 and the other partition's p1 aged past the 30 days kept: the next save prunes them
    old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=31)
    h = verdict_history.c
    with store.engine.begin() as c:
        c.execute(update(verdict_history).where(h.validation_id.in_(["v1", "v2", "p1", "o1"])).values(validated_at=old))
    store.save_verdicts(shadow, [_record("v4", 101, CheckStatus.FAIL)], keep_days=30)
    kept = store.metric_history(shadow, "2024-01-05")
    assert [(r.validation_id, r.verdict) for r in kept] == [("v3", CheckStatus.PASS), ("v4", CheckStatus.FAIL)]
    assert store.metric_history(shadow, "2024-01-06") == []
    assert [r.validation_id for r in store.metric_history(other, "2024-01-05")] == ["o1"], "not this shadow's"
    store.save_verdicts(shadow, [_record("v5", 102)], keep_days=None)  # null: kept for ever
    assert len(store.metric_history(shadow, "2024-01-05")) == 3
    store.close()


def test_the_options_go_together_and_are_refused_before_any_work(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    good = {"live_table": "local.db.features", "format": "iceberg", "partition": {"column": "ds"}}
    p.write_text(yaml.safe_dump({**good, "transform": {"function": "m:f"}}))
    for args in (["--metrics"], ["--partition", "2024-01-05"], ["--metrics", "--partition", "x", "--reconcile"]):
        result = CliRunner().invoke(app, ["history", str(p), *args])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: --"), result.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.yaml"], "nothing written"


def test_an_older_store_read_as_it_is_has_no_history(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = StateStore(url)
    store.save_verdicts("db.t_v2", [_record("v1", 80)])
    with store.engine.begin() as c:
        c.exec_driver_sql("DROP TABLE verdict_history")  # as a store of the previous version
    store.close()
    old = reading(url)
    assert old.metric_histories("db.t_v2") == {} and old.metric_history("db.t_v2", "2024-01-05") == []
    assert list(old.verdicts("db.t_v2")) == ["2024-01-05"]
    old.close()
