"""report.json is typed and its JSON Schema published: what the judge writes validates against
the document's models, the models say the same fields as the measurement types they publish,
the published schema file is the models' own, and `schema_version` moves when a field does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support.documents import published

from shadow_backfill.config import ExpectedChange, ValidationSpec
from shadow_backfill.document import (
    SCHEMA_DIGESTS,
    SCHEMA_VERSION,
    ColumnChangeDoc,
    ColumnDiffDoc,
    ColumnDoc,
    HistogramDoc,
    KeyDiffDoc,
    MetricsDoc,
    ReportDoc,
    SampleDoc,
    fields_digest,
    schema_text,
)
from shadow_backfill.report.model import ReportData, report_document, report_text
from shadow_backfill.state import VerdictRecord
from shadow_backfill.validate.changes import ColumnChange
from shadow_backfill.validate.distributions import Distribution
from shadow_backfill.validate.judge import Judge, PartitionVerdict
from shadow_backfill.validate.measurements import (
    Categories,
    ColumnDiff,
    ColumnMeasurement,
    ColumnPlan,
    Histogram,
    KeyDiff,
    Moments,
    PartitionProfile,
    Sample,
    SideStats,
)
from shadow_backfill.vocabulary import CheckStatus

SCHEMA_FILE = Path(__file__).parents[2] / "docs" / "report.schema.json"
PLAN = ColumnPlan(
    numeric=["amount"], categorical=["label"], compared=["amount", "label"], added=["score"], removed=[], retyped=[]
)


def _profile(name: str, *, live_rows: int = 200, keys: bool = True) -> PartitionProfile:
    side = SideStats(200, 0.0, Moments(10.0, 2.0, 2000.0))
    prof = PartitionProfile(name, live_rows=live_rows, shadow_rows=200)
    prof.columns["amount"] = ColumnMeasurement(
        side if live_rows else None,
        side,
        Histogram(tuple(float(i) for i in range(9)), (20.0,) * 10, (20.0,) * 10),
    )
    prof.columns["label"] = ColumnMeasurement(
        SideStats(200, 0.0), SideStats(200, 0.0), categories=Categories({"a": 200}, {"a": 150, "b": 50})
    )
    prof.columns["score"] = ColumnMeasurement(shadow=SideStats(190, 0.05))
    if keys:
        by_column = {"amount": ColumnDiff(3, (float("inf"), 1.5)), "label": ColumnDiff(0)}
        prof.keys = KeyDiff(matched=200, changed=3, by_column=by_column)
        prof.samples = [Sample({"id": 7}, "amount", 1.0, 2.5)]
    return prof


def _verdicts() -> list[PartitionVerdict]:
    contract = ValidationSpec(expected_changes={"amount": ExpectedChange()})
    return [
        Judge(ValidationSpec(), PLAN).judge(_profile("2024-01-01"), []),
        Judge(contract, PLAN).judge(_profile("2024-01-02"), []),
        Judge(ValidationSpec(), PLAN).judge(_profile("2024-01-03", live_rows=0), []),
        Judge(ValidationSpec(), PLAN).judge(_profile("2024-01-04", keys=False), []),
    ]


def _records() -> list[VerdictRecord]:
    """The judge's verdicts as stored, and a partition that was never measured."""
    records = [VerdictRecord(v.partition, v.verdict, v.checks, v.metrics) for v in _verdicts()]
    records.append(VerdictRecord("2024-01-05", records[0].checks[0].status, [], MetricsDoc()))  # never measured
    return records


def _document(records: list[VerdictRecord]) -> dict[str, Any]:
    """report.json as a script reads it (the bytes `write_reports` writes, parsed)."""
    return json.loads(report_text(report_document(ReportData("live", "shadow", "delta", records))))


def test_what_the_judge_publishes_validates_against_the_document() -> None:
    records = _records()
    document = _document(records)
    parsed = ReportDoc.model_validate(document)
    assert [p.partition for p in parsed.partitions] == [r.partition for r in records]
    first = parsed.partitions[0].metrics
    assert first.keys is not None and isinstance(first.keys, KeyDiffDoc)
    assert first.keys.by_column["amount"].max_abs_diff == "inf", "non-finite floats are published as text"
    published = document["partitions"][0]["metrics"]["columns"]
    assert "live_count" not in published["score"] and "shadow_count" in published["score"], "no live side"
    assert parsed.as_json() == document, "the document reads and writes back unchanged"
    document["partitions"][0]["metrics"]["columns"]["amount"]["psi_of_an_older_version"] = 0.1
    assert ReportDoc.model_validate(document).as_json() == document, "a field of another version is kept"
    with pytest.raises(ValueError, match="edges"):
        ReportDoc.model_validate({**document, "partitions": [_without_edges(document["partitions"][0])]})


def _without_edges(partition: dict[str, Any]) -> dict[str, Any]:
    """The partition with a histogram that lost its required `edges`."""
    broken = json.loads(json.dumps(partition))
    del broken["metrics"]["columns"]["amount"]["hist"]["edges"]
    return broken


def test_a_v4_document_says_each_fact_once() -> None:
    """Measurements only under `metrics`, the deciding checks only in `checks`; the published
    schema (the file, not the models) accepts a real dump."""
    records = _records()
    document = published(json.dumps(_document(records)), "report.schema.json")
    assert document["schema_version"] == 7
    for part, record in zip(document["partitions"], records, strict=True):
        assert not {"rows", "reasons", "column_changes", "samples"} & set(part), "a copy of metrics or checks"
        metrics = part["metrics"]
        assert metrics["column_changes"] == record.metrics.as_json().get("column_changes", {})
        assert metrics["samples"] == record.metrics.as_json().get("samples", [])
        assert metrics.get("rows") == record.metrics.as_json().get("rows")
        failing = [c["name"] for c in part["checks"] if c["status"] == "fail"]
        warning = [c["name"] for c in part["checks"] if c["status"] == "warn"]
        assert failing + warning == [c.name for c in record.reasons], "what v3 published as reasons"
    measured = document["partitions"][0]["metrics"]
    assert measured["column_changes"]["amount"]["changed"] == 3 and measured["samples"][0]["column"] == "amount"
    assert document["partitions"][-1]["metrics"] == {"column_changes": {}, "samples": []}, "never measured"


