"""Every `--json` output and pipeline.json is a typed document with a published JSON Schema:
what the CLI prints validates against the file under docs/, the bytes are those the
hand-written dicts printed before (kept below as `_before_*`, the exact code they replaced),
the models name every field their records carry, and the schema files are the models' own."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any, get_args

import pytest
from support import published

from shadow_backfill.documents import PUBLISHED, dump, schema_texts
from shadow_backfill.documents.cli import HistoryDoc, HistoryEntryDoc, PlannedPartitionDoc, StatusDoc, StatusRowDoc
from shadow_backfill.documents.pipeline import (
    MemberDoc,
    PipelineHistoryDoc,
    PipelineHistoryEntryDoc,
    PipelinePartitionDoc,
    PipelinePlanDoc,
)
from shadow_backfill.pipeline.gate import BLOCKED, CrossCheck, PipelineVerdict
from shadow_backfill.pipeline.report import pipeline_document
from shadow_backfill.run_plan import PlannedPartition, RunPlan
from shadow_backfill.state import PartitionRecord, PipelineRecord, PromotionRecord
from shadow_backfill.state.audit import PROMOTE, ROLLBACK
from shadow_backfill.state.pipelines import DONE, PROMOTING, UNDOING
from shadow_backfill.vocabulary import CheckStatus, PartitionStatus
from shadow_backfill.windows import Window

DOCS = Path(__file__).parents[2] / "docs"
CANARY_SOURCE = Path(__file__).parents[2] / "shadow_backfill" / "canary_recovery.py"
AT = dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)


def _status_rows() -> list[dict[str, Any]]:
    """As `Backfill.status_rows` builds them: each record's fields, its verdict and version."""
    written = PartitionRecord(
        "db.shadow_ü", "2024-01-01", PartitionStatus.WRITTEN, 200, 4, "abc", "run-1", 1, None, AT, AT, 1.25
    )
    failed = dataclasses.replace(written, partition="2024-01-02", status=PartitionStatus.FAILED, rows=None)
    failed = dataclasses.replace(failed, error="boom: ‘quoted’", finished_at=None, duration_s=None)
    rows = []
    for record, verdict in ((written, CheckStatus.PASS), (failed, None)):
        row = record.as_dict()
        row["verdict"] = verdict
        row["validated_version"] = 4 if verdict else None
        rows.append(row)
    return rows


def test_status() -> None:
    rows = _status_rows()
    text = dump(StatusDoc.model_validate(rows))
    assert text == json.dumps(rows, indent=2, default=str) + "\n", "the bytes of before"
    assert published(text, "status.schema.json")[0]["verdict"] == "pass"
    fields = [f.name for f in dataclasses.fields(PartitionRecord)] + ["verdict", "validated_version"]
    assert [f.name for f in dataclasses.fields(StatusRowDoc)] == fields, "every field of the record, in its order"


def _history() -> list[PromotionRecord]:
    promotion = PromotionRecord.promotion(
        "p-1",
        live_table="db.live",
        shadow_table="db.shadow",
        partitions=["2024-01-01"],
        live_version_before=3,
        shadow_versions={"2024-01-01": 4},
        validation_ids=["v-1"],
        config_hash="h",
        code_fingerprint="c",
        schema_change=["+score"],
    )
    canary = dataclasses.replace(promotion, id="p-2", step="canary", steps_of="p-2", user="ana", host="h1", at=AT)
    rollback = PromotionRecord.rollback(
        "r-1",
        live_table="db.live",
        partitions=["2024-01-01"],
        live_version_before=5,
        target="p-1",
        to_version=None,
        config_hash=None,
    )
    return [dataclasses.replace(promotion, live_version_after=4, undone_by="r-1"), canary, rollback]


def test_history() -> None:
    recs = _history()
    text = dump(HistoryDoc.model_validate([r.as_dict() for r in recs]))
    assert text == json.dumps([r.as_dict() for r in recs], indent=2, default=str) + "\n", "the bytes of before"
    assert [h["kind"] for h in published(text, "history.schema.json")] == ["promote", "promote", "rollback"]
    assert list(HistoryEntryDoc.model_fields) == [f.name for f in dataclasses.fields(PromotionRecord)]
    assert set(get_args(HistoryEntryDoc.model_fields["kind"].annotation)) == {PROMOTE, ROLLBACK}
    steps = get_args(get_args(HistoryEntryDoc.model_fields["step"].annotation)[0])
    # canary_recovery imports PySpark (tests/unit/test_preflight.py asserts nothing did): read its words
    assert f"CANARY, REST = {steps[0]!r}, {steps[1]!r}".replace("'", '"') in CANARY_SOURCE.read_text()


def _plan(window: Window | None) -> RunPlan:
    planned = [
        PlannedPartition("2024-01-01", "recompute", "not written yet", 0, 100, None),
        PlannedPartition("2024-01-02", "recompute", "failed in an earlier run", 1, None, 7),
        PlannedPartition("2024-01-03", "skip", "already written", None, 100, 100),
    ]
    return RunPlan("db.live", "db.shadow", 2, 1, planned, [["2024-01-01"], ["2024-01-02"]], window)


def _before_plan(plan: RunPlan) -> dict[str, Any]:
    """`RunPlan.as_dict` and `_window_dict` as they were before the documents."""
    w = plan.window
    return {
        "live_table": plan.live_table,
        "shadow_table": plan.shadow_table,
        "window": None
        if w is None
        else {
            "now": w.now.isoformat(),
            "lag_seconds": int(w.lag.total_seconds()),
            "last": w.last,
            "time_zone": w.zone,
            "complete_before": w.cutoff.astimezone(dt.timezone.utc).isoformat(),
        },
        "recompute": plan.to_recompute,
        "skip": plan.to_skip,
        "max_parallel": plan.max_parallel,
        "chunk_size": plan.chunk_size,
        "chunks": plan.chunks,
        "partitions": [vars(p) for p in plan.partitions],
    }


