"""The CLI's error handling beyond single bad inputs (those are in test_bad_input.py): a flag
the plan must honour, partitions another run holds, repeated partitions, and user text that
Rich would read as markup. On every backend, real SQLite state, real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import yaml
from support import END, QUIET, START, MakeBackfill, killable_cli_env, published
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.jvm_output import LOG_DIR_ENV

# The CLI's handling does not depend on the table format: one backend per Spark engine (the
# e2e default).


def test_cli_run_with_allow_code_change_rewrites_after_a_code_change(make: MakeBackfill) -> None:
    bf = make()
    bf.run(START, "2024-01-03")
    cfg = bf.config_path  # type: ignore[attr-defined]
    data = yaml.safe_load(cfg.read_text())
    data["transform"]["function"] = "sb_test_transforms:events"
    cfg.write_text(yaml.safe_dump(data))
    args = ["run", str(cfg), "--start", START, "--end", "2024-01-03"]

    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 1 and "pass --allow-code-change" in refused.output, refused.output

    allowed = CliRunner().invoke(app, [*args, "--allow-code-change"])
    assert allowed.exit_code == 0, allowed.output
    assert "3 written, 0 skipped" in allowed.output
    changed = type(bf).from_config(cfg, spark=bf.spark)
    assert {r.code_fingerprint for r in changed.status()} == {changed.transform.fingerprint}
    assert changed.transform.fingerprint != bf.transform.fingerprint


def test_run_names_the_partitions_another_run_holds_and_exits_1(make: MakeBackfill) -> None:
    bf = make()
    keys = bf.scheme.expand(START, END)
    recompute = bf.recompute()
    other = subprocess.Popen(["sleep", "120"])  # a live process on this host: its leases are not stale
    try:
        owner = f"{socket.gethostname()}:{other.pid}:run-other"
        taken, _ = bf.store.acquire([recompute._lease(k) for k in keys[:7]], owner, 300)
        assert len(taken) == 7
        result = CliRunner().invoke(app, ["run", str(bf.config_path), "--start", START, "--end", END])  # type: ignore[attr-defined]
    finally:
        other.kill()
        other.wait()
    assert result.exit_code == 1, result.output
    assert "3 written, 0 skipped (already written), 0 failed, 7 held by another run" in result.output
    assert (
        f"error: 7 partition(s) are being recomputed by another run, run-other (pid {other.pid} on "
        f"{socket.gethostname()}): 2024-01-01, 2024-01-02, 2024-01-03 and 4 more" in result.output
    ), result.output
    records = bf.store.records(bf.shadow_table)
    assert sorted(records) == keys[7:], "the held partitions were left to their holder"


def test_repeated_partitions_are_recorded_once(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET)
    bf.run(START, END)
    bf.validate()
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["promote", cfg, "--partitions", "2024-01-02,2024-01-02, 2024-01-01,2024-01-02"])
    assert result.exit_code == 0, result.output
    [rec] = bf.history()
    assert rec.partitions == ["2024-01-02", "2024-01-01"] or rec.partitions == ["2024-01-01", "2024-01-02"]
    assert set(rec.shadow_versions) == {"2024-01-01", "2024-01-02"}


def test_failure_text_that_looks_like_markup_prints_as_typed(make: MakeBackfill) -> None:
    bf = make(transform={"function": "sb_test_transforms:boom_markup"})
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    run = CliRunner().invoke(app, ["run", cfg, "--partitions", START])
    assert run.exit_code == 1
    assert "error: transform sb_test_transforms:boom_markup raised ValueError: [/] unbalanced [red]markup" in run.output
    status = CliRunner().invoke(app, ["status", cfg])
    assert status.exit_code == 0, status.output
    assert "[/]" in status.output and "[red]" in status.output, status.output
    as_json = CliRunner().invoke(app, ["status", cfg, "--json"])
    assert "[/] unbalanced [red]markup[/bold] in a message" in as_json.output
    assert any("[red]markup" in (r["error"] or "") for r in published(as_json.stdout, "status.schema.json"))


def test_a_udf_that_raises_is_reported_by_its_python_exception(make: MakeBackfill, tmp_path: Path) -> None:
    """A transform whose UDF raises fails on a Python worker: PySpark wraps the worker's
    traceback in a JVM error and pages of stack. The run records and prints the Python
    exception's one line, and the terminal shows no Java stack (it is in the log file)."""
    bf = make(transform={"function": "sb_test_transforms:udf_boom"})
    cli = [sys.executable, "-m", "shadow_backfill.cli", "run", str(bf.config_path), "--partitions", START]  # type: ignore[attr-defined]
    env = {**killable_cli_env(bf, 0), LOG_DIR_ENV: str(tmp_path / "logs")}
    run = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr[-3000:]
    expected = "ValueError: bad amount, not a price"
    assert bf.store.records(bf.shadow_table)[START].error == expected
    terminal = run.stdout + run.stderr
    assert f"failed {START}: {expected}\n" in terminal, terminal[-3000:]
    java = [line for line in terminal.splitlines() if line.lstrip().startswith(("at org.", "at java.", "at scala."))]
    assert not java and "Traceback" not in terminal, terminal[-3000:]
    [log] = (tmp_path / "logs").glob("error-*.log")  # beside it, the JVM's own (`spark-*.log`)
    assert f"full details of the failures: {log}\n" in terminal
    assert "Traceback (most recent call last)" in log.read_text() and expected in log.read_text()
