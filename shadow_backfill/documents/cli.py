"""The one-table commands' `--json` documents: `status`, `history` and the dry-run plans of
`run`, `backfill` and `recompute`-like commands (`RunPlanDoc`).

Field order is the order scripts have always seen (pydantic dumps fields in declaration order),
so a model here is the contract, not a copy of it: the CLI builds one and dumps it, and the
published schema (`docs/*.schema.json`) is generated from it. Times are published as the ISO
text `datetime.isoformat()` writes (`records.plain`; `StatusRowDoc`'s datetimes are written by a
serializer to the same text), not as pydantic writes datetimes, whose `Z` would change the
bytes scripts compare.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_serializer
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.json_schema import JsonDict

from shadow_backfill.document import LateArrivalDoc, MetricsDoc
from shadow_backfill.records import PartitionRecord
from shadow_backfill.vocabulary import CheckStatus

# ISO 8601 text with its UTC offset, as `datetime.isoformat()` writes it.
TIME: JsonDict = {"format": "date-time"}


class _Out(BaseModel):
    """A printed document: every field named, nothing else accepted (a field the records gain
    must be published on purpose, and then the schema test says so)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# The record's fields are declared once, in `records.PartitionRecord`; its times are written as
# the record's `isoformat()` text, as above.
@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class StatusRowDoc(PartitionRecord):
    """One partition of `status --json`: its state-store record and latest verdict."""

    verdict: CheckStatus | None = Field(description="the latest verdict; null until validated")
    validated_version: int | None = Field(description="the shadow partition version the verdict judged")

    @field_serializer("started_at", "finished_at")
    def _iso(self, at: dt.datetime | None) -> str | None:
        return None if at is None else at.isoformat()


class StatusDoc(RootModel[list[StatusRowDoc]]):
    """`status --json`: every partition of the shadow table, in the store's order."""

    model_config = ConfigDict(frozen=True)


class HistoryEntryDoc(_Out):
    """One promotion or rollback of `history --json` (`state.audit.PromotionRecord`)."""

    id: str
    kind: Literal["promote", "rollback"]
    live_table: str
    shadow_table: str | None = Field(description="null for a rollback")
    partitions: list[str]
    live_version_before: int | None
    live_version_after: int | None
    shadow_versions: dict[str, int] = Field(description="partition -> the shadow version promoted")
    validation_ids: list[str]
    target: str | None = Field(description="a rollback: the promotion it undid")
    to_version: int | None = Field(description="a rollback of the whole table: the live version restored")
    config_hash: str | None
    code_fingerprint: str | None
    user: str | None
    host: str | None
    at: str | None = Field(json_schema_extra=TIME)
    undone_by: str | None = Field(description="the rollback that undid this promotion")
    schema_change: list[str] = Field(description='"+col": added to live, "-col": kept null')
    step: Literal["canary", "rest"] | None = Field(description="a canary promotion's step")
    steps_of: str | None = Field(description="a canary promotion's id, on both its steps")
    approved_by: str | None = Field(
        None, description="`approve`: who let these held (warn) partitions into live; null: no approval"
    )
    approval_reason: str | None = Field(None, description="`approve`: why, in the approver's words")


class HistoryDoc(RootModel[list[HistoryEntryDoc]]):
    """`history --json`: the live table's promotions and rollbacks, oldest first."""

    model_config = ConfigDict(frozen=True)


class WindowDoc(_Out):
    """How `--last N --lag D` chose the partitions (`windows.Window`)."""

    now: str = Field(json_schema_extra=TIME)
    lag_seconds: int
    last: int
    time_zone: str
    complete_before: str = Field(json_schema_extra=TIME)


class PlannedPartitionDoc(_Out):
    """One requested partition of a plan (`run_plan.PlannedPartition`)."""

    partition: str
    action: Literal["recompute", "skip"]
    reason: str
    chunk: int | None = Field(description="an index into `chunks`; null when skipped")
    live_rows: int | None = Field(description="from the live table's metadata; null: not known there")
    shadow_rows: int | None = Field(description="from the shadow table's metadata; null: not written")


class RunPlanDoc(_Out):
    """`run --dry-run --json` and `backfill --dry-run --json`: what the run would do."""

    live_table: str
    shadow_table: str
    window: WindowDoc | None = Field(description="with --last; else null")
    recompute: list[str]
    skip: list[str]
    max_parallel: int
    chunk_size: int
    chunks: list[list[str]] = Field(description="the chunks (one Spark job each) in the order they start")
    partitions: list[PlannedPartitionDoc]


class PlannedRowsDoc(_Out):
    """A partition's row counts before and after a promotion, from metadata (null: not known)."""

    live: int | None = None
    shadow: int | None = None


class PromotionPlanDoc(_Out):
    """`promote --dry-run --json`: what the promotion would do; nothing was written."""

    live_table: str
    live_version: int | None = Field(description="the live version the promotion expects to commit on")
    promote: list[str] = Field(description="the partitions it would promote, in one commit")
    refused: dict[str, str] = Field(description="partition -> why it would not be promoted")
    shadow_versions: dict[str, int] = Field(description="partition -> the shadow version it would promote")
    rows: dict[str, PlannedRowsDoc] = Field(description="partition -> its row counts, live and shadow")
    validation_ids: list[str] = Field(description="the validations whose verdicts allow it")

    @classmethod
    def of(cls, plan: Any, live_table: str) -> PromotionPlanDoc:
        """The document of a `promote.PromotionPlan` (taken as `Any`: this package imports no engine)."""
        return cls(
            live_table=live_table,
            live_version=plan.live_version,
            promote=list(plan.partitions),
            refused=dict(plan.refused),
            shadow_versions=dict(plan.shadow_versions),
            rows={k: PlannedRowsDoc.model_validate(v) for k, v in plan.rows.items()},
            validation_ids=list(plan.validation_ids),
        )


class MeasuredDoc(_Out):
    """One validation of a partition, as the history keeps it (`state.metric_history_days`)."""

    validation_id: str
    validated_at: str | None = Field(json_schema_extra=TIME)
    verdict: CheckStatus
    shadow_version: int | None
    partition_version: int | None
    live_version: int | None
    metrics: MetricsDoc = Field(description="what was measured, as report.json's `metrics` (no samples)")


class MetricHistoryDoc(_Out):
    """`history CONFIG --partition P --metrics --json`: a partition's measurements at each
    validation kept, oldest first."""

    shadow_table: str
    partition: str
    validations: list[MeasuredDoc]


class LateArrivalHistoryDoc(_Out):
    """`history CONFIG --late-arrivals --json`: the partitions validated at two ages or more
    (a nightly window), by age, as report.json's `late_arrivals`."""

    shadow_table: str
    late_arrivals: LateArrivalDoc | None = Field(description="null: no partition was validated at two ages or more")
