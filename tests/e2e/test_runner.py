"""Runner behaviour once per engine (the format cannot change it): concurrency bound, code
pinning, SQL transforms, the CLI. A partition setting that does not fit live is in the bad-input
catalogue, a killed run in the kill trials (test_kill.py), each on every backend it can differ on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from support import END, START, Backend, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill import RefusedError
from shadow_backfill.cli import app


# once per engine (the e2e default): the format cannot change it
@pytest.mark.parametrize("max_parallel", [1, 2])
def test_concurrency_is_bounded(make: MakeBackfill, max_parallel: int) -> None:
    bf = make(transform={"function": "sb_test_transforms:tracked"})
    t.peak, t.in_flight, t.SLEEP_S = 0, 0, 0.3
    try:
        result = bf.run(START, "2024-01-06", chunk_size=1, max_parallel=max_parallel)
    finally:
        t.SLEEP_S = 0.0
    assert result.ok and len(result.chunks) == 6
    assert t.peak == max_parallel, f"transform calls in flight peaked at {t.peak}, bound is {max_parallel}"
    assert result.peak_parallel == max_parallel


# once per engine (the e2e default): the format cannot change it
def test_code_change_is_refused_unless_allowed(make: MakeBackfill) -> None:
    bf = make()
    bf.run(START, "2024-01-03")
    version_before = bf.table_format.current_version(bf.shadow_table)
    changed = make(
        seed_live=False,
        live_table=bf.live_table,
        transform={"function": "sb_test_transforms:events"},
        state={"url": bf.config.state_url},
    )
    with pytest.raises(RefusedError, match="transform changed since 3 partition"):
        changed.run(START, "2024-01-03")
    assert bf.table_format.current_version(bf.shadow_table) == version_before
    result = changed.run(START, "2024-01-03", allow_code_change=True)
    assert len(result.written) == 3
    assert {r.code_fingerprint for r in changed.status()} == {changed.transform.fingerprint}


# once per engine (the e2e default): the format cannot change it
def test_sql_transform_binds_partition_values(
    make: MakeBackfill, backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend.known_gap(request, "sql_parameters")
    bf = make()
    bf.read_live().createOrReplaceTempView("live_events")
    sql = tmp_path / "v2.sql"
    sql.write_text("SELECT id, amount * 2 AS amount, cat, ds FROM live_events WHERE ds = :partition\n")
    sql_bf = make(seed_live=False, live_table=bf.live_table, transform={"sql": str(sql)}, version="v9")
    result = sql_bf.run(START, END, chunk_size=4)
    assert result.ok and len(result.written) == 10
    expected = t.events_v2(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    assert_df_equality(sql_bf.read_shadow(), expected, ignore_row_order=True, ignore_nullable=True)


# once per engine (the e2e default): the format cannot change it
def test_cli_run_and_status_json(make: MakeBackfill) -> None:
    bf = make()
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    runner = CliRunner()
    result = runner.invoke(app, ["run", cfg, "--start", START, "--end", "2024-01-04", "--max-parallel", "2"])
    assert result.exit_code == 0, result.output
    assert "4 written, 0 skipped" in result.output
    status = runner.invoke(app, ["status", cfg, "--json"])
    rows = json.loads(status.stdout)
    assert [(r["partition"], r["status"], r["rows"]) for r in rows] == [
        (k, "written", t.ROWS_PER_DAY) for k in bf.scheme.expand(START, "2024-01-04")
    ]
    table = runner.invoke(app, ["status", cfg])
    assert table.exit_code == 0 and "2024-01-04" in table.output
    assert f"state store: {bf.config.state_url}" in table.output, "says where the record lives"


# once per engine (the e2e default): the format cannot change it
def test_cli_failure_exits_1(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:one_day_too_many"})
    result = CliRunner().invoke(app, ["run", str(bf.config_path), "--partitions", "2024-01-02"])  # type: ignore[attr-defined]
    assert result.exit_code == 1
    assert "2024-01-03" in result.output
    reversed_range = CliRunner().invoke(app, ["run", str(bf.config_path), "--start", END, "--end", START])  # type: ignore[attr-defined]
    assert reversed_range.exit_code == 2 and "reversed" in reversed_range.output
