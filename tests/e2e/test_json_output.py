"""What scripts parse: `--json` prints one JSON document on stdout and nothing else, even when
Ivy resolves jars at the JVM's start (its lines go to the log file of that start); the
commands that read only the state store never start Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from support import MakeBackfill, published, validated

from shadow_backfill.session import IVY_SETTINGS

# A small package Ivy resolves at the JVM's start (as it does the format runtimes for a user
# without a jars folder): its `:: loading settings ::` lines are what once broke `| jq`.
_PACKAGE = "org.apache.commons:commons-text:1.12.0"
# Ivy's folder for it, kept per machine (as the REST fixture's jars are): the first run downloads
# the package, later runs resolve it from there, and Ivy prints its lines either way.
_IVY = Path(os.environ.get("SB_TEST_CACHE", Path.home() / ".cache" / "shadow-backfill")) / "ivy-json-output"


def _cli(cfg: Path, home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process with a fresh HOME, as a scheduler runs it."""
    home.mkdir(exist_ok=True)
    full = {**os.environ, "HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    cmd = [sys.executable, "-m", "shadow_backfill.cli", *args[:1], str(cfg), *args[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=full)


def _with_ivy(cfg: Path, ivy: Path) -> None:
    data: dict[str, Any] = yaml.safe_load(cfg.read_text())
    conf = data["spark"].setdefault("conf", {})
    conf.update(
        {"spark.jars.packages": _PACKAGE, "spark.jars.ivy": str(ivy), "spark.jars.ivySettings": str(IVY_SETTINGS)}
    )
    cfg.write_text(yaml.safe_dump(data))


def test_json_is_the_only_thing_on_stdout(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    bf = validated(make_backfill)
    _plan, rec = bf.promote()
    assert rec is not None
    cfg = Path(bf.config_path)  # type: ignore[attr-defined]
    _with_ivy(cfg, _IVY)
    home = tmp_path / "home"

    # Spark starts (to reconcile with the live table) and Ivy resolves: all of it goes to the
    # log file of that Spark start, none to stdout (nor to stderr).
    logs = tmp_path / "logs"
    started = _cli(cfg, home, "history", "--json", "--reconcile", env={"SHADOW_BACKFILL_LOG_DIR": str(logs)})
    assert started.returncode == 0, started.stderr[-3000:]
    [log] = logs.glob("spark-*.log")
    assert ":: loading settings ::" in log.read_text(), "Ivy did not run: the test would prove nothing"
    assert ":: loading settings ::" not in started.stdout + started.stderr
    assert [h["id"] for h in published(started.stdout, "history.schema.json")] == [rec.id]

    # Without Java at all, the state-store commands still answer: they never start Spark.
    no_java = {"JAVA_HOME": str(tmp_path / "no-java"), "PATH": os.path.dirname(sys.executable)}
    history = _cli(cfg, home, "history", "--json", env=no_java)
    assert history.returncode == 0, history.stderr[-3000:]
    assert [h["id"] for h in published(history.stdout, "history.schema.json")] == [rec.id]
    status = _cli(cfg, home, "status", "--json", env=no_java)
    assert status.returncode == 0, status.stderr[-3000:]
    assert len(published(status.stdout, "status.schema.json")) == 10
    report = _cli(cfg, home, "report", "--report", str(tmp_path / "report"), env=no_java)
    assert report.returncode == 0, report.stderr[-3000:]
    assert (tmp_path / "report" / "report.json").is_file()


def test_validate_and_the_promotion_plan_print_published_documents(make_backfill: MakeBackfill) -> None:
    """`validate --json` and `promote --dry-run --json`: one document each, as published."""
    from typer.testing import CliRunner

    from shadow_backfill.cli import app

    bf = validated(make_backfill)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    plan = CliRunner().invoke(app, ["promote", cfg, "--dry-run", "--json"])
    assert plan.exit_code == 0, plan.output
    doc = published(plan.stdout, "promotion-plan.schema.json")
    assert len(doc["promote"]) == 9 and len(doc["refused"]) == 1
    assert set(doc["rows"]) == set(doc["promote"])
    done = CliRunner().invoke(app, ["validate", cfg, "--json"])
    verdicts = published(done.stdout, "command.schema.json")
    assert verdicts["command"] == "validate" and done.exit_code == verdicts["exit_code"] == 1
    assert sorted(verdicts["judged"].values()).count("fail") == 1
    assert bf.store.promotions(bf.live_table) == [], "a dry run promoted"
