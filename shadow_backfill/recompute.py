"""Recompute partitions into the shadow table: resumable, bounded, idempotent.

Each chunk of partitions is one unit of work: call the transform, check its output (schema,
and that every row belongs to a requested partition, in one aggregate job), then replace
exactly those partitions of the shadow table in one commit. The state store records every
transition, so a rerun skips what is written and redoes anything else.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType

from shadow_backfill import testpoints
from shadow_backfill.chunking import choose_chunk_size
from shadow_backfill.errors import ConfigError, RefusedError, TableNotFoundError, TransformError, first_line
from shadow_backfill.ledger import CODE_FINGERPRINT, KIND
from shadow_backfill.preflight import check_live_table
from shadow_backfill.progress import NO_PROGRESS, Progress, Step
from shadow_backfill.results import RunResult
from shadow_backfill.state import lock_owner
from shadow_backfill.table import TableContext
from shadow_backfill.timebox import TimeBox
from shadow_backfill.transform import Transform, align_to_schema, count_rows_by_partition
from shadow_backfill.vocabulary import PartitionStatus, RunStatus

MAX_COMMIT_CONFLICTS = 20
# A chunk's outcome when a stop kept it from starting (its partitions stay as they were).
STOPPED = "stopped"

ProgressCallback = Callable[[Sequence[str], str], None]


@dataclass
class RunOptions:
    """What to recompute and how; None means 'use the config's default'."""

    start: str | None = None
    end: str | None = None
    partitions: list[str] | None = None
    max_parallel: int | None = None
    chunk_size: int | None = None
    retries: int | None = None
    force: bool = False
    allow_code_change: bool = False
    timebox: TimeBox | None = None
    """Once it says stop, no further chunk starts (chunks in flight finish)."""
    progress: Progress = NO_PROGRESS
    """Who follows the run: a `recompute` step over the partitions it writes."""


def counted(step: Step, on_progress: ProgressCallback | None) -> ProgressCallback:
    """The run's callback that also advances its `recompute` step by each chunk's partitions."""

    def advance(chunk: Sequence[str], outcome: str) -> None:
        step.advance(len(chunk))
        if on_progress is not None:
            on_progress(chunk, outcome)

    return advance


def chunked(keys: Sequence[str], size: int) -> list[list[str]]:
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


