"""Iceberg tables partitioned by a transform of a timestamp (`days(event_ts)`, `hours(...)`,
`months(...)`): `partition.column` names the timestamp, and each key stands for the [start, end)
range of its period in reads, overwrites, the out-of-partition check, validation grouping,
promotion and rollback. The shadow keeps live's partition spec.

Iceberg only: hidden partitioning is an Iceberg feature (a Delta table partitioned by a derived
column is partitioned by that column, as in every other test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from support import QUIET, factory

from shadow_backfill import Backfill
from shadow_backfill.config import load_config

pytestmark = pytest.mark.classic

# granularity -> (Iceberg transform, the four periods backfilled)
SPECS = {
    "daily": ("days", "2024-03-01", "2024-03-04"),
    "hourly": ("hours", "2024-03-01T22", "2024-03-02T01"),
    "monthly": ("months", "2023-11", "2024-02"),
}


@pytest.fixture(params=list(SPECS))
def hidden(request: pytest.FixtureRequest, spark: Any, tmp_path: Path, warehouse: Path) -> Backfill:
    """A seeded live table partitioned by `<transform>(event_ts)` over the four periods, and a
    backfill of it whose config says only `partition: {column: event_ts}`: the type and the
    granularity are read from the table."""
    transform, start, end = SPECS[request.param]
    make = factory("iceberg", tmp_path, warehouse, spark)
    seeder = make(
        seed_live=False,
        partition={"column": "event_ts", "granularity": request.param, "type": "timestamp"},
        transform={"function": "sb_test_transforms:instants_v2"},
        validation=QUIET,
    )
    keys = seeder.scheme.expand(start, end)
    df = t.instants(spark, [seeder.scheme.value(k) for k in keys])
    seeder.table_format.create(seeder.live_table, df.schema, [f"{transform}(event_ts)"])
    seeder.table_format.overwrite_partitions(seeder.live_table, df, keys)
    data = yaml.safe_load(Path(seeder.config_path).read_text())  # type: ignore[attr-defined]
    data["partition"] = {"column": "event_ts"}
    path = tmp_path / "bare-partition.yaml"
    path.write_text(yaml.safe_dump(data))
    bf = Backfill(load_config(path), spark=spark)
    assert bf.table_format.scheme == seeder.scheme and bf.scheme == seeder.scheme
    bf.keys = keys  # type: ignore[attr-defined]
    return bf


def _same(a: DataFrame, b: DataFrame) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def test_backfill_promote_and_roll_back_by_period(hidden: Backfill) -> None:
    bf, keys = hidden, hidden.keys  # type: ignore[attr-defined]
    spec = bf.table_format.partition_columns(bf.live_table)
    before = bf.spark.createDataFrame(bf.read_live().collect(), bf.read_live().schema)
    assert before.count() == len(keys) * t.ROWS_PER_DAY

    assert bf.run(keys[0], keys[-1]).ok
    assert bf.table_format.partition_columns(bf.shadow_table) == spec, "the shadow keeps live's partition spec"
    _same(bf.read_shadow(), t.instants_v2(bf.spark, [bf.scheme.value(k) for k in keys]))
    assert bf.table_format.partition_row_counts(bf.shadow_table) == dict.fromkeys(keys, t.ROWS_PER_DAY)
    assert bf.run(keys[0], keys[-1]).ok and bf.read_shadow().count() == len(keys) * t.ROWS_PER_DAY, "idempotent"

    verdicts = bf.validate().verdicts
    assert [v.partition for v in verdicts] == keys and {v.verdict for v in verdicts} == {"pass"}

    _, rec = bf.promote(keys[:3])
    assert rec is not None and rec.partitions == keys[:3]
    _same(bf.read_live(keys[:3]), bf.read_shadow(keys[:3]))
    _same(bf.read_live([keys[3]]), bf.read_live([keys[3]], version=rec.live_version_before))
    assert bf.read_live().count() == len(keys) * t.ROWS_PER_DAY

    bf.rollback(rec.id)
    _same(bf.read_live(), before)


def test_rows_outside_the_requested_periods_are_refused_before_writing(hidden: Backfill) -> None:
    keys = hidden.keys  # type: ignore[attr-defined]
    spec = hidden.config.transform.model_copy(update={"function": "sb_test_transforms:instants_spilling"})
    bf = Backfill(hidden.config.model_copy(update={"transform": spec}), spark=hidden.spark)
    result = bf.run(keys[0], keys[-1], chunk_size=len(keys))
    assert set(result.failed) == set(keys)
    reason = result.failed[keys[0]]
    assert "returned rows for [" in reason and "nothing was written" in reason, reason
    assert not bf.table_format.exists(bf.shadow_table), "a refused chunk must not even create the shadow"
