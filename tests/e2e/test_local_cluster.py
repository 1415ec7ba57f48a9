"""A full recompute -> validate -> promote on `local-cluster[2,1,1024]`: two executor JVMs
besides the driver, on loopback. Proves the pipeline relies on nothing that only exists in the
driver's memory (the transform, the checks and the writes all run in the executors)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from support import END, QUIET, START, base_config, factory

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster_spark(warehouse: Path) -> Iterator[Any]:
    from shadow_backfill.config import parse_config
    from shadow_backfill.session import open_session

    data = base_config("iceberg", warehouse)
    data["spark"]["master"] = "local-cluster[2,1,1024]"
    session = open_session(parse_config(data, base_dir=warehouse))
    yield session
    session.stop()


def test_pipeline_on_two_executor_jvms(cluster_spark: Any, tmp_path: Path, warehouse: Path) -> None:
    sc = cluster_spark.sparkContext  # test-only introspection; the product never touches it
    assert sc.master == "local-cluster[2,1,1024]"
    executor_pids = set(
        cluster_spark.range(0, 40, numPartitions=8).rdd.mapPartitions(lambda _: [os.getppid()]).collect()
    )
    assert os.getpid() not in executor_pids and len(executor_pids) == 2, "work must run in two other JVMs"

    bf = factory("iceberg", tmp_path, warehouse, cluster_spark)(
        transform={"function": "sb_test_transforms:nudged_with_one_bad_day"},
        validation=QUIET,
        spark={"master": "local-cluster[2,1,1024]"},
    )
    run = bf.run(START, END, max_parallel=2)
    assert run.ok and len(run.written) == 10
    verdicts = {v.partition: v.verdict for v in bf.validate().verdicts}
    assert verdicts.pop("2024-01-05") == "fail" and set(verdicts.values()) == {"pass"}
    _, rec = bf.promote()
    assert rec is not None and len(rec.partitions) == 9
    expected = t.nudged_with_one_bad_day(cluster_spark, [bf.scheme.value(k) for k in rec.partitions])
    assert_df_equality(bf.read_live(rec.partitions), expected, ignore_row_order=True, ignore_nullable=True)
    assert bf.read_live(["2024-01-05"]).count() == t.ROWS_PER_DAY
