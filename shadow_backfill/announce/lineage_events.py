"""OpenLineage's event objects for a command's run (imported only when lineage is on: see
`lineage`). Which tables are a command's inputs and outputs:

| command  | inputs                               | outputs                       |
|----------|--------------------------------------|-------------------------------|
| run      | -                                    | the shadow                    |
| validate | the shadow (with its checks), live   | -                             |
| promote  | the shadow                           | live, if a partition went     |
| rollback | -                                    | live                          |
| backfill | the shadow (with its checks), live   | the shadow; live, if promoted |
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any, cast

from openlineage.client.event_v2 import InputDataset, OutputDataset, Run, RunEvent, RunState
from openlineage.client.event_v2 import Job as OLJob
from openlineage.client.facet_v2 import (
    DatasetFacet,
    RunFacet,
    data_quality_assertions_dataset,
    data_quality_metrics_input_dataset,
    dataset_version_dataset,
    error_message_run,
    job_type_job,
    parent_run,
    processing_engine_run,
    storage_dataset,
    symlinks_dataset,
)

from shadow_backfill import __version__
from shadow_backfill.announce.facts import TableFacts
from shadow_backfill.announce.runs import PRODUCER, Job, RunPlan
from shadow_backfill.announce.told import Told
from shadow_backfill.documents.lineage import FACET_KEY, FACET_SCHEMA_URL, ShadowBackfillFacetDoc
from shadow_backfill.formats.locations import LineageDataset
from shadow_backfill.outcome import EXIT_HELD, EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED
from shadow_backfill.vocabulary import CheckStatus

_STATES = {
    EXIT_OK: RunState.COMPLETE,
    EXIT_HELD: RunState.COMPLETE,
    EXIT_STOPPED: RunState.ABORT,
    EXIT_INTERRUPTED: RunState.ABORT,
}
_READS_CHECKS = ("validate", "backfill")


def state_of(code: int) -> RunState:
    """0 and 3 (held for approval: the command did its work) complete; 4 and 130 (stopped)
    abort; 1, 2 and anything else fail."""
    return _STATES.get(code, RunState.FAIL)


def _time(at: dt.datetime) -> str:
    return at.astimezone(dt.timezone.utc).isoformat()


def _parent(job: Job, root: Job | None) -> parent_run.ParentRunFacet:
    top = root or job
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=job.run_id),
        job=parent_run.Job(namespace=job.namespace, name=job.name),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=top.run_id), job=parent_run.RootJob(namespace=top.namespace, name=top.name)
        ),
        producer=PRODUCER,
    )


def _run(run_id: str, parent: Job | None, root: Job | None, error: str | None = None) -> Run:
    facets: dict[str, RunFacet] = {
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=__version__, name="shadow-backfill", openlineageAdapterVersion=__version__, producer=PRODUCER
        )
    }
    if parent is not None:
        facets["parent"] = _parent(parent, root)
    if error is not None:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error, programmingLanguage="python", producer=PRODUCER
        )
    return Run(runId=run_id, facets=facets)


def _job(job: Job, layer: bool) -> OLJob:
    kind = job_type_job.JobTypeJobFacet(
        processingType="BATCH",
        integration="SHADOW_BACKFILL",
        jobType="TABLE" if layer else "COMMAND",
        producer=PRODUCER,
    )
    return OLJob(namespace=job.namespace, name=job.name, facets={"jobType": kind})


def _event(state: RunState, at: dt.datetime, run: Run, job: OLJob, inputs: list[Any], outputs: list[Any]) -> RunEvent:
    return RunEvent(
        eventType=state, eventTime=_time(at), run=run, job=job, inputs=inputs, outputs=outputs, producer=PRODUCER
    )


def start_event(plan: RunPlan) -> RunEvent:
    """The command's START: its job and run (its tables are named when it ends)."""
    return _event(RunState.START, plan.started, _run(plan.run_id, plan.parent, None), _job(plan.job, False), [], [])


def dataset_facets(ds: LineageDataset) -> dict[str, DatasetFacet]:
    """Where a table lies and what it is, as the Spark integration describes it."""
    facets: dict[str, DatasetFacet] = {
        "storage": storage_dataset.StorageDatasetFacet(
            storageLayer=ds.storage_layer, fileFormat=ds.file_format, producer=PRODUCER
        )
    }
    if ds.symlink is not None:
        namespace = ds.symlink_namespace or ds.namespace
        ident = symlinks_dataset.Identifier(namespace=namespace, name=ds.symlink, type="TABLE")
        facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(identifiers=[ident], producer=PRODUCER)
    if ds.version is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=ds.version, producer=PRODUCER
        )
    return facets


