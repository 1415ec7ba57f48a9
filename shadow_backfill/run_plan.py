"""The plan of a recompute, made before any work (`run --dry-run`, `backfill --dry-run`).

Before a backfill over a month of partitions starts, its operator wants to see what it will do:
which partitions it recomputes and which it skips as already written (and why), how they are
split into Spark jobs, and how big they are. Everything here comes from the state store and the
tables' metadata: no transform runs, no Spark job reads data, nothing is written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from shadow_backfill.documents.cli import PlannedPartitionDoc, RunPlanDoc, WindowDoc
from shadow_backfill.vocabulary import PartitionStatus

if TYPE_CHECKING:
    from shadow_backfill.recompute import Recompute, RunOptions
    from shadow_backfill.state import PartitionRecord
    from shadow_backfill.windows import Window


@dataclass(frozen=True)
class PlannedPartition:
    """One requested partition: recomputed or skipped, why, in which chunk, and its sizes."""

    partition: str
    action: str
    """`recompute` or `skip`."""
    reason: str
    chunk: int | None
    """The index of its chunk in `RunPlan.chunks` (None when skipped)."""
    live_rows: int | None
    """Rows of the live partition from the live table's metadata (None: not known there)."""
    shadow_rows: int | None
    """Rows of the shadow partition from the shadow table's metadata (None: not written)."""


@dataclass(frozen=True)
class RunPlan:
    """What a `run` would do, as the CLI prints it and `--json` writes it."""

    live_table: str
    shadow_table: str
    max_parallel: int
    chunk_size: int
    partitions: list[PlannedPartition]
    chunks: list[list[str]]
    window: Window | None = None

    @property
    def to_recompute(self) -> list[str]:
        return [p.partition for p in self.partitions if p.action == "recompute"]

    @property
    def to_skip(self) -> list[str]:
        return [p.partition for p in self.partitions if p.action == "skip"]

    def as_document(self) -> RunPlanDoc:
        """The `--json` document: one object, its fields part of the CLI's contract
        (docs/run-plan.schema.json)."""
        return RunPlanDoc(
            live_table=self.live_table,
            shadow_table=self.shadow_table,
            window=_window_doc(self.window),
            recompute=self.to_recompute,
            skip=self.to_skip,
            max_parallel=self.max_parallel,
            chunk_size=self.chunk_size,
            chunks=self.chunks,
            partitions=[PlannedPartitionDoc(**vars(p)) for p in self.partitions],
        )

    def as_dict(self) -> dict[str, Any]:
        """The `--json` document as plain values, for a caller of the Python API."""
        return self.as_document().model_dump(mode="json")


def _window_doc(window: Window | None) -> WindowDoc | None:
    if window is None:
        return None
    return WindowDoc(
        now=window.now.isoformat(),
        lag_seconds=int(window.lag.total_seconds()),
        last=window.last,
        time_zone=window.zone,
        complete_before=window.cutoff.astimezone(dt.timezone.utc).isoformat(),
    )


def plan_run(recompute: Recompute, options: RunOptions, window: Window | None = None) -> RunPlan:
    """The plan `recompute.run(options)` would follow, from the state store and metadata only."""
    requested, to_do = recompute.plan(options)
    max_parallel = options.max_parallel or recompute.table.config.run.max_parallel
    live_rows = recompute.table.fmt.partition_row_counts(recompute.table.config.live_table)
    size = recompute.chunk_size(options, len(to_do), max_parallel, live_rows)
    chunks = [to_do[i : i + size] for i in range(0, len(to_do), size)]
    chunk_of = {k: i for i, chunk in enumerate(chunks) for k in chunk}
    shadow = recompute.shadow
    shadow_rows = recompute.table.fmt.partition_row_counts(shadow) if recompute.table.fmt.exists(shadow) else {}
    records = recompute.table.store.records(shadow, requested)
    fingerprint = recompute.transform.fingerprint
    planned = [
        PlannedPartition(
            partition=k,
            action="recompute" if k in chunk_of else "skip",
            reason=_reason(records.get(k), fingerprint, options.force),
            chunk=chunk_of.get(k),
            live_rows=live_rows.get(k),
            shadow_rows=shadow_rows.get(k),
        )
        for k in requested
    ]
    return RunPlan(recompute.table.config.live_table, shadow, max_parallel, size, planned, chunks, window)


def joined_plans(parts: Sequence[RunPlan], max_parallel: int, window: Window | None = None) -> RunPlan:
    """Plans of consecutive slices of one table's range as one plan (a pipeline plans each of
    its chunks as `run` will run it): chunks renumbered in order, `max_parallel` the whole
    command's."""
    partitions: list[PlannedPartition] = []
    chunks: list[list[str]] = []
    for part in parts:
        offset = len(chunks)
        partitions += [replace(p, chunk=None if p.chunk is None else p.chunk + offset) for p in part.partitions]
        chunks += part.chunks
    first = parts[0]
    size = max((p.chunk_size for p in parts), default=first.chunk_size)
    return RunPlan(first.live_table, first.shadow_table, max_parallel, size, partitions, chunks, window)


def _reason(record: PartitionRecord | None, fingerprint: str, force: bool) -> str:
    """Why a partition is recomputed or skipped, in the words of `status`."""
    if record is None:
        return "not written yet"
    if record.status != PartitionStatus.WRITTEN:
        return f"{record.status.value} in an earlier run"
    if record.code_fingerprint != fingerprint:
        return "written by other code (--allow-code-change)"
    return "already written; --force rewrites it" if force else "already written"
