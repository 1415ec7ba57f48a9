"""`notify-test`: a sample message to each webhook of a config's and a pipeline's `notify:`,
posted to real receivers on loopback, with no engine (the unit tier imports no PySpark)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.receiver import receiver
from typer.testing import CliRunner

from shadow_backfill.cli import app

SECRET = "T0/B0/not-a-real-token"


def _config(tmp_path: Path, notify: list[dict[str, object]]) -> Path:
    cfg = {
        "live_table": "local.db.features",
        "format": "iceberg",
        "partition": {"column": "ds", "granularity": "daily"},
        "transform": {"function": "features:v2", "python_path": ["."]},
        "notify": notify,
    }
    path = tmp_path / "backfill.yaml"
    path.write_text(yaml.safe_dump(cfg))
    (tmp_path / "features.py").write_text("def v2(spark, partitions):\n    return spark.range(1)\n")
    return path


def test_a_sample_reaches_every_webhook_and_a_failing_one_exits_1(tmp_path: Path) -> None:
    with receiver("ok") as chat, receiver("error") as down:
        cfg = _config(
            tmp_path,
            [{"url": f"{chat.url}/{SECRET}", "on": ["success"]}, {"url": f"{down.url}/{SECRET}", "retries": 0}],
        )
        done = CliRunner().invoke(app, ["notify-test", str(cfg)])
        [got] = chat.wait_for(1)
    assert done.exit_code == 1, done.output
    assert done.output.splitlines() == ["127.0.0.1 (slack): delivered", "127.0.0.1 (slack): not delivered (HTTP 500)"]
    assert (
        got.json()["text"] == "local.db.features backfill 2024-01-01..2024-01-05: 3 promoted, 1 failed, 1 held — exit 1"
    )
    assert SECRET not in done.output


def test_a_dry_run_prints_the_messages_and_posts_nothing(tmp_path: Path) -> None:
    with receiver("ok") as hook:
        cfg = _config(tmp_path, [{"url": hook.url, "format": "json"}])
        done = CliRunner().invoke(app, ["notify-test", str(cfg), "--dry-run"])
        assert hook.requests == []
    assert done.exit_code == 0, done.output
    body = json.loads(done.output.split("\n", 1)[1])
    assert body["sample"] is True and body["result"]["promoted"] == ["2024-01-01", "2024-01-02", "2024-01-03"]


def test_no_webhook_is_a_usage_error(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["notify-test", str(_config(tmp_path, []))])
    assert done.exit_code == 2 and done.output.strip().endswith("notify lists no webhook"), done.output


def test_a_pipeline_file_has_its_own(tmp_path: Path) -> None:
    layer = _config(tmp_path, [])
    with receiver("ok") as hook:
        pipeline = tmp_path / "nightly.yaml"
        spec = {"tables": {"features": {"config": layer.name}}, "notify": [{"url": hook.url, "format": "teams"}]}
        pipeline.write_text(yaml.safe_dump(spec))
        done = CliRunner().invoke(app, ["pipeline", "notify-test", str(pipeline)])
        [got] = hook.wait_for(1)
    assert done.exit_code == 0, done.output
    card = got.json()["attachments"][0]["content"]
    assert card["body"][0]["text"].startswith("pipeline nightly backfill")


def test_a_refused_command_is_told_and_dead_receivers_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backfill refused after its config was read (no partitions selected: exit 2, before any
    engine): its failure goes to the webhook and to OpenLineage, both down; the exit code stays 2,
    each costs one warning line, and the webhook's secret is in no output."""
    with receiver("error") as hook, receiver("error") as lineage:
        client = tmp_path / "openlineage.yml"  # the client's own settings: no retries
        transport = {"type": "http", "url": lineage.url.removesuffix("/hook"), "retry": {"total": 0}}
        client.write_text(yaml.safe_dump({"transport": transport}))
        monkeypatch.setenv("OPENLINEAGE_CONFIG", str(client))
        cfg = _config(tmp_path, [{"url": f"{hook.url}/{SECRET}", "retries": 0}])
        done = CliRunner().invoke(app, ["backfill", str(cfg)])
        [alert] = hook.wait_for(1)
        [start] = (r.json() for r in lineage.wait_for(1))
    assert done.exit_code == 2, done.output
    assert done.output.splitlines() == [
        "warning: lineage: the OpenLineage backend did not take the events (RetryError)",  # the START
        "error: no partitions selected: give --start/--end, --partitions, or partition.values",
        "warning: notify: the webhook at 127.0.0.1 did not take the message (HTTP 500)",
    ]  # the FAIL event is not tried once the backend refused the START: one warning, one delay
    assert alert.json()["text"] == (
        "local.db.features backfill: no partitions selected: give --start/--end, --partitions, or "
        "partition.values — exit 2"
    )
    assert start["eventType"] == "START"
    assert SECRET not in done.output
    assert not (tmp_path / "warehouse").exists(), "a refusal writes nothing"


def test_a_lineage_client_that_cannot_be_set_up_is_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "no-such-transport")
    done = CliRunner().invoke(app, ["backfill", str(_config(tmp_path, []))])
    assert done.exit_code == 2, done.output  # the refusal's code, not the client's error
    assert done.output.splitlines() == [
        "warning: lineage: OpenLineage is not set up (ImportError)",
        "error: no partitions selected: give --start/--end, --partitions, or partition.values",
    ]


def test_the_lineage_clients_own_log_stays_off_the_terminal(tmp_path: Path) -> None:
    """Variables that name no transport: the client warns through `logging` and falls back to the
    console. In a process of its own (pytest's log capture would hide what a terminal shows),
    the refusal is still the one line on stderr."""
    env = {**os.environ, "OPENLINEAGE__TRANSPORT__TRANSPORTS__X__URL": "http://127.0.0.1:9", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "shadow_backfill.cli", "backfill", str(_config(tmp_path, []))]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: no partitions selected: give --start/--end, --partitions, or partition.values"
    ]
