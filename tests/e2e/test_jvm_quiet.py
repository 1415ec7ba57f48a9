"""The JVM's own chatter stays off the terminal: Ivy's resolution of `spark.jars.packages` and
Spark's log4j warnings go to a log file per Spark start, and a first start (an empty Ivy
folder) says so in one line naming that log. Real CLI processes, a real download of a small
package from Maven Central into a fresh Ivy folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CHATTER = re.compile(r":: resolving|:: loading settings|:: retrieving|Ivy Default Cache| WARN |\tconfs: ")
SAIL_LOG = re.compile(r"\b(INFO|WARN|ERROR) sail_\w+::")  # [time LEVEL sail_python::spark::server]
FIRST_START = "fetching the Spark runtimes (first start only"


def _cli(args: list[str], cwd: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SHADOW_BACKFILL_LOG_DIR": str(logs)}
    cmd = [sys.executable, "-m", "shadow_backfill.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def parquet_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo's config (Parquet: no format runtime to fetch), its live table written."""
    root = tmp_path_factory.mktemp("jvm-quiet")
    demo = _cli(["demo", "demo", "--format", "parquet", "--days", "2", "--no-run"], root, root / "demo-logs")
    assert demo.returncode == 0, demo.stderr[-3000:]
    return root / "demo" / "backfill.yaml"


def _with_packages(demo: Path, tmp_path: Path, packages: str) -> Path:
    """The demo's config fetching `packages` into an empty Ivy folder: a first start."""
    data = yaml.safe_load(demo.read_text())
    data["spark"].setdefault("conf", {}).update(
        {"spark.jars.packages": packages, "spark.jars.ivy": str(tmp_path / "ivy")}
    )
    cfg = demo.with_name(f"backfill-{tmp_path.name}.yaml")  # beside it: its paths are relative
    cfg.write_text(yaml.safe_dump(data))
    return cfg


def test_spark_starts_quietly_and_a_first_start_says_so_once(parquet_demo: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    cfg = _with_packages(parquet_demo, tmp_path, "org.apache.commons:commons-text:1.12.0")
    ivy = tmp_path / "ivy"
    first, again = (_cli(["promote", str(cfg), "--dry-run"], tmp_path, logs) for _ in range(2))
    for run in (first, again):  # Spark started, the one `error:` line is still there, nothing else
        assert run.returncode == 2 and "error: nothing to promote" in run.stderr, run.stderr[-3000:]
        assert not CHATTER.search(run.stdout + run.stderr), run.stdout + run.stderr
    assert first.stderr.count(FIRST_START) == 1 and FIRST_START not in again.stderr, first.stderr
    assert (ivy / "jars" / "org.apache.commons_commons-text-1.12.0.jar").is_file()
    log = Path(re.findall(r"details in (\S+)", first.stderr)[0])
    assert log.parent == logs and ":: resolving dependencies ::" in log.read_text()
    spark_logs = [p.read_text() for p in logs.glob("spark-*.log")]  # one per Spark start
    assert len(spark_logs) == 2 and all(":: resolving dependencies ::" in t for t in spark_logs)


def test_a_failed_fetch_names_its_cause_not_the_network(parquet_demo: Path, tmp_path: Path) -> None:
    """Ivy's exception reads "unresolved dependency ... not found" whatever happened; the one
    `error:` line says what did (here: a module Maven Central does not have) and where the log is."""
    cfg = _with_packages(parquet_demo, tmp_path, "org.example.nope:nope-lib:0.0.1")
    run = _cli(["promote", str(cfg), "--dry-run"], tmp_path, tmp_path / "logs")
    assert run.returncode == 1, run.stderr[-3000:]
    [line] = [x for x in run.stderr.splitlines() if x.startswith("error:")]
    assert "Maven Central has no org.example.nope:nope-lib:0.0.1" in line and "network" not in line, line
    assert "Spark's log: " + str(tmp_path / "logs") in line, line
    assert not CHATTER.search(run.stdout + run.stderr), run.stderr


def test_an_embedded_sail_server_stays_off_the_terminal(tmp_path: Path) -> None:
    """Sail runs inside the command's process and logs to its stderr (a session per command,
    "Hint operation is not yet supported"): with no `RUST_LOG` of the user's, none of it shows.
    The demo on Sail defaults to a format whose tables may be paths, and refuses Iceberg's
    catalog table before writing anything."""
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SHADOW_BACKFILL_LOG_DIR=str(tmp_path / "logs"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "shadow_backfill.cli", *args]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)

    refused = cli("demo", "demo", "--remote", "sail", "--format", "iceberg")
    assert refused.returncode == 2 and not (tmp_path / "demo").exists(), refused.stderr[-3000:]
    assert refused.stderr.startswith("error: --format iceberg --remote sail: an embedded Sail server has no catalog")
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    runs = [
        cli("demo", "demo", "--remote", "sail", "--days", "2", "--no-run"),
        cli("backfill", "demo/backfill.yaml", "--start", "2024-01-01", "--end", "2024-01-02"),
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert not SAIL_LOG.search(run.stdout + run.stderr), run.stderr[-3000:]
    assert "backfill of warehouse/delta/features" in runs[1].stdout and "2 promoted" in runs[1].stdout, runs[1].stdout