WINDOW = Window(AT, dt.timedelta(days=2), 3, "Europe/Berlin", ())


@pytest.mark.parametrize("window", [None, WINDOW])
def test_run_plan(window: Window | None) -> None:
    plan = _plan(window)
    text = dump(plan.as_document())
    assert text == json.dumps(_before_plan(plan), indent=2) + "\n", "the bytes of before"
    assert published(text, "run-plan.schema.json")["skip"] == ["2024-01-03"]
    assert list(PlannedPartitionDoc.model_fields) == [f.name for f in dataclasses.fields(PlannedPartition)]


def test_pipeline_plan() -> None:
    plans = {"raw": _plan(None), "features": _plan(WINDOW)}
    doc = PipelinePlanDoc(pipeline="nightly", layers={k: p.as_document() for k, p in plans.items()})
    before = {"pipeline": "nightly", "layers": {key: _before_plan(plan) for key, plan in plans.items()}}
    assert dump(doc) == json.dumps(before, indent=2) + "\n", "the bytes of before"
    assert list(published(dump(doc), "pipeline-plan.schema.json")["layers"]) == ["raw", "features"]


def _before_pipeline(name: str, order: list[str], verdicts: list[PipelineVerdict]) -> dict[str, Any]:
    """`pipeline_document` as it was before the documents."""
    return {
        "schema_version": 1,
        "pipeline": name,
        "layers": list(order),
        "partitions": [
            {
                "partition": v.partition,
                "verdict": str(v.verdict),
                "layers": {k: (str(s) if s is not None else None) for k, s in v.layers.items()},
                "checks": [
                    {"name": c.name, "status": str(c.status), "observed": c.observed, "message": c.message}
                    for c in v.checks
                ],
                "failed_in": v.failed_in,
            }
            for v in verdicts
        ],
    }


def test_pipeline_json_and_status() -> None:
    ratio = CrossCheck("rows_ratio raw -> staging", CheckStatus.PASS, 0.95, "95/100 rows = 0.95")
    missing = CrossCheck("rows_ratio staging -> features", CheckStatus.FAIL, None, "a layer has no rows")
    verdicts = [
        PipelineVerdict("2024-01-01", {"raw": "pass", "staging": "pass", "features": "warn"}, [ratio]),
        PipelineVerdict("2024-01-02", {"raw": "pass", "staging": "fail", "features": BLOCKED}, [missing]),
        PipelineVerdict("2024-01-03", {"raw": None, "staging": None, "features": None}),
    ]
    order = ["raw", "staging", "features"]
    text = dump(pipeline_document("nightly", order, verdicts))
    assert text == json.dumps(_before_pipeline("nightly", order, verdicts), indent=2) + "\n", "the bytes of before"
    doc = published(text, "pipeline.schema.json")
    assert doc["partitions"][1]["layers"]["features"] == "blocked"
    assert list(PipelinePartitionDoc.model_fields) == [*_before_pipeline("x", [], verdicts)["partitions"][0]]


def test_pipeline_history() -> None:
    recs = [
        PipelineRecord(
            id="pp-1",
            pipeline="nightly",
            kind=PROMOTE,
            partitions=["2024-01-01"],
            members=[("raw", "p-1"), ("features", "p-2")],
            user="ana",
            host="h1",
            at=AT,
            undone_by="pr-1",
        ),
        PipelineRecord(id="pr-1", pipeline="nightly", kind=ROLLBACK, partitions=["2024-01-01"], target="pp-1"),
    ]
    rows = [r.as_dict() for r in recs]
    text = dump(PipelineHistoryDoc.model_validate(rows))
    assert text == json.dumps(rows, indent=2, default=str) + "\n", "the bytes of before"
    assert published(text, "pipeline-history.schema.json")[0]["members"][1] == {"table": "features", "promotion": "p-2"}
    assert list(PipelineHistoryEntryDoc.model_fields) == [f.name for f in dataclasses.fields(PipelineRecord)]
    assert list(MemberDoc.model_fields) == list(rows[0]["members"][0])
    assert set(get_args(PipelineHistoryEntryDoc.model_fields["state"].annotation)) == {PROMOTING, UNDOING, DONE}


def test_a_field_the_schema_does_not_publish_fails_validation() -> None:
    """The published schemas are strict: a key a script was never told of, or one missing, fails."""
    rows = _status_rows()
    with pytest.raises(AssertionError, match="surprise"):
        published(json.dumps([{**rows[0], "surprise": 1}]), "status.schema.json")
    with pytest.raises(AssertionError, match="'partition' is a required property"):
        published(
            json.dumps([{k: v for k, v in rows[0].items() if k != "partition"}], default=str), "status.schema.json"
        )
    with pytest.raises(ValueError, match="surprise"):
        StatusDoc.model_validate([{**rows[0], "surprise": 1}])


def test_the_published_schemas_are_the_documents_own() -> None:
    texts = schema_texts()
    assert set(texts) == {"report.schema.json", *PUBLISHED}
    stale = [name for name, text in texts.items() if not (DOCS / name).is_file() or (DOCS / name).read_text() != text]
    assert stale == [], f"docs/{', docs/'.join(stale)} stale: regenerate with python -m shadow_backfill.documents docs"
