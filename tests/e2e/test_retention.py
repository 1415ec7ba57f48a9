"""`gc` counts a kept folder's age from the commit that replaced it: on a table whose data is
older than `promote.retention_days` (every real table), the first `gc` after a promotion keeps
that promotion's rollback target, and deletes it only once the retention has passed since the
promotion; `rollback` then says the target expired. Only formats whose kept data the tool
deletes itself (folder tables) apply; Iceberg and Delta keep their own retention."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from support import END, QUIET, START, Backend, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill import Backfill
from shadow_backfill.cli import app

# gc deletes kept data only on folder (Parquet) tables, and no backend of ENGINE_BACKENDS holds one
pytestmark = pytest.mark.every_backend

DAY_S = 86400


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def age_log(backend: Backend, bf: Backfill, table: str, days: float) -> None:
    """Date every version of a folder table `days` back, as a table last written then would be."""
    log = backend.location(bf, table) / "_shadow_backfill" / "log"
    for path in log.glob("*.json"):
        version = json.loads(path.read_text())
        version["timestamp_ms"] -= int(days * DAY_S * 1000)
        path.write_text(json.dumps(version, sort_keys=True))


def cli(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"SHADOW_BACKFILL_LOG_DIR": str(tmp_path / "logs")})


def test_gc_keeps_a_fresh_rollback_target_of_an_old_table(make: MakeBackfill, backend: Backend, tmp_path: Path) -> None:
    if backend.format != "parquet":
        pytest.skip(f"{backend.name}: the format keeps its own retention (gc deletes nothing)")
    bf = make(validation=QUIET)
    cfg, keys = str(bf.config_path), bf.scheme.expand(START, END)  # type: ignore[attr-defined]
    assert bf.run(START, END).ok
    bf.validate()
    old = bf.spark.createDataFrame(bf.read_live(keys).collect(), bf.read_live(keys).schema)
    age_log(backend, bf, bf.live_table, 30)  # live's data is a month old, 7 days' retention
    _plan, rec = bf.promote()
    assert rec is not None and rec.partitions == keys

    kept = cli(tmp_path, "gc", cfg)
    assert kept.exit_code == 0 and f"{bf.live_table}: deleted 0 folder(s)" in kept.output, kept.output
    undone = cli(tmp_path, "rollback", cfg, "--promotion", rec.id)
    assert undone.exit_code == 0, undone.output
    _same(bf.read_live(keys), old)

    # Promoted again, then gc on a day past the retention: the target is deleted, and said so.
    bf.validate()
    _plan, again = bf.promote()
    assert again is not None
    promoted = bf.spark.createDataFrame(bf.read_live(keys).collect(), bf.read_live(keys).schema)
    assert bf.gc(now=time.time() + 6 * DAY_S)[bf.live_table] == [], "6 days after: still kept"
    deleted = bf.gc(now=time.time() + 8 * DAY_S)[bf.live_table]
    assert deleted, "8 days after the promotion its rollback target is past the retention"
    expired = cli(tmp_path, "rollback", cfg, "--promotion", again.id)
    lines = [ln for ln in expired.output.splitlines() if ln.strip()]
    assert expired.exit_code == 1 and len(lines) == 1, expired.output
    assert f"the rollback target of {again.id} expired" in lines[0] and "retention_days (7 day(s))" in lines[0]
    _same(bf.read_live(keys), promoted)
