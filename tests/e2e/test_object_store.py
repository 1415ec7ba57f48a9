"""What only the bucket can show, beyond the `store` tests every S3 backend runs: a Parquet table
by name whose location is on the bucket keeps its version log there, beside its data (so every
machine that reaches the bucket and the metastore reads the same versions), and takes its locks
from the state store, leaving none behind once a command ends."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from support import END, START, factory
from support.backends import objects
from support.object_store import BUCKET
from support.settings import METASTORE_S3

from shadow_backfill.errors import LocalLocksWarning

pytestmark = [pytest.mark.s3, pytest.mark.store]


def test_a_parquet_table_by_name_keeps_its_log_on_the_bucket(s3_spark: Any, tmp_path: Path, warehouse: Path) -> None:
    bf = factory(METASTORE_S3, tmp_path, warehouse, s3_spark)()
    assert bf.run(START, END).ok
    bf.validate()
    _, rec = bf.promote()
    assert rec is not None and len(rec.partitions) == 10
    for table in (bf.live_table, bf.shadow_table):
        location = bf.table_format.path(table)  # type: ignore[attr-defined]
        assert location.startswith(f"s3a://{BUCKET}/hive/"), location
        log = Path(location.removeprefix("s3a://")) / "_shadow_backfill" / "log"
        assert objects(log, lambda name: name.endswith(".json")), f"{table}: its versions are objects on the bucket"
    assert bf.store.holders("s3://") == {}, "every lock the log took was let go"
    assert bf.table_format.current_version(bf.live_table) == 1  # seeded, then one promotion


def test_locks_in_a_local_state_store_are_said_to_be_local(s3_spark: Any, tmp_path: Path, warehouse: Path) -> None:
    """Without `state.url` the table's locks are leases in a file on this machine, which a command
    on another machine would not see: a warning says so (with a state.url given, none)."""
    make = factory(METASTORE_S3, tmp_path, warehouse, s3_spark)
    with pytest.warns(LocalLocksWarning, match="set state.url to a shared store") as caught:
        bf = make(state={})
        assert bf.run(START, "2024-01-02").ok
    said = [str(w.message) for w in caught if issubclass(w.category, LocalLocksWarning)]
    assert bf.config.state.url is None and bf.config.state_url in said[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LocalLocksWarning)
        assert make().run(START, "2024-01-02").ok
