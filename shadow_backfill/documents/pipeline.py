"""The pipeline's documents: `pipeline.json` (which `pipeline status --json` prints too), the
layers' plans of `pipeline ... --dry-run --json`, `pipeline history --json` and its
`--late-arrivals` view.

As in `documents.cli`, the models are the contract: field order is the order scripts read, the
writers build a model and dump it, and the published schemas are generated from these classes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from shadow_backfill.documents.cli import TIME, LateArrivalHistoryDoc, RunPlanDoc
from shadow_backfill.vocabulary import CheckStatus

PIPELINE_SCHEMA_VERSION: Literal[1] = 1
# A layer's verdict on a partition, or `blocked`: not recomputed because an upstream partition
# it needs was not written or failed (`pipeline.gate.BLOCKED`).
LayerVerdict = CheckStatus | Literal["blocked"] | None


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PipelinePlanDoc(_Out):
    """`pipeline run|backfill --dry-run --json`: each layer's plan, upstream first."""

    pipeline: str
    layers: dict[str, RunPlanDoc] = Field(description="layer -> its plan, in the pipeline's order")


class CrossCheckDoc(_Out):
    """One consistency check across layers on one partition (`pipeline.gate.CrossCheck`)."""

    name: str
    status: CheckStatus
    observed: float | None
    message: str


class PipelinePartitionDoc(_Out):
    """One partition across the pipeline (`pipeline.gate.PipelineVerdict`)."""

    partition: str
    verdict: CheckStatus
    layers: dict[str, LayerVerdict] = Field(description="layer -> its verdict; null: not validated")
    checks: list[CrossCheckDoc]
    failed_in: list[str] = Field(description="the layers and checks that failed or warned it")


class PipelineDoc(_Out):
    """pipeline.json, and `pipeline status --json`."""

    schema_version: Literal[1]
    pipeline: str
    layers: list[str] = Field(description="the layers, upstream first")
    partitions: list[PipelinePartitionDoc]


class MemberDoc(_Out):
    """One layer's promotion (or rollback) in a pipeline's set."""

    table: str = Field(description="the layer")
    promotion: str = Field(description="the layer's own promotion or rollback id (`history --json`)")


class PipelineHistoryEntryDoc(_Out):
    """One promotion or rollback of the set (`state.pipelines.PipelineRecord`)."""

    id: str
    pipeline: str
    kind: Literal["promote", "rollback"]
    partitions: list[str]
    members: list[MemberDoc] = Field(description="promotions upstream first; rollbacks downstream first")
    target: str | None = Field(description="a rollback: the pipeline promotion it undid")
    state: Literal["promoting", "undoing", "done"]
    user: str | None
    host: str | None
    at: str | None = Field(json_schema_extra=TIME)
    undone_by: str | None
    approved_by: str | None = Field(
        None, description="`pipeline approve`: who let these held (warn) partitions into live; null: no approval"
    )
    approval_reason: str | None = Field(None, description="`pipeline approve`: why, in the approver's words")


class PipelineHistoryDoc(RootModel[list[PipelineHistoryEntryDoc]]):
    """`pipeline history --json`: the pipeline's promotions and rollbacks, oldest first."""

    model_config = ConfigDict(frozen=True)


class PipelineLateArrivalsDoc(_Out):
    """`pipeline history --late-arrivals --json`: each layer's late-arrival view, upstream first
    (a layer's rows arrive late as its upstream's do, or later)."""

    pipeline: str
    layers: dict[str, LateArrivalHistoryDoc] = Field(description="layer -> its view, in the pipeline's order")
