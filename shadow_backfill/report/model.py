"""What every report renders, and the JSON document (its types and schema: `document.py`)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shadow_backfill.document import SCHEMA_VERSION
from shadow_backfill.state import VerdictRecord
from shadow_backfill.vocabulary import VERDICTS


@dataclass
class ReportData:
    live_table: str
    shadow_table: str
    table_format: str
    verdicts: Sequence[VerdictRecord]
    report_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    generated_at: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat())

    @property
    def summary(self) -> dict[str, int]:
        out = dict.fromkeys(map(str, VERDICTS), 0)
        for v in self.verdicts:
            out[str(v.verdict)] = out.get(str(v.verdict), 0) + 1
        return out

    @property
    def title(self) -> str:
        return f"shadow-backfill: {self.shadow_table} vs {self.live_table}"


def partition_json(v: VerdictRecord) -> dict[str, Any]:
    """A partition as report.json publishes it (`document.PartitionDoc`). Its metrics always
    carry `column_changes` and `samples`, empty when there are none (a verdict stored before
    the judge measured them has neither), so a script reads them without a default."""
    metrics = v.metrics.as_json()
    metrics.setdefault("column_changes", {})
    metrics.setdefault("samples", [])
    return {
        "partition": v.partition,
        "verdict": v.verdict,
        "shadow_version": v.shadow_version,
        "partition_version": v.partition_version,
        "live_version": v.live_version,
        "validation_id": v.validation_id,
        "validated_at": v.validated_at.isoformat() if v.validated_at else None,
        "checks": [c.as_dict() for c in v.checks],
        "metrics": metrics,
    }


def report_json(data: ReportData) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "report_id": data.report_id,
        "generated_at": data.generated_at,
        "live_table": data.live_table,
        "shadow_table": data.shadow_table,
        "format": data.table_format,
        "summary": data.summary,
        "partitions": [partition_json(v) for v in data.verdicts],
    }
