"""The fast measurer: every shadow partition against the same live partition, in two Spark jobs.

However many partitions are validated, the work is two jobs over the union of shadow and live:
the profile (`profile_job.py`: counts, nulls, moments, live deciles, compiled expectations and,
with keys, the fingerprints of `fingerprints.py`) and the facts (`facts_job.py`, with
`key_facts.py` for the key grouping: key diff, duplicates, histograms, categories, uniqueness,
samples). They count; the judge computes the statistics on what they bring back
(`distributions.py`, `stats.py`). The facts job runs a second small job only where a key
repeats in a partition (for the histograms it reads off the grouping) or a non-numeric value
is sampled.

The cost follows what changed: the key grouping, the one shuffle of every row, carries only
the columns whose fingerprints disagree in some partition. A column that no key changed is
not grouped at all; its change metrics are zeros, known from the fingerprints (`_unchanged`).

Why two and not one job per metric: on small partitions every Spark job costs a scan, a
shuffle and scheduling, which dwarfs the arithmetic; the key diff no longer needs a join
(a group by key of the union does the same work with one shuffle).

Only aggregates reach the driver: a few rows per partition and column, never data rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegralType, StringType

from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.validate.measure.facts_job import FactsSpec, run_facts
from shadow_backfill.validate.measure.key_partitions import (
    MEMORY_SETTINGS,
    SMALLEST_SHARE,
    key_partitions,
    key_row_bytes,
    task_bytes,
    tasks_needed,
)
from shadow_backfill.validate.measure.plan import plan_columns, tag
from shadow_backfill.validate.measure.profile_job import run_profile
from shadow_backfill.validate.measurements import ColumnDiff, ColumnPlan, PartitionProfile

__all__ = ["ColumnPlan", "FastMeasurer", "PartitionProfile", "plan_columns"]


class FastMeasurer:
    """Runs the two grouped jobs for one (shadow, live) pair of partition sets."""

    def __init__(
        self,
        shadow: DataFrame,
        live: DataFrame,
        *,
        partition: str,
        partition_value: Column | None = None,
        keys: Sequence[str],
        max_categories: int,
        extra_aggs: Mapping[str, Column] | None = None,
        unique_columns: Sequence[str] = (),
        tolerance: Tolerance = EXACT,
        sample_rows: int = 0,
        expected: Sequence[str] = (),
        decile_every: Mapping[str, int] | None = None,
        declared_added: Sequence[str] = (),
        task_share: int | None = None,
    ) -> None:
        self.plan = plan_columns(shadow.schema, live.schema, partition, keys, declared_added)
        # Each row's partition: the column itself, or its period's name for a ranged column.
        value = F.col(partition) if partition_value is None else partition_value
        self.union = tag(shadow, "shadow", value).unionByName(tag(live, "live", value), allowMissingColumns=True)
        self.extra_aggs = dict(extra_aggs or {})
        self.facts = FactsSpec(
            keys=list(keys),
            numeric=self.plan.numeric,
            compared=self.plan.compared,
            categories=self.plan.categorical,
            unique_columns=list(dict.fromkeys(unique_columns)),
            max_categories=max_categories,
            tolerance=tolerance,
            sample_rows=sample_rows,
            # Samples of columns nobody meant to change come first in each turn.
            sample_first=[c for c in self.plan.compared if c not in set(expected)],
            integral=[c for c in self.plan.numeric if isinstance(shadow.schema[c].dataType, IntegralType)],
        )
        # per partition text, the live deciles from every m-th row (`profile_job.decile_every`);
        # chosen by key, so only with keys
        self.decile_every = dict(decile_every or {}) if keys else {}
        # per-key state a task of the key grouping is given; None: from the session's settings
        self.task_share = task_share
        # string keys take more of the grouping's memory; named as Spark resolves them, any case
        types = {f.name.lower(): f.dataType for f in shadow.schema.fields}
        self.string_keys = sum(isinstance(types.get(k.lower()), StringType) for k in keys)
        self.jobs = 0  # Spark jobs run, for benchmarks and tests
        self.grouped: list[str] = []  # the columns the last run's key grouping carried
        self.mirrored: frozenset[str] = frozenset()  # the partitions it read shadow's rows only of
        self.live_counted = False  # whether live's histograms came with the profile (`live_grid`)
        self.key_partitions: int | None = None  # the last run's key grouping's shuffle partitions, if sized

    def run(self, partition_texts: Sequence[str]) -> dict[str, PartitionProfile]:
        profiles = {t: PartitionProfile(t) for t in partition_texts}
        keys = self.facts.keys
        tolerance = self.facts.tolerance
        every = {t: self.decile_every.get(t, 1) for t in partition_texts}
        profiled = run_profile(self.union, self.plan, self.extra_aggs, profiles, every, keys, tolerance)
        self.jobs += 1
        prints = profiled.prints
        grouped = prints.changed_columns(partition_texts) if keys else list(self.facts.compared)
        self.grouped = grouped
        agreed = {t: prints.agreed(t) for t in partition_texts}
        mirrored = frozenset(t for t in partition_texts if prints.keys_agree(t) and set(grouped) <= agreed[t])
        self.mirrored = mirrored
        gridded = profiled.live_counts if keys else {}  # without keys every row is counted anyway
        sized = self._key_partitions(profiles, grouped) if keys else None
        self.key_partitions = sized
        facts = replace(
            self.facts,
            compared=grouped,
            agreed=agreed,
            mirrored=mirrored,
            live_counts=gridded,
            key_partitions=sized,
        )
        self.live_counted = bool(gridded)
        self.jobs += run_facts(self.union, facts, profiled.edges, profiles, every)
        unchanged = [c for c in self.facts.compared if c not in grouped]
        if unchanged:
            for prof in profiles.values():
                _unchanged(prof, self.facts.compared, set(self.facts.numeric))
        return profiles

    def _key_partitions(self, profiles: Mapping[str, PartitionProfile], grouped: Sequence[str]) -> int | None:
        """The key grouping's shuffle partitions, from the rows the profile counted
        (`key_partitions.py`); None where the session's number is enough."""
        row_bytes = key_row_bytes(len(self.facts.keys), self.string_keys, len(grouped))
        larger = [max(p.shadow_rows, p.live_rows) for p in profiles.values()]
        if tasks_needed(larger, row_bytes, self.task_share or SMALLEST_SHARE) == 1:
            return None  # one task of the smallest share holds them: no setting asked for
        share = self.task_share or task_bytes(_settings(self.union, MEMORY_SETTINGS))
        return key_partitions(tasks_needed(larger, row_bytes, share), lambda: _session_partitions(self.union))


