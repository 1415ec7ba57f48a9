"""What a command shows, through one interface with two implementations: text for people (Rich
tables) and JSON for scripts (the published documents of `shadow_backfill.documents`), as
pyiceberg's `cli/output.py` does. A command calls `view(as_json)` once and shows its typed
result through it, so no command writes its own `if --json` branch and the two forms cannot
drift apart: every method exists in both.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from shadow_backfill.cli.consoles import out
from shadow_backfill.cli.measured import arrivals_table, measured_table
from shadow_backfill.cli.render import (
    history_table,
    pipeline_history_table,
    print_run_plan,
    status_table,
    verdict_table,
)
from shadow_backfill.documents import dump
from shadow_backfill.documents.cli import HistoryDoc, LateArrivalHistoryDoc, MetricHistoryDoc, StatusDoc
from shadow_backfill.documents.pipeline import PipelineHistoryDoc, PipelineLateArrivalsDoc, PipelinePlanDoc

if TYPE_CHECKING:
    from shadow_backfill.documents.suggest import SuggestionDoc
    from shadow_backfill.pipeline.gate import PipelineVerdict
    from shadow_backfill.run_plan import RunPlan
    from shadow_backfill.state import PipelineRecord, PromotionRecord


class View(Protocol):
    def status(self, shadow_table: str, rows: list[dict[str, Any]], store: str) -> None: ...
    def history(self, records: Sequence[PromotionRecord]) -> None: ...
    def run_plan(self, plan: RunPlan) -> None: ...
    def pipeline_plan(self, pipeline: str, plans: Mapping[str, RunPlan]) -> None: ...
    def pipeline_status(self, pipeline: str, order: list[str], verdicts: list[PipelineVerdict]) -> None: ...
    def pipeline_history(self, records: Sequence[PipelineRecord]) -> None: ...
    def suggestion(self, doc: SuggestionDoc) -> None: ...
    def metric_history(self, doc: MetricHistoryDoc) -> None: ...
    def late_arrivals(self, doc: LateArrivalHistoryDoc) -> None: ...
    def pipeline_late_arrivals(self, doc: PipelineLateArrivalsDoc) -> None: ...


class TextView:
    """Tables and lines on stdout, for a terminal."""

    def status(self, shadow_table: str, rows: list[dict[str, Any]], store: str) -> None:
        out.print(status_table(shadow_table, rows))
        # Where the record lives: the default SQLite file is local even when the tables are on a
        # bucket, and a second machine running the same config keeps a record of its own.
        out.print(f"state store: {store}", markup=False)

    def history(self, records: Sequence[PromotionRecord]) -> None:
        out.print(history_table(list(records)))

    def run_plan(self, plan: RunPlan) -> None:
        print_run_plan(plan)

    def pipeline_plan(self, pipeline: str, plans: Mapping[str, RunPlan]) -> None:
        for plan in plans.values():
            print_run_plan(plan)

    def pipeline_status(self, pipeline: str, order: list[str], verdicts: list[PipelineVerdict]) -> None:
        from shadow_backfill.pipeline.results import PipelineValidation

        out.print(verdict_table(order, PipelineValidation(verdicts)))

    def pipeline_history(self, records: Sequence[PipelineRecord]) -> None:
        out.print(pipeline_history_table(list(records)))

    def suggestion(self, doc: SuggestionDoc) -> None:
        sys.stdout.write(doc.yaml)  # as written, to paste: no terminal wrapping or markup

    def metric_history(self, doc: MetricHistoryDoc) -> None:
        if not doc.validations:
            out.print(f"no measurements of partition {doc.partition} of {doc.shadow_table} are kept", markup=False)
            return
        out.print(measured_table(doc))

    def late_arrivals(self, doc: LateArrivalHistoryDoc) -> None:
        if doc.late_arrivals is None:
            out.print(f"no partition of {doc.shadow_table} was validated at two ages or more", markup=False)
            return
        out.print(arrivals_table(doc))

    def pipeline_late_arrivals(self, doc: PipelineLateArrivalsDoc) -> None:
        for layer, view in doc.layers.items():
            out.print(f"{layer}:", markup=False)
            self.late_arrivals(view)


class JsonView:
    """One JSON document on stdout and nothing else, each with a published schema
    (docs/*.schema.json), so a script can parse stdout whole."""

    def status(self, shadow_table: str, rows: list[dict[str, Any]], store: str) -> None:
        sys.stdout.write(dump(StatusDoc.model_validate(rows)))

    def history(self, records: Sequence[PromotionRecord]) -> None:
        sys.stdout.write(dump(HistoryDoc.model_validate([r.as_dict() for r in records])))

    def run_plan(self, plan: RunPlan) -> None:
        sys.stdout.write(dump(plan.as_document()))

    def pipeline_plan(self, pipeline: str, plans: Mapping[str, RunPlan]) -> None:
        layers = {key: plan.as_document() for key, plan in plans.items()}
        sys.stdout.write(dump(PipelinePlanDoc(pipeline=pipeline, layers=layers)))

    def pipeline_status(self, pipeline: str, order: list[str], verdicts: list[PipelineVerdict]) -> None:
        from shadow_backfill.pipeline.report import pipeline_document  # Jinja2: not for every command

        sys.stdout.write(dump(pipeline_document(pipeline, order, verdicts)))

    def pipeline_history(self, records: Sequence[PipelineRecord]) -> None:
        sys.stdout.write(dump(PipelineHistoryDoc.model_validate([r.as_dict() for r in records])))

    def suggestion(self, doc: SuggestionDoc) -> None:
        sys.stdout.write(dump(doc))

    def metric_history(self, doc: MetricHistoryDoc) -> None:
        sys.stdout.write(dump(doc))

    def late_arrivals(self, doc: LateArrivalHistoryDoc) -> None:
        sys.stdout.write(dump(doc))

    def pipeline_late_arrivals(self, doc: PipelineLateArrivalsDoc) -> None:
        sys.stdout.write(dump(doc))


def view(as_json: bool) -> View:
    """The view a command's `--json` option picks."""
    return JsonView() if as_json else TextView()


__all__ = ["JsonView", "TextView", "View", "view"]
