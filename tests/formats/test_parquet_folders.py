"""What only a Hive-style folder table has: a dataset written by plain Spark is taken over as it
is, other writers' dynamic overwrites are seen, a rollback repoints folders instead of copying
data, and `gc` deletes replaced folders past their retention. (Every other behaviour of the
format runs in the backend suite, as `parquet` and `parquet-sail`.)"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from support import DRIFT, END, QUIET, START, TEST_CONF, factory, metastore_conf
from typer.testing import CliRunner

from shadow_backfill import Backfill, RefusedError, load_config
from shadow_backfill.cli import app

pytestmark = pytest.mark.classic


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _inodes(folder: Path) -> set[int]:
    return {f.stat().st_ino for f in folder.rglob("*.parquet")}


@pytest.fixture
def plain(tmp_path: Path, warehouse: Path, spark: Any) -> Any:
    """A dataset written the seeds' way (partitionBy, no tool), then backfilled and validated."""
    make = factory("parquet", tmp_path, warehouse, spark)
    root = warehouse / f"plain-{tmp_path.name}" / "events"
    bf = make(
        seed_live=False,
        live_table=str(root),
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        validation=QUIET,
    )
    days = [bf.scheme.value(k) for k in bf.scheme.expand(START, END)]
    t.events(spark, days).write.partitionBy("ds").parquet(str(root))
    assert bf.run(START, END).ok
    bf.validate()
    return bf


def test_a_plain_dataset_is_backfilled_and_rolled_back_by_repointing(plain: Any) -> None:
    bf, root = plain, Path(plain.live_table)
    original = bf.spark.read.parquet(str(root)).collect()
    before_inodes = _inodes(root / "ds=2024-01-02")
    assert [c.operation for c in bf.table_format.history(bf.live_table)] == ["ADOPT"]

    _plan, rec = bf.promote()
    assert rec is not None and DRIFT not in rec.partitions and len(rec.partitions) == 9
    # a reader that knows nothing of the tool sees the promoted folders
    plain_read = bf.spark.read.schema(bf.read_live().schema).parquet(str(root))
    _same(plain_read.filter(plain_read.ds != dt.date(2024, 1, 5)), bf.read_shadow(rec.partitions))
    assert _inodes(root / "ds=2024-01-02").isdisjoint(before_inodes)

    generations = set((root / "_shadow_backfill" / "gen").iterdir())
    bf.rollback(rec.id)
    _same(bf.spark.read.parquet(str(root)), bf.spark.createDataFrame(original))
    assert _inodes(root / "ds=2024-01-02") == before_inodes, "rollback moves the kept folder back"
    assert set((root / "_shadow_backfill" / "gen").iterdir()) == generations, "rollback writes no data"


def test_another_writers_dynamic_overwrite_is_a_commit(plain: Any) -> None:
    bf, root = plain, Path(plain.live_table)
    _plan, rec = bf.promote()
    assert rec is not None
    spark = bf.spark
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        t.events(spark, [dt.date(2024, 1, 3)]).write.mode("overwrite").partitionBy("ds").parquet(str(root))
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    last = bf.table_format.history(bf.live_table)[-1]
    assert last.operation == "WRITE (another writer)"
    assert bf.table_format.partitions_touched(bf.live_table, last) == ["2024-01-03"]
    with pytest.raises(RefusedError, match="changed after"):
        bf.rollback(rec.id)


