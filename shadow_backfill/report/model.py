"""The one model every report renders: report.json's document (`ReportDoc`, its types and
schema in `document.py`), built once per report from the stored verdicts. report.json is its
dump, and the Markdown, JUnit and HTML renderers read only it, so the four cannot disagree."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel

from shadow_backfill.document import (
    SCHEMA_VERSION,
    ApprovalDoc,
    CheckDoc,
    KeyDiffDoc,
    LateArrivalDoc,
    MeasuredPointDoc,
    PartitionDoc,
    ReportDoc,
)
from shadow_backfill.state import PROMOTE, PromotionRecord, VerdictRecord
from shadow_backfill.vocabulary import VERDICTS, CheckStatus


@dataclass
class ReportData:
    """What a report is made from: the tables and their stored verdicts (`report_document`)."""

    live_table: str
    shadow_table: str
    table_format: str
    verdicts: Sequence[VerdictRecord]
    # partition -> the approval in force that let it into live (`approvals_in_force`)
    approvals: Mapping[str, ApprovalDoc] = field(default_factory=dict)
    # partition -> its validations kept, oldest first (`StateStore.metric_histories`)
    history: Mapping[str, Sequence[VerdictRecord]] = field(default_factory=dict)
    # the history's partitions validated at two ages or more (`report.arrivals.late_arrivals`)
    late_arrivals: LateArrivalDoc | None = None
    report_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    generated_at: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat())

    @property
    def summary(self) -> dict[str, int]:
        out = dict.fromkeys(map(str, VERDICTS), 0)
        for v in self.verdicts:
            out[str(v.verdict)] = out.get(str(v.verdict), 0) + 1
        return out


def _same_named(record: Any, document: type[BaseModel]) -> dict[str, Any]:
    """The dataclass `record`'s fields that `document` publishes under the same name: a
    document says what the record holds in the record's own words, and only what it computes
    or renames is spelt out where it is built."""
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name in document.model_fields}


def approvals_in_force(trail: Sequence[PromotionRecord], shadow_table: str) -> dict[str, ApprovalDoc]:
    """Each partition's approval from the audit trail (oldest first): the one its live content
    came from. A later promotion without one, or a rollback, ends it; an undone promotion and
    another shadow's (an earlier version's) count for nothing."""
    found: dict[str, ApprovalDoc] = {}
    for rec in trail:
        if rec.undone_by is not None or (rec.kind == PROMOTE and rec.shadow_table != shadow_table):
            continue
        for k in rec.partitions:
            found.pop(k, None)
        if rec.kind == PROMOTE and rec.approved_by is not None:
            at = rec.at.isoformat() if rec.at else None
            approval = ApprovalDoc(by=rec.approved_by, reason=rec.approval_reason or "", at=at, promotion_id=rec.id)
            found |= dict.fromkeys(rec.partitions, approval)
    return found


HISTORY_SHOWN = 20  # a partition's last validations in the report (all: `history --metrics`)


def _point(r: VerdictRecord) -> MeasuredPointDoc:
    keys = r.metrics.keys if isinstance(r.metrics.keys, KeyDiffDoc) else None
    return MeasuredPointDoc(
        validation_id=r.validation_id or "",
        validated_at=r.validated_at.isoformat() if r.validated_at else None,
        verdict=r.verdict,
        shadow_version=r.shadow_version,
        live_version=r.live_version,
        live_rows=r.metrics.live_rows,
        shadow_rows=r.metrics.shadow_rows,
        keys_added=keys.added if keys else None,
        keys_removed=keys.removed if keys else None,
        keys_changed=keys.changed if keys else None,
    )


def partition_document(
    v: VerdictRecord, approval: ApprovalDoc | None = None, history: Sequence[VerdictRecord] = ()
) -> PartitionDoc:
    """A partition as report.json publishes it: the stored record, its time as ISO text. Its
    metrics always carry `column_changes` and `samples`, empty when there are none (a verdict
    stored before the judge measured them has neither), so a script reads them without a
    default."""
    empty: dict[str, Any] = {"column_changes": {}, "samples": []}
    missing = {k: x for k, x in empty.items() if k not in v.metrics.model_fields_set}
    return PartitionDoc.model_validate(
        {
            **_same_named(v, PartitionDoc),
            "validated_at": v.validated_at.isoformat() if v.validated_at else None,
            "checks": [c.as_dict() for c in v.checks],
            "metrics": v.metrics.model_copy(update=missing) if missing else v.metrics,
            "approval": approval,
            **({"history": [_point(r) for r in history[-HISTORY_SHOWN:]]} if history else {}),
        }
    )


def report_document(data: ReportData) -> ReportDoc:
    """report.json as its model, which every other report renders too: the tables and the ids
    as given, the summary and a document of each partition."""
    return ReportDoc.model_validate(
        {
            **_same_named(data, ReportDoc),
            "schema_version": SCHEMA_VERSION,
            "format": data.table_format,
            "summary": data.summary,
            "partitions": [
                partition_document(v, data.approvals.get(v.partition), data.history.get(v.partition, ()))
                for v in data.verdicts
            ],
        }
    )


def report_text(doc: ReportDoc) -> str:
    """report.json's bytes. Dumped as Python values and written by `json.dumps`, not in
    pydantic's JSON mode, which would turn a check's non-finite observed value into null: it
    stays `Infinity`, as a verdict read back from the state store holds it."""
    return json.dumps(doc.model_dump(by_alias=True, exclude_unset=True), indent=2, default=str) + "\n"


def report_title(doc: ReportDoc) -> str:
    return f"shadow-backfill: {doc.shadow_table} vs {doc.live_table}"


def reasons(p: PartitionDoc) -> list[CheckDoc]:
    """The checks that made a partition's verdict worse than pass, failures first (the order
    of `vocabulary.reasons`, which reads the validator's checks)."""
    bad = (c for c in p.checks if c.status in (CheckStatus.WARN, CheckStatus.FAIL))
    return sorted(bad, key=lambda c: -c.status.rank)


def skipped(checks: Sequence[CheckDoc]) -> list[CheckDoc]:
    """The checks not judged (too few rows): shown apart, so none reads as passed."""
    return [c for c in checks if c.status == CheckStatus.SKIPPED]


def skipped_count(doc: ReportDoc) -> int:
    return sum(len(skipped(p.checks)) for p in doc.partitions)


def check_id(c: CheckDoc) -> str:
    """A check named with its column, as `vocabulary.Check.id` names it."""
    return f"{c.name}[{c.column}]" if c.column else c.name