def _settings(frame: DataFrame, keys: Sequence[str]) -> dict[str, str | None]:
    """The session's values of `keys` (None where unset, or where an engine keeps no such
    setting: Sail)."""
    out: dict[str, str | None] = {}
    for k in keys:
        try:
            out[k] = frame.sparkSession.conf.get(k, None)
        except Exception:  # an engine that refuses the key: as if unset
            out[k] = None
    return out


def _session_partitions(frame: DataFrame) -> int | None:
    """The session's `spark.sql.shuffle.partitions`; None where an engine keeps no such
    setting (Sail, whose memory is not Spark's either: its grouping is left as it plans it)."""
    value = _settings(frame, ["spark.sql.shuffle.partitions"])["spark.sql.shuffle.partitions"]
    return int(value) if value else None


def _unchanged(prof: PartitionProfile, compared: Sequence[str], numeric: set[str]) -> None:
    """The change metrics of the columns the key grouping left out (their fingerprints agree,
    or a side has no rows: no matched key to compare): none changed, and for a number the
    largest and mean difference are 0 where a matched key has a value on both sides (None where
    none has, and not given at all where the partition has no key, as the grouping reports
    them). In the order of `compared`, as the report lists them."""
    keys = prof.keys
    if keys is None:
        return
    by_column = {}
    for c in compared:
        found = keys.by_column.get(c)
        if found is None:
            m = prof.columns.get(c)
            valued = keys.matched > 0 and m is not None and m.shadow is not None and m.shadow.count > 0
            any_key = prof.live_rows > 0 or prof.shadow_rows > 0
            found = ColumnDiff(0, ((0.0, 0.0) if valued else (None, None)) if c in numeric and any_key else None)
        by_column[c] = found
    prof.keys = replace(keys, by_column=by_column)
