"""The text tables of `status` and `history` at an 80-column terminal, on a real SQLite state
store: `history` prints every id whole (the README's next step is `rollback --promotion <id>`),
and `status` gives each partition its verdict (issue 60, items 1 and 6). The commands' own
view (`TextView`) prints the store's records; the commands themselves open `api.Backfill`,
which imports PySpark, so they are run on a real table in tests/e2e (test_runner.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.configs import sql_config

from shadow_backfill.cli.render import pipeline_history_table
from shadow_backfill.cli.views import TextView
from shadow_backfill.config import BackfillConfig, load_config
from shadow_backfill.document import MetricsDoc
from shadow_backfill.state import PipelineRecord, PromotionRecord, StateStore, VerdictRecord
from shadow_backfill.state.audit import PROMOTE, ROLLBACK
from shadow_backfill.state.leases import new_id
from shadow_backfill.vocabulary import CheckStatus

DAYS = [f"2024-01-{d:02d}" for d in range(1, 31)]


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 80-column terminal, as Rich reads it."""
    monkeypatch.setenv("COLUMNS", "80")


def _opened(tmp_path: Path) -> tuple[BackfillConfig, StateStore]:
    """A config and its state store."""
    config = load_config(sql_config(tmp_path))
    return config, StateStore(config.state_url)


def _status_rows(store: StateStore, shadow: str) -> list[dict[str, Any]]:
    """As `Backfill.status_rows` builds them: each record's fields, its verdict and version."""
    verdicts = store.verdicts(shadow)
    rows = []
    for key, record in sorted(store.records(shadow).items()):
        row = record.as_dict()
        v = verdicts.get(key)
        row["verdict"] = v.verdict if v else None
        row["validated_version"] = v.partition_version if v else None
        rows.append(row)
    return rows


def _promoted(store: StateStore, live: str, shadow: str) -> tuple[str, str]:
    """A promotion of thirty days and its rollback, recorded: their ids."""
    promotion = PromotionRecord.promotion(
        new_id(PROMOTE),
        live_table=live,
        shadow_table=shadow,
        partitions=DAYS,
        live_version_before=3,
        shadow_versions=dict.fromkeys(DAYS, 4),
        validation_ids=["v-1"],
        config_hash="h",
        code_fingerprint="c",
        schema_change=["+score"],
    )
    store.record_promotion(promotion)
    rollback = PromotionRecord.rollback(
        new_id(ROLLBACK),
        live_table=live,
        partitions=DAYS,
        live_version_before=4,
        target=promotion.id,
        to_version=None,
        config_hash="h",
    )
    store.record_promotion(rollback)
    return promotion.id, rollback.id


def test_history_prints_every_id_whole_at_80_columns(
    tmp_path: Path, narrow: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config, store = _opened(tmp_path)
    ids = _promoted(store, config.live_table, config.shadow)
    TextView().history(store.promotions(config.live_table))
    output = capsys.readouterr().out
    rows = [line for line in output.splitlines() if line.startswith("│ ") and line[2:3] != " "]
    assert [line.split()[1] for line in rows] == list(ids), output
    assert "…" not in "".join(line.split("│")[1] for line in rows), "no id is cut"


def test_pipeline_history_prints_every_id_whole_at_80_columns(tmp_path: Path) -> None:
    _, store = _opened(tmp_path)
    member = [("raw", new_id(PROMOTE))]
    promotion = PipelineRecord(id=new_id("pipeline"), pipeline="p.yaml", kind=PROMOTE, partitions=DAYS, members=member)
    store.record_pipeline(promotion)
    undo = PipelineRecord(
        id=new_id("pipeline-rollback"), pipeline="p.yaml", kind=ROLLBACK, partitions=DAYS, target=promotion.id
    )
    store.record_pipeline(undo)
    console = Console(width=80, record=True, markup=False, highlight=False)
    console.print(pipeline_history_table(store.pipeline_records("p.yaml")))
    text = console.export_text()
    assert promotion.id in text and undo.id in text, text


def test_status_shows_each_partitions_verdict(tmp_path: Path, narrow: None, capsys: pytest.CaptureFixture[str]) -> None:
    config, store = _opened(tmp_path)
    shadow = config.shadow
    store.mark_pending(shadow, DAYS[:4], "run-1")
    store.mark_running(shadow, DAYS[:4], "run-1", "c")
    store.mark_written(shadow, dict.fromkeys(DAYS[:3], 200), 7, "run-1", "c", 1.5)
    store.mark_failed(shadow, DAYS[3:4], "boom", "run-1")
    verdicts = {DAYS[0]: (CheckStatus.PASS, 7), DAYS[1]: (CheckStatus.FAIL, 7), DAYS[2]: (CheckStatus.WARN, 5)}
    store.save_verdicts(shadow, [VerdictRecord(k, v, [], MetricsDoc(), 7, n) for k, (v, n) in verdicts.items()])
    TextView().status(shadow, _status_rows(store, shadow), "sqlite:///state.db")
    output = capsys.readouterr().out
    cells = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
        for line in output.splitlines()
        if line.startswith("│ 2024")
    }
    assert cells == {
        DAYS[0]: ["written", "pass"],
        DAYS[1]: ["written", "fail"],
        DAYS[2]: ["written", "warn (stale)"],  # validated before its latest write
        DAYS[3]: ["failed", ""],  # never validated
    }, output
