"""The validation gate: every shadow partition against its suites and the same live partition.

Both tables are read *as of* the versions current when validation starts, and those versions
are stored with each verdict, so a later promotion can tell whether anything changed since.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shadow_backfill.errors import ConfigError, TableNotFoundError, UsageError
from shadow_backfill.progress import NO_PROGRESS, Progress
from shadow_backfill.results import ValidationResult
from shadow_backfill.schema import check_declared_changes
from shadow_backfill.state import PartitionRecord, VerdictRecord
from shadow_backfill.table import TableContext
from shadow_backfill.validate.consistency import judge_range
from shadow_backfill.validate.downstream import LoadedQuery, judge_query, load_queries
from shadow_backfill.validate.expectations import (
    evaluate_fast,
    judge_compiled,
    judge_unique,
    outcome,
    split_supported,
)
from shadow_backfill.validate.judge import Check, Judge, PartitionVerdict
from shadow_backfill.validate.measure.downstream import measure_queries
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.profile_job import DECILE_SAMPLE, decile_every
from shadow_backfill.validate.suites import Suite, check_columns, load_suites
from shadow_backfill.vocabulary import CheckStatus, PartitionStatus, worst
from shadow_backfill.windows import current_time, partition_age, time_zone


@dataclass
class Validator:
    """Judges shadow partitions against their suites and live, and stores the verdicts."""

    table: TableContext

    def select(
        self, start: str | None = None, end: str | None = None, partitions: list[str] | None = None
    ) -> list[str]:
        """Requested partitions, or every partition the state store knows for the shadow."""
        if start or end or partitions is not None:
            return self.table.scheme.select(start=start, end=end, partitions=partitions)
        known = self.table.store.records(self.table.config.shadow)
        if not known:
            raise UsageError(f"nothing to validate: no partition of {self.table.config.shadow} has been recomputed")
        return self.table.scheme.sort(known)

    def run(
        self, keys: Sequence[str], suites: list[Suite] | None = None, progress: Progress = NO_PROGRESS
    ) -> ValidationResult:
        """Judge `keys`; `progress` follows a `validate` step. The partitions are judged together
        (grouped jobs, not one per partition), so the step has no count while it runs, rather
        than a bar standing still at 0 of N: the count comes with the verdicts."""
        cfg = self.table.config
        step = progress.step("validate")
        started = time.monotonic()
        observed = current_time(time_zone(cfg.time_zone))  # when the data was read: late arrivals
        suites = load_suites(cfg) if suites is None else suites
        queries = load_queries(cfg)
        for table in (cfg.live_table, cfg.shadow):
            if not self.table.fmt.exists(table):
                raise TableNotFoundError(f"table {table!r} does not exist ({cfg.format})")
        shadow_version = self.table.fmt.current_version(cfg.shadow)
        live_version = self.table.fmt.current_version(cfg.live_table)
        shadow_all = self.table.fmt.read(cfg.shadow, shadow_version)
        check_columns(suites, shadow_all.schema.fieldNames())
        live_schema = self.table.fmt.read(cfg.live_table, live_version).schema
        check_declared_changes(cfg, live_schema, self.table.store.carried_columns(cfg.live_table))
        self._check_keys({cfg.shadow: shadow_all.schema.fieldNames(), cfg.live_table: live_schema.fieldNames()})

        records = self.table.store.records(cfg.shadow, keys)
        written = [k for k in keys if k in records and records[k].status == PartitionStatus.WRITTEN]
        result = ValidationResult(uuid.uuid4().hex[:12], shadow_version, live_version)
        for k in keys:
            if k not in written:
                status = records[k].status if k in records else "never recomputed"
                result.verdicts.append(
                    PartitionVerdict(
                        k,
                        CheckStatus.FAIL,
                        [
                            Check(
                                "recompute",
                                None,
                                CheckStatus.FAIL,
                                status,
                                "status written",
                                f"partition is not written ({status})",
                            )
                        ],
                    )
                )

        if written:
            shadow = self.table.fmt.read_partitions(cfg.shadow, written, shadow_version)
            live = self.table.fmt.read_partitions(cfg.live_table, written, live_version)
            rows = [records[k].rows or 0 for k in written]
            result.verdicts += self._judge(written, shadow, live, suites, rows)
            if queries:
                self._downstream(queries, result.verdicts, shadow, live)
            judge_range(result.verdicts, cfg.validation, self._earlier())
        step.advance(len(result.verdicts))
        order = {k: i for i, k in enumerate(self.table.scheme.sort(keys))}
        result.verdicts.sort(key=lambda v: order[v.partition])
        result.seconds = time.monotonic() - started

        self.table.store.save_verdicts(
            cfg.shadow, self._records(result, records, observed), keep_days=cfg.state.metric_history_days
        )
        step.done()
        return result

    def _records(
        self, result: ValidationResult, written: Mapping[str, PartitionRecord], observed: dt.datetime
    ) -> list[VerdictRecord]:
        """The verdicts as the store keeps them: bound to the versions judged, and placed by
        when the data was read and each partition's age then (the late-arrival view's)."""
        cfg, scheme = self.table.config, self.table.scheme
        return [
            VerdictRecord(
                v.partition,
                v.verdict,
                v.checks,
                v.metrics,
                shadow_version=result.shadow_version,
                partition_version=written[v.partition].shadow_version if v.partition in written else None,
                live_version=result.live_version,
                validation_id=result.validation_id,
                observed_at=observed,
                age=partition_age(scheme, cfg.time_zone, v.partition, observed),
            )
            for v in result.verdicts
        ]

    def _downstream(self, queries: list[LoadedQuery], verdicts: list[PartitionVerdict], shadow: Any, live: Any) -> None:
        """The consumers' queries on each written partition, on the versions judged: each adds
        one check per query to the partition's verdict."""
        judged = {v.partition: v for v in verdicts if v.metrics.shadow_rows}
        values = {k: self.table.scheme.value(k) for k in judged}
        runs = measure_queries(self.table.spark, queries, shadow, live, values, self._one_partition)
        spec = self.table.config.validation
        for key, results in runs.items():
            v = judged[key]
            has_live = bool(v.metrics.live_rows)
            v.checks += [judge_query(spec, r.query, r.judged, r.live if has_live else None) for r in results]
            v.verdict = worst(c.status for c in v.checks)

    def _earlier(self) -> list[VerdictRecord]:
        """The shadow's stored verdicts, the range a `consistent` change is judged over beside
        the partitions validated now (read only when a column is judged so)."""
        cfg = self.table.config
        if not any(c.consistent for c in cfg.validation.expected_changes.values()):
            return []
        return list(self.table.store.verdicts(cfg.shadow).values())

    def _one_partition(self, table: Any, key: str) -> Any:
        return table.filter(self.table.scheme.predicate([key]))

    def _check_keys(self, columns_by_table: dict[str, list[str]]) -> None:
        """A key column missing from either table would only surface as an analysis error deep
        inside the facts job; refuse it here, from the schemas alone, before any job runs."""
        case_sensitive = str(self.table.spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
        for table, columns in columns_by_table.items():
            have = set(columns) if case_sensitive else {c.lower() for c in columns}
            for key in self.table.config.keys:
                if (key if case_sensitive else key.lower()) not in have:
                    raise ConfigError(
                        f"keys: column {key!r} does not exist in table {table!r} (columns: {sorted(columns)})"
                    )

    def measurer(
        self,
        shadow: Any,
        live: Any,
        keys: list[str],
        shadow_rows: Sequence[int],
        *,
        extra_aggs: Mapping[str, Any] | None = None,
        unique_columns: Sequence[str] = (),
        task_share: int | None = None,
    ) -> FastMeasurer:
        """The measuring jobs of partitions `keys` (shadow's rows as recompute counted them) as
        the table's config sets them up: one place, so that a benchmark measures what a
        validation runs. `task_share` overrides the key grouping's sizing
        (`measure/key_partitions.py`)."""
        validation = self.table.config.validation
        every = self._decile_every(keys, list(shadow_rows))
        return FastMeasurer(
            shadow,
            live,
            partition=self.table.scheme.column,
            partition_value=self.table.scheme.key_value(),
            keys=self.table.config.keys,
            max_categories=validation.max_categories,
            extra_aggs=extra_aggs,
            unique_columns=unique_columns,
            tolerance=validation.tolerance,
            sample_rows=validation.sample_rows,
            expected=list(validation.contract),
            decile_every={self.table.scheme.column_text(k): m for k, m in every.items()},
            declared_added=validation.expected_schema_changes.added,
            task_share=task_share,
        )

    def _decile_every(self, keys: list[str], shadow_rows: list[int]) -> dict[str, int]:
        """Per partition key, how sparsely its live deciles may be sampled
        (`profile_job.decile_every`), from live's row counts in the table's metadata (no scan),
        or shadow's where that has none. The shadow's rows, which recompute keeps, rule sampling
        out for free where every partition is below `DECILE_SAMPLE` (live would need 2.5 times
        shadow's rows to pass `live_grid.EXACT_BELOW` unsampled), so only larger validations read
        that metadata (a Spark job on some formats). Without keys a row has no identity to be
        chosen by (identical rows would be taken or left together): every row."""
        shadow = dict(zip(keys, shadow_rows, strict=True))
        if not self.table.config.keys or all(0 < n < DECILE_SAMPLE for n in shadow_rows):
            return {}
        try:
            counts = self.table.fmt.partition_row_counts(self.table.config.live_table)
        except Exception:  # metadata a format cannot read: shadow's counts stand for live's
            counts = {}
        return decile_every({k: counts.get(k) or shadow[k] for k in keys})

    def _check_contract(self, compared: list[str]) -> None:
        """An expected change must name a column both tables have with the same type; a typo
        would otherwise hold the intended column to equality and fail every partition."""
        unknown = [c for c in self.table.config.validation.contract if c not in compared]
        if unknown:
            raise ConfigError(
                f"validation.expected_changes: {unknown} is not a column of both tables with the same type "
                f"(compared columns: {compared})"
            )

    def _judge(
        self, keys: list[str], shadow: Any, live: Any, suites: list[Suite], shadow_rows: list[int]
    ) -> list[PartitionVerdict]:
        expectations = [e for s in suites for e in s.expectations]
        compiled, unique, _ = split_supported(expectations)
        # Compiled expectations ride along in the profile job and uniqueness in the facts job:
        # only expectations GX alone can evaluate cost work of their own.
        extra = {name: col for c in compiled for name, col in c.aggs.items()}
        measurer = self.measurer(
            shadow, live, keys, shadow_rows, extra_aggs=extra, unique_columns=[e.kwargs["column"] for e in unique]
        )
        self._check_contract(measurer.plan.compared)
        text_of = {k: self.table.scheme.column_text(k) for k in keys}
        texts = list(text_of.values())
        profiles = measurer.run(texts)
        done = {c.expectation.id for c in compiled} | {e.id for e in unique}
        others = [e for e in expectations if e.id not in done]
        other_outcomes = evaluate_fast(shadow, self.table.scheme.key_column(), others, texts)

        judge = Judge(self.table.config.validation, measurer.plan)
        out = []
        for k in keys:
            prof = profiles[text_of[k]]
            prof.key = k
            row = prof.shadow_aggs if prof.shadow_rows else None
            outcomes = [judge_compiled(c, row) for c in compiled]
            outcomes += [outcome(e, judge_unique(e, prof.unique[e.kwargs["column"]])) for e in unique]
            out.append(judge.judge(prof, outcomes + other_outcomes[text_of[k]]))
        return out
