"""Runner behaviour on every backend: concurrency bound, code pinning, SQL transforms, the CLI;
and a killed process on Iceberg (the kill trials in test_kill.py cover both backends)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from support import END, START, Backend, MakeBackfill, killable_cli_env, state_count
from typer.testing import CliRunner

from shadow_backfill import RefusedError
from shadow_backfill.cli import app


@pytest.mark.per_engine  # the format cannot change it
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


@pytest.mark.per_engine  # the format cannot change it
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


@pytest.mark.per_engine  # the format cannot change it
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


@pytest.mark.per_engine  # the format cannot change it
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


@pytest.mark.per_engine  # the format cannot change it
def test_cli_failure_exits_1(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:one_day_too_many"})
    result = CliRunner().invoke(app, ["run", str(bf.config_path), "--partitions", "2024-01-02"])  # type: ignore[attr-defined]
    assert result.exit_code == 1
    assert "2024-01-03" in result.output
    reversed_range = CliRunner().invoke(app, ["run", str(bf.config_path), "--start", END, "--end", START])  # type: ignore[attr-defined]
    assert reversed_range.exit_code == 2 and "reversed" in reversed_range.output


@pytest.mark.parametrize(
    ("partition", "selection", "words"),
    [
        (
            {"granularity": "hourly"},
            ["--start", "2024-01-01T00", "--end", "2024-01-03T00"],
            "partition column 'ds' of {live} is date, which cannot hold hourly partitions",
        ),
        (
            {"column": "day"},
            ["--start", START, "--end", END],
            "partition.column 'day' is not a column of live table {live} (its columns: id, amount, cat, ds)",
        ),
    ],
)
def test_cli_refuses_a_partition_column_that_does_not_fit_live(
    make: MakeBackfill, partition: dict, selection: list[str], words: str
) -> None:
    bf = make()
    cfg = bf.config_path  # type: ignore[attr-defined]
    data = yaml.safe_load(cfg.read_text())
    data["partition"].update(partition)
    cfg.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["run", str(cfg), *selection])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + words.format(live=bf.live_table)), result.output
    assert not bf.table_format.exists(bf.shadow_table)
    assert bf.store.records(bf.shadow_table) == {}


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates(make_backfill: MakeBackfill) -> None:
    bf = make_backfill(transform={"function": "sb_test_transforms:slow"}, spark={"master": "local[1]"})
    db = bf.config.state_url.removeprefix("sqlite:///")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shadow_backfill.cli",
            "run",
            str(bf.config_path),  # type: ignore[attr-defined]
            "--start",
            START,
            "--end",
            END,
            "--chunk-size",
            "1",
            "--max-parallel",
            "1",
        ],
        env=killable_cli_env(bf, 1.5),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    written = 0
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            written = state_count(db, "SELECT count(*) FROM partitions WHERE status = 'written'") or 0
            if written >= 3:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
    finally:
        proc.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the orphaned JVM, if any
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert 3 <= written < 10

    resumed = bf.run(START, END)
    assert resumed.ok
    assert len(resumed.skipped) >= 3 and len(resumed.written) + len(resumed.skipped) == 10
    shadow = bf.read_shadow()
    assert shadow.count() == shadow.select("ds", "id").distinct().count() == 10 * t.ROWS_PER_DAY
    expected = t.events(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    assert_df_equality(shadow, expected, ignore_row_order=True, ignore_nullable=True)
