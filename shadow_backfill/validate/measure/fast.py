"""The fast measurer: every shadow partition against the same live partition, in two Spark jobs.

However many partitions are validated, the work is two jobs over the union of shadow and live:
the profile (`profile_job.py`: counts, nulls, moments, live deciles, compiled expectations) and
the facts (`facts_job.py`, with `key_facts.py` for the key grouping: key diff, duplicates,
histograms, categories, uniqueness, samples). They count; the judge computes the statistics on
what they bring back (`distributions.py`, `stats.py`). The facts job runs a second small job
only where a key repeats in a partition or a non-numeric value is sampled.

Why two and not one job per metric: on small partitions every Spark job costs a scan, a
shuffle and scheduling, which dwarfs the arithmetic; the key diff no longer needs a join
(a group by key of the union does the same work with one shuffle).

Only aggregates reach the driver: a few rows per partition and column, never data rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegralType

from shadow_backfill.validate.measure.facts_job import FactsSpec, run_facts
from shadow_backfill.validate.measure.plan import plan_columns, tag
from shadow_backfill.validate.measure.profile_job import run_profile
from shadow_backfill.validate.measurements import ColumnPlan, PartitionProfile

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
        tolerance: tuple[float, float] = (0.0, 0.0),
        sample_rows: int = 0,
        expected: Sequence[str] = (),
        decile_every: int = 1,
    ) -> None:
        self.plan = plan_columns(shadow.schema, live.schema, partition, keys)
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
        # the live deciles from every m-th row (profile_job); chosen by key, so only with keys
        self.decile_every = decile_every if keys else 1
        self.jobs = 0  # Spark jobs run, for benchmarks and tests

    def run(self, partition_texts: Sequence[str]) -> dict[str, PartitionProfile]:
        profiles = {t: PartitionProfile(t) for t in partition_texts}
        edges = run_profile(self.union, self.plan, self.extra_aggs, profiles, self.decile_every, self.facts.keys)
        self.jobs += 1
        self.jobs += run_facts(self.union, self.facts, edges, profiles, self.decile_every)
        return profiles