def test_an_old_store_and_an_old_document_lose_nothing() -> None:
    """A verdict stored by an older version re-renders with every field it stored, and a
    schema_version 3 report.json (its partition's copies included) still reads unchanged."""
    stored = {"rows": {"live": 2, "shadow": 2}, "column_changes": {"x": {"changed": 1}}, "drift_of_v1": 0.3}
    old = VerdictRecord("2023-12-31", CheckStatus.WARN, [], MetricsDoc.model_validate(stored))
    (part,) = _document([old])["partitions"]
    assert part["metrics"] == {**stored, "samples": []}
    v3 = _document(_records())
    v3["schema_version"] = 3
    for p in v3["partitions"]:
        p.update(rows=p["metrics"].get("rows", {}), reasons=[], column_changes={}, samples=[])
    assert ReportDoc.model_validate(v3).as_json() == v3


def test_the_document_says_the_fields_the_types_publish() -> None:
    """Each model's fields are exactly the keys its type publishes, fully populated."""
    change = ColumnChange(*([1] * len(dataclasses.fields(ColumnChange))))
    histogram = Histogram((1.0,), (1.0,), (1.0,))
    column = ColumnMeasurement(
        SideStats(1, 0.0, Moments(1.0, 1.0, 1.0)),
        SideStats(1, 0.0, Moments(1.0, 1.0, 1.0), (0.0, 2.0)),  # the range: an added column's
        histogram,
        Categories({"a": 1}, {"b": 1}),
    )
    published = {
        ColumnChangeDoc: change.as_dict(),
        SampleDoc: Sample({"id": 1}, "x", 1, 2).as_dict(),
        HistogramDoc: column.as_dict()["hist"],
        KeyDiffDoc: KeyDiff(by_column={"x": ColumnDiff(1)}).as_dict(),
        ColumnDiffDoc: ColumnDiff(1, (2.0, 1.0)).as_dict(),
        ColumnDoc: {**column.as_dict(), **Distribution(1.0, 1.0, None, 1.0).as_dict(), "js_distance": 1.0},
    }
    for doc, keys in published.items():
        assert set(doc.model_fields) == set(keys), doc.__name__


def test_the_published_schema_is_the_documents_own() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "docs/report.schema.json is stale: regenerate it with "
        "python -c \"from shadow_backfill.document import schema_text; print(schema_text(), end='')\" "
        "> docs/report.schema.json"
    )


def test_schema_version_moves_when_a_field_does() -> None:
    assert SCHEMA_DIGESTS.get(SCHEMA_VERSION) == fields_digest(), (
        f"report.json's fields changed under schema_version {SCHEMA_VERSION}, which users' scripts already read: "
        f"bump SCHEMA_VERSION and record {fields_digest()} for it in SCHEMA_DIGESTS"
    )


def test_the_report_names_who_approved_a_held_partition_and_why() -> None:
    """An approval in force (not undone) appears on its partition in report.json, the Markdown
    and the HTML, its data-derived text escaped; an undone approval does not."""
    from shadow_backfill.report.html import render_html
    from shadow_backfill.report.markdown import render_markdown
    from shadow_backfill.report.model import approvals_in_force
    from shadow_backfill.state import Approval, PromotionRecord

    records = _records()
    held = [r.partition for r in records if r.verdict != CheckStatus.PASS]
    base = {
        "live_table": "db.t",
        "shadow_table": "db.t_v2",
        "live_version_before": 1,
        "shadow_versions": {},
        "validation_ids": [],
        "config_hash": None,
        "code_fingerprint": None,
    }
    undone = dataclasses.replace(
        PromotionRecord.promotion("p-0", partitions=held, approval=Approval("mallory", "x"), **base),  # type: ignore[arg-type]
        undone_by="rb-1",
    )
    kept = PromotionRecord.promotion(
        "p-1", partitions=held[:1], approval=Approval("alice", "<b>ok</b> | INC-42"), **base
    )  # type: ignore[arg-type]
    approvals = approvals_in_force([undone, kept], "db.t_v2")
    assert {k: (a.by, a.promotion_id) for k, a in approvals.items()} == {held[0]: ("alice", "p-1")}
    later = PromotionRecord.promotion("p-2", partitions=held[:1], **base)  # type: ignore[arg-type]
    assert approvals_in_force([kept, later], "db.t_v2") == {}, "live's content came from a plain promotion since"
    assert approvals_in_force([kept], "db.t_v3") == {}, "an earlier shadow's approval"
    doc = report_document(ReportData("db.t", "db.t_v2", "iceberg", records, approvals))
    document = published(report_text(doc), "report.schema.json")
    approved = {p["partition"]: p["approval"] for p in document["partitions"] if p["approval"]}
    assert list(approved) == [held[0]] and approved[held[0]]["reason"] == "<b>ok</b> | INC-42"
    markdown = render_markdown(doc)
    assert "by alice" in markdown and "<b>" not in markdown and "\\| INC-42" in markdown
    html = render_html(doc)
    assert "approved into live by <strong>alice</strong>" in html and "&lt;b&gt;ok&lt;/b&gt;" in html