class Recompute:
    """One recompute run over a set of partitions."""

    def __init__(self, table: TableContext, transform: Transform) -> None:
        self.table = table
        self.transform = transform
        self.shadow = table.shadow_table
        self._lock = threading.Lock()
        self._create_lock = threading.Lock()
        self._shadow_ready = False
        self._in_flight = 0
        self._timebox: TimeBox | None = None

    def plan(self, options: RunOptions) -> tuple[list[str], list[str]]:
        """(requested, to_do): refuses a code change, or a live table whose partition column
        cannot hold the configured partitions, before anything runs."""
        requested = self.table.scheme.select(
            start=options.start,
            end=options.end,
            partitions=options.partitions,
            default=self.table.config.partition.values,
        )
        self._check_live()
        records = self.table.store.records(self.shadow)
        fp = self.transform.fingerprint
        other = sorted(
            k
            for k, r in records.items()
            if r.status == PartitionStatus.WRITTEN and r.code_fingerprint not in (None, fp)
        )
        if other and not options.allow_code_change:
            old = records[other[0]].code_fingerprint
            raise RefusedError(
                f"the transform changed since {len(other)} partition(s) of {self.shadow} were written "
                f"(code fingerprint {old} -> {fp}, e.g. {other[0]}): write a new version (set 'version') "
                "or pass --allow-code-change to rewrite them with the new code"
            )
        to_do = [
            k
            for k in requested
            if options.force
            or k not in records
            or records[k].status != PartitionStatus.WRITTEN
            or records[k].code_fingerprint != fp
        ]
        return requested, to_do

    def _check_live(self) -> None:
        check_live_table(
            self.table.config,
            self.table.fmt,
            self.table.scheme,
            self.table.store.carried_columns(self.table.config.live_table),
        )

    def run(self, options: RunOptions, on_progress: ProgressCallback | None = None) -> RunResult:
        cfg = self.table.config
        if not self.table.fmt.exists(cfg.live_table):
            raise TableNotFoundError(f"live table {cfg.live_table!r} does not exist ({cfg.format})")
        self.table.fmt.check_distinct(cfg.live_table, self.shadow)
        requested, to_do = self.plan(options)
        self._timebox = options.timebox
        max_parallel = options.max_parallel or cfg.run.max_parallel
        retries = cfg.run.retries if options.retries is None else options.retries
        run_id = f"run-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        result = RunResult(
            run_id=run_id,
            requested=requested,
            skipped=[k for k in requested if k not in to_do],
            code_fingerprint=self.transform.fingerprint,
        )
        if not to_do:
            result.shadow_version = (
                self.table.fmt.current_version(self.shadow) if self.table.fmt.exists(self.shadow) else None
            )
            options.progress.step("recompute", 0).done()
            return result

        owner = lock_owner(run_id)
        ttl = cfg.run.lease_ttl_s
        _, others = self.table.store.acquire([self._lease(k) for k in to_do], owner, ttl)
        if others:
            # Another live run is recomputing these right now: leave them to it.
            result.held = {k: others[self._lease(k)] for k in to_do if self._lease(k) in others}
            to_do = [k for k in to_do if k not in result.held]
        if not options.force:
            # A run that finished between our plan and our leases has written some already.
            fresh = self.table.store.records(self.shadow, to_do)
            done = {
                k
                for k, r in fresh.items()
                if r.status == PartitionStatus.WRITTEN and r.code_fingerprint == self.transform.fingerprint
            }
            result.skipped += [k for k in to_do if k in done]
            to_do = [k for k in to_do if k not in done]
        step = options.progress.step("recompute", len(to_do))
        try:
            ran = self._run_leased(
                options, result, to_do, max_parallel, retries, counted(step, on_progress), owner, ttl
            )
            step.done()
            return ran
        finally:
            self.table.store.release(owner)

    def _lease(self, key: str) -> str:
        return f"recompute:{self.shadow}:{key}"

    def _run_leased(
        self,
        options: RunOptions,
        result: RunResult,
        to_do: list[str],
        max_parallel: int,
        retries: int,
        on_progress: ProgressCallback | None,
        owner: str,
        ttl: float,
    ) -> RunResult:
        run_id = result.run_id
        if not to_do:
            return result
        size = self.chunk_size(options, len(to_do), max_parallel)
        result.chunks = chunked(to_do, size)
        args = {"partitions": len(to_do), "chunk_size": size, "max_parallel": max_parallel, "force": options.force}
        try:
            shadow_schema = self._shadow_schema(result.chunks[0])
        except TransformError as exc:
            # The transform broke before any write: record it against the chunk it was called for.
            self._start(run_id, args, result.chunks[0])
            self.table.store.mark_running(self.shadow, result.chunks[0], run_id, self.transform.fingerprint)
            self.table.store.mark_failed(self.shadow, result.chunks[0], first_line(exc), run_id)
            self.table.store.finish_run(run_id, RunStatus.FAILED)
            raise
        self._start(run_id, args, to_do)
        status = RunStatus.FAILED
        stop = threading.Event()
        heartbeat = threading.Thread(target=self._heartbeat, args=(owner, ttl, stop), daemon=True)
        heartbeat.start()
        try:
            with ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="recompute") as pool:
                futures = {
                    pool.submit(self._run_chunk, chunk, shadow_schema, run_id, retries, result): tuple(chunk)
                    for chunk in result.chunks
                }
                try:
                    for fut in as_completed(futures):
                        chunk = list(futures[fut])
                        outcome = fut.result()
                        if on_progress is not None:
                            on_progress(chunk, outcome)
                except BaseException:
                    # Interrupted: start no further chunk; those in flight finish or fail on their own.
                    for f in futures:
                        f.cancel()
                    raise
            status = RunStatus.FAILED if not result.ok else RunStatus.STOPPED if result.stopped else RunStatus.SUCCEEDED
        finally:
            stop.set()
            self.table.store.finish_run(run_id, status)
        result.shadow_version = (
            self.table.fmt.current_version(self.shadow) if self.table.fmt.exists(self.shadow) else None
        )
        return result

    def _start(self, run_id: str, args: dict[str, Any], keys: Sequence[str]) -> None:
        cfg = self.table.config
        self.table.store.start_run(
            run_id,
            shadow_table=self.shadow,
            live_table=cfg.live_table,
            config_hash=cfg.config_hash,
            code_fingerprint=self.transform.fingerprint,
            args=args,
        )
        self.table.store.mark_pending(self.shadow, keys, run_id)

    def _heartbeat(self, owner: str, ttl: float, stop: threading.Event) -> None:
        while not stop.wait(ttl / 3):
            # A missed renewal only shortens the lease; the next one may succeed.
            with contextlib.suppress(Exception):
                self.table.store.renew(owner, ttl)

    def chunk_size(
        self, options: RunOptions, n: int, max_parallel: int, live_counts: Mapping[str, int] | None = None
    ) -> int:
        """Partitions per Spark job for `n` partitions: the option, else the config, else auto
        (from live's row counts: `live_counts` when the caller has read them already)."""
        size = options.chunk_size or (
            self.table.config.run.chunk_size if self.table.config.run.chunk_size != "auto" else None
        )
        return size if size is not None else self._auto_chunk_size(n, max_parallel, live_counts)

    def _auto_chunk_size(self, n: int, max_parallel: int, live_counts: Mapping[str, int] | None) -> int:
        rows_per_partition = None
        try:
            counts = (
                live_counts
                if live_counts is not None
                else self.table.fmt.partition_row_counts(self.table.config.live_table)
            )
            if counts:
                rows_per_partition = sum(counts.values()) / len(counts)
        except Exception:
            rows_per_partition = None
        return choose_chunk_size(
            n,
            max_parallel,
            rows_per_partition=rows_per_partition,
            max_chunk=self.table.config.run.max_chunk_size,
            target_rows=self.table.config.run.target_rows_per_chunk,
        )

    def _shadow_schema(self, first_chunk: Sequence[str]) -> StructType:
        """The shadow table's schema: its own if it exists, else the transform's output schema
        (a new version may add or retype columns; validation reports it as a schema diff).
        Analysing the plan runs no Spark job, and nothing is created until a chunk passes its checks.
        """
        if self.table.fmt.exists(self.shadow):
            return self.table.fmt.schema(self.shadow)
        schema = self.transform(self.table.spark, list(first_chunk)).schema
        part = self.table.scheme.column
        if part not in schema.fieldNames():
            raise TransformError(f"transform {self.transform.name} output has no partition column {part!r}")
        return schema

    def _create_shadow_once(self, schema: StructType) -> None:
        """Create the shadow partitioned like live, right before the first write that passed its checks."""
        with self._create_lock:
            if self._shadow_ready or self.table.fmt.exists(self.shadow):
                self._shadow_ready = True
                return
            try:
                self.table.fmt.create_like(self.table.config.live_table, self.shadow, schema)
            except ConfigError:
                raise  # misplaced (inside live): refused, never "created by someone else"
            except Exception:
                if not self.table.fmt.exists(self.shadow):  # a concurrent run may have created it first
                    raise
            self._shadow_ready = True

    def _run_chunk(
        self, keys: list[str], shadow_schema: StructType, run_id: str, retries: int, result: RunResult
    ) -> str:
        fp = self.transform.fingerprint
        box = self._timebox
        if box is not None and (why := box.reason) is not None:
            with self._lock:
                result.stopped = why
                result.not_started.extend(keys)
            return STOPPED
        self.table.store.mark_running(self.shadow, keys, run_id, fp)
        with self._lock:
            self._in_flight += 1
            result.peak_parallel = max(result.peak_parallel, self._in_flight)
        try:
            attempt = conflicts = 0
            while True:
                started = time.monotonic()
                try:
                    written, version = self._write_chunk(keys, shadow_schema)
                except KeyboardInterrupt:
                    self.table.store.mark_failed(self.shadow, keys, "interrupted", run_id)
                    raise
                except ConfigError as exc:  # a misplaced shadow: no retry, stop the whole run
                    self.table.store.mark_failed(self.shadow, keys, first_line(exc), run_id)
                    raise
                except Exception as exc:
                    if self.table.fmt.is_commit_conflict(exc) and conflicts < MAX_COMMIT_CONFLICTS:
                        # Another chunk committed first: nothing of ours landed, so try again
                        # without spending the user's retry budget.
                        conflicts += 1
                        time.sleep(random.uniform(0.05, 0.2) * conflicts)
                        continue
                    retryable = not isinstance(exc, TransformError) or exc.retryable
                    if retryable and attempt < retries:
                        attempt += 1
                        time.sleep(self.table.config.run.retry_backoff_s * (2 ** (attempt - 1)))
                        continue
                    message, whole = first_line(exc), str(exc).strip()
                    self.table.store.mark_failed(self.shadow, keys, message, run_id)
                    with self._lock:
                        for k in keys:
                            result.failed[k] = message
                            if whole != message:
                                result.details[k] = whole
                    return PartitionStatus.FAILED
                testpoints.reached(testpoints.RECOMPUTE_AFTER_COMMIT)
                self.table.store.mark_written(self.shadow, written, version, run_id, fp, time.monotonic() - started)
                with self._lock:
                    result.written.update(written)
                return PartitionStatus.WRITTEN
        finally:
            with self._lock:
                self._in_flight -= 1

    def _write_chunk(self, keys: list[str], shadow_schema: StructType) -> tuple[dict[str, int], int]:
        what = f"transform {self.transform.name}"
        df = align_to_schema(self.transform(self.table.spark, keys), shadow_schema, what)
        counts = count_rows_by_partition(df, self.table.scheme, keys, what)
        self._create_shadow_once(shadow_schema)
        version = self.table.fmt.overwrite_partitions(
            self.shadow,
            df,
            keys,
            {KIND: "recompute", CODE_FINGERPRINT: self.transform.fingerprint},
        )
        return counts, version