def assertions(table: TableFacts) -> data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet:
    """Every check of every judged partition, one assertion each (a report's checks, counted
    alike): `warn` and `fail` are unsuccessful, with severity `warn` and `error`."""
    found = []
    for v in table.verdicts:
        for c in v.checks:
            bad = c.status in (CheckStatus.FAIL, CheckStatus.WARN)
            found.append(
                data_quality_assertions_dataset.Assertion(
                    assertion=c.name,
                    success=not bad,
                    column=c.column,
                    severity=("error" if c.status == CheckStatus.FAIL else "warn") if bad else None,
                    name=f"{v.partition}: {c.id}",
                    description=c.message,
                    expected=c.threshold or None,
                    actual=None if c.observed is None else str(c.observed),
                    params={"partition": v.partition, "status": str(c.status)},
                )
            )
    return data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(assertions=found, producer=PRODUCER)


def metrics(table: TableFacts) -> data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet:
    """The judged partitions' shadow rows and each column's nulls, summed."""
    rows = sum(v.metrics.shadow_rows or 0 for v in table.verdicts)
    nulls: dict[str, int] = {}
    for v in table.verdicts:
        for name, col in v.metrics.columns.items():
            if col.shadow_count is not None and col.shadow_null_rate is not None:
                nulls[name] = nulls.get(name, 0) + round(col.shadow_null_rate * col.shadow_count)
    columns = {k: data_quality_metrics_input_dataset.ColumnMetrics(nullCount=n) for k, n in nulls.items()}
    return data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet(
        rowCount=rows, columnMetrics=columns, producer=PRODUCER
    )


def _our_facet(told: Told, table: TableFacts, partitions: Sequence[str]) -> DatasetFacet:
    """The `shadowBackfill` facet of a live table the command promoted into or restored."""
    result = told.result
    # the version the promoted partitions were judged at; else the shadow's version now
    judged_at = {str(v.shadow_version) for v in table.verdicts if v.shadow_version is not None}
    now = table.shadow.version if table.shadow is not None else None
    doc = ShadowBackfillFacetDoc(
        _producer=PRODUCER,
        command=told.command,
        promotionId=result.promotion_id if result is not None else None,
        partitions=list(partitions),
        shadowTable=table.shadow_table,
        shadowVersion=judged_at.pop() if len(judged_at) == 1 else now,
        codeFingerprint=table.code_fingerprint,
        configHash=table.config_hash,
    )
    fields = doc.model_dump(mode="json", exclude={"producer", "schemaURL"})
    facet = cast("DatasetFacet", DatasetFacet(producer=PRODUCER).with_additional_properties(**fields))
    facet._schemaURL = FACET_SCHEMA_URL  # a custom facet names its own schema
    return facet


def table_datasets(told: Told, table: TableFacts) -> tuple[list[Any], list[Any]]:
    """One table's inputs and outputs for `told`'s command (the module's table)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    promoted = told.result.promoted if told.result is not None else ()
    command = told.command
    if table.shadow is not None and command != "rollback":
        sh = table.shadow
        if command in ("validate", "backfill", "promote"):
            checks: dict[str, Any] = {}
            if command in _READS_CHECKS and table.verdicts:
                checks = {"dataQualityAssertions": assertions(table), "dataQualityMetrics": metrics(table)}
            inputs.append(InputDataset(sh.namespace, sh.name, facets=dataset_facets(sh), inputFacets=checks))
        if command in ("run", "backfill"):
            outputs.append(OutputDataset(sh.namespace, sh.name, facets=dataset_facets(sh)))
    if table.live is not None:
        lv = table.live
        if command in _READS_CHECKS:
            # the version the checks compared against (a backfill's promotion moved live since)
            compared = {str(v.live_version) for v in table.verdicts if v.live_version is not None}
            read = dataclasses.replace(lv, version=compared.pop()) if len(compared) == 1 else lv
            inputs.append(InputDataset(lv.namespace, lv.name, facets=dataset_facets(read)))
        if command in ("promote", "backfill", "rollback") and promoted:
            facets = dataset_facets(lv) | {FACET_KEY: _our_facet(told, table, promoted)}
            outputs.append(OutputDataset(lv.namespace, lv.name, facets=facets))
    return inputs, outputs


def end_events(plan: RunPlan, told: Told) -> list[RunEvent]:
    """The command's end event, and for a pipeline each layer's START and end nested under it."""
    state = state_of(told.code)
    error = told.error if state == RunState.FAIL else None
    if told.kind == "table":
        table_io: tuple[list[Any], list[Any]] = ([], [])
        if told.tables:
            table_io = table_datasets(told, told.tables[0])
        run = _run(plan.run_id, plan.parent, None, error or ("failed" if state == RunState.FAIL else None))
        return [_event(state, told.ended, run, _job(plan.job, False), *table_io)]
    events = []
    top = plan.parent or plan.job
    for table in told.tables:
        layer = plan.layer_job(table.key)
        inputs, outputs = table_datasets(told, table)
        events.append(
            _event(RunState.START, plan.started, _run(layer.run_id, plan.job, top), _job(layer, True), [], [])
        )
        run = _run(layer.run_id, plan.job, top, error)
        events.append(_event(state, told.ended, run, _job(layer, True), inputs, outputs))
    run = _run(plan.run_id, plan.parent, None, error or ("failed" if state == RunState.FAIL else None))
    events.append(_event(state, told.ended, run, _job(plan.job, False), [], []))
    return events
