"""Recompute on Apache Iceberg tables with real classic Spark."""

from __future__ import annotations

import recompute_cases as cases
from conftest import MakeBackfill


def test_rerun_is_idempotent(make_backfill: MakeBackfill) -> None:
    cases.rerun_is_idempotent(make_backfill)


def test_resumes_after_failure(make_backfill: MakeBackfill) -> None:
    cases.resumes_after_failure(make_backfill)


def test_chunked_equals_per_partition(make_backfill: MakeBackfill) -> None:
    cases.chunked_equals_per_partition(make_backfill)


def test_out_of_partition_rows_refused(make_backfill: MakeBackfill) -> None:
    cases.out_of_partition_rows_refused(make_backfill)


def test_only_requested_partitions_are_replaced(make_backfill: MakeBackfill) -> None:
    cases.only_requested_partitions_are_replaced(make_backfill)


def test_wrong_schema_refused(make_backfill: MakeBackfill) -> None:
    cases.wrong_schema_refused(make_backfill)


def test_null_partition_value_refused(make_backfill: MakeBackfill) -> None:
    cases.null_partition_value_refused(make_backfill)


def test_versions_history_and_time_travel(make_backfill: MakeBackfill) -> None:
    cases.versions_history_and_time_travel(make_backfill)
