"""The validation gate's cost on a small table is a fixed number of Spark jobs, not a number
per partition: on 200-row partitions each job costs far more in scheduling and planning than
in reading, so a job per partition would put a 60-day quick start's validation far past its
10 s target (docs/benchmarks.md, "Small tables"). Counted with Spark's own status store (the
jobs the driver ran), which is deterministic where seconds are not. Classic Spark only: the
store is read through the JVM."""

from __future__ import annotations

from typing import Any

import pytest
from support import END, START, TESTS

from bench.jobs import JobLog

pytestmark = pytest.mark.classic
SUITE = str(TESTS / "suites" / "events.json")


def _jobs(bf: Any, keys: list[str]) -> int:
    log = JobLog(bf.spark)
    mark = log.mark()
    bf.validate(partitions=keys)
    return log.since(mark).jobs


def test_validation_runs_no_spark_job_per_partition(make_backfill: Any) -> None:
    bf = make_backfill(transform={"function": "sb_test_transforms:drift_on_one_day"}, expectations=[SUITE])
    assert bf.run(START, END).ok
    keys = [r.partition for r in bf.status()]
    assert len(keys) == 10
    _jobs(bf, keys[:1])  # warm: a first validation may read metadata a later one has cached
    one, ten = _jobs(bf, keys[:1]), _jobs(bf, keys)
    assert one > 0, "no job counted: the status store was not read"
    # A job per partition would add 9; the grouped jobs may add one or two for the larger range
    # (measured: 4 and 5 on PySpark 4.1, 13 and 15 for 1 and 60 partitions in the bench).
    assert ten <= one + 2, f"validating 10 partitions ran {ten} Spark jobs, 1 partition {one}"