def test_gc_deletes_replaced_folders_past_retention(plain: Any) -> None:
    bf, root = plain, Path(plain.live_table)
    _plan, rec = bf.promote()
    assert rec is not None
    adopted = bf.table_format.history(bf.live_table)[0].version
    cfg = str(bf.config_path)
    kept = sorted((root / "_shadow_backfill" / "gen").glob("*/ds=*"))
    assert len(kept) == 9, "the replaced folders are kept as the rollback target"

    result = CliRunner().invoke(app, ["gc", cfg])
    assert result.exit_code == 0, result.output
    assert "deleted 0 folder(s) replaced more than 7 day(s) ago" in result.output, result.output

    text = Path(cfg).read_text() + "promote:\n  retention_days: 0\n"
    Path(cfg).write_text(text)
    dry = CliRunner().invoke(app, ["gc", cfg, "--dry-run"])
    assert dry.exit_code == 0 and "would delete" in dry.output, dry.output
    assert all(k.exists() for k in kept), "a dry run deletes nothing"
    done = CliRunner().invoke(app, ["gc", cfg])
    assert done.exit_code == 0 and "deleted" in done.output, done.output
    assert not any(k.exists() for k in kept), done.output
    _same(bf.read_live(rec.partitions), bf.read_shadow(rec.partitions))
    with pytest.raises(RefusedError, match="gc deleted"):
        bf.read_live(rec.partitions, version=adopted)
    assert not os.path.exists(root / "_shadow_backfill" / "gen" / "v0")


@pytest.mark.parametrize("done", [0, 4, 9])
def test_a_metastore_switch_cut_short_is_finished_by_the_next_command(
    done: int, tmp_path: Path, warehouse: Path, spark: Any
) -> None:
    """A Parquet table by name is switched by partition locations. The state a killed promotion
    leaves (its version journaled, `done` of 10 partitions pointed at the new folders) is built
    here step by step with the format's own switch (a killed process cannot share the embedded
    metastore with the test JVM); the next command must finish it and the catalog must agree."""
    ns = "p" + uuid.uuid4().hex[:10]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {ns}")
    make = factory("parquet", tmp_path, warehouse, spark)
    conf = {**TEST_CONF, **metastore_conf(warehouse)}
    bf = make(live_table=f"{ns}.events", spark={"conf": conf}, transform={"function": "sb_test_transforms:events_v2"})
    assert bf.run(START, END).ok
    keys = bf.scheme.expand(START, END)
    fmt = bf.table_format
    log = fmt._log(bf.live_table)  # type: ignore[attr-defined]
    latest = fmt._latest(bf.live_table)  # type: ignore[attr-defined]
    schema = fmt.schema(bf.live_table)
    _gid, staged = fmt._stage(bf.live_table, log, schema, latest.partition_columns, bf.read_shadow(keys))  # type: ignore[attr-defined]
    version = log.next_version(latest, "OVERWRITE", {}, keys, staged)
    with log.locked():
        log._write_exclusive(version)
        for name in sorted(version.folders)[:done]:
            log.placement.switch(log, name, latest.folders.get(name), version.folders[name], version.version)

    assert not log.applied(version.version), "the switch was cut short"
    again = Backfill(load_config(bf.config_path), spark=spark)  # type: ignore[attr-defined]
    assert again.table_format.current_version(bf.live_table) == version.version
    spark.catalog.refreshTable(bf.live_table)
    _same(spark.table(bf.live_table), bf.read_shadow(keys))
    kept = [Path(f.location) for f in latest.folders.values()]
    assert all(p.is_dir() and any(p.glob("*.parquet")) for p in kept), "replaced folders kept for rollback"


@pytest.mark.parametrize("live", ["s3a://lake/features/events", "gs://lake/features/events"])
def test_parquet_on_an_object_store_is_refused_in_one_line(
    live: str, tmp_path: Path, warehouse: Path, spark: Any
) -> None:
    """A rename on an object store is a copy and a delete per object, which readers see half
    done: a table by path, switched by renames, cannot keep its promises there. The refusal
    names the table and the ways out, before anything is written (the state store keeps no run)."""
    make = factory("parquet", tmp_path, warehouse, spark)
    bf = make(seed_live=False, live_table=live)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["run", cfg, "--start", START, "--end", START])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: Parquet table {live!r}: Parquet tables by path on object storage are not supported (their "
        "switch renames folders, a copy and a delete per object there); name the table in your metastore "
        "(db.table), keep it on a local or mounted file system, or use Iceberg or Delta"
    ]
    assert bf.status_rows() == []
