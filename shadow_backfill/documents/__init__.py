"""Every JSON document a script reads from shadow-backfill, as pydantic models, and the JSON
Schemas published for them beside docs/report.schema.json.

report.json's models live in `shadow_backfill.document` (with its schema_version history);
`documents.cli` holds the one-table commands' `--json` output, `documents.pipeline` the
pipeline's and `documents.command` what any command did (`command_result.CommandResult`).
The code that prints or writes a document builds its model and dumps it with `dump()`, so what
scripts read cannot drift from what the schemas publish. This package imports
only the vocabulary, the store's plain records (`records`) and pydantic: the CLI, the pipeline
and the reports all sit above it.
Regenerate the files with `python -m shadow_backfill.documents docs`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from shadow_backfill.document import schema_text as report_schema_text
from shadow_backfill.documents.alert import AlertDoc
from shadow_backfill.documents.cli import (
    HistoryDoc,
    LateArrivalHistoryDoc,
    MetricHistoryDoc,
    PromotionPlanDoc,
    RunPlanDoc,
    StatusDoc,
)
from shadow_backfill.documents.command import CommandDoc
from shadow_backfill.documents.lineage import ShadowBackfillFacetDoc
from shadow_backfill.documents.pipeline import (
    PipelineDoc,
    PipelineHistoryDoc,
    PipelineLateArrivalsDoc,
    PipelinePlanDoc,
)
from shadow_backfill.documents.suggest import SuggestionDoc
from shadow_backfill.documents.task import TaskSummaryDoc

# file name under docs/ -> (model, what prints or writes it)
PUBLISHED: dict[str, tuple[type[BaseModel], str]] = {
    "status.schema.json": (StatusDoc, "shadow-backfill status --json"),
    "history.schema.json": (HistoryDoc, "shadow-backfill history --json"),
    "run-plan.schema.json": (RunPlanDoc, "shadow-backfill run|backfill --dry-run --json"),
    "pipeline.schema.json": (PipelineDoc, "pipeline.json and shadow-backfill pipeline status --json"),
    "pipeline-plan.schema.json": (PipelinePlanDoc, "shadow-backfill pipeline run|backfill --dry-run --json"),
    "pipeline-history.schema.json": (PipelineHistoryDoc, "shadow-backfill pipeline history --json"),
    "command.schema.json": (CommandDoc, "what a command did (command_result.CommandResult); validate --json"),
    "promotion-plan.schema.json": (PromotionPlanDoc, "shadow-backfill promote --dry-run --json"),
    "alert.schema.json": (AlertDoc, "what a json webhook of notify: receives"),
    "lineage-facet.schema.json": (ShadowBackfillFacetDoc, "the shadowBackfill facet of OpenLineage events"),
    "task-summary.schema.json": (TaskSummaryDoc, "the XCom shadow_backfill of the Airflow operator"),
    "suggest.schema.json": (SuggestionDoc, "shadow-backfill suggest --json"),
    "metric-history.schema.json": (MetricHistoryDoc, "shadow-backfill history --partition P --metrics --json"),
    "late-arrivals.schema.json": (LateArrivalHistoryDoc, "shadow-backfill history --late-arrivals --json"),
    "pipeline-late-arrivals.schema.json": (
        PipelineLateArrivalsDoc,
        "shadow-backfill pipeline history --late-arrivals --json",
    ),
}


def dump(document: BaseModel) -> str:
    """The bytes scripts read: `json.dumps` with indent 2, as the hand-written dicts were
    printed (`model_dump_json` would write non-ASCII text unescaped and change them)."""
    return json.dumps(document.model_dump(mode="json"), indent=2) + "\n"


def document_schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    """The JSON Schema of one document, titled by what prints it."""
    schema = model.model_json_schema()
    schema["title"] = f"shadow-backfill: {title}"
    return schema


def schema_texts() -> dict[str, str]:
    """Every published schema file's text by its name under docs/, report.json's included: the
    one source of the files, and what the unit test compares them with."""
    texts = {"report.schema.json": report_schema_text()}
    for name, (model, title) in PUBLISHED.items():
        texts[name] = json.dumps(document_schema(model, title), indent=2, sort_keys=True) + "\n"
    return texts


def write_schemas(docs: Path) -> list[Path]:
    """Write every schema file into `docs` (the repository's docs/ folder)."""
    written = []
    for name, text in schema_texts().items():
        (docs / name).write_text(text)
        written.append(docs / name)
    return written
