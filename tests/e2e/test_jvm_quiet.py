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

import yaml

CHATTER = re.compile(r":: resolving|:: loading settings|:: retrieving|Ivy Default Cache| WARN |\tconfs: ")
FIRST_START = "fetching the Spark runtimes (first start only"


def _cli(args: list[str], cwd: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SHADOW_BACKFILL_LOG_DIR": str(logs)}
    cmd = [sys.executable, "-m", "shadow_backfill.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


def test_spark_starts_quietly_and_a_first_start_says_so_once(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    demo = _cli(["demo", "demo", "--format", "parquet", "--days", "2", "--no-run"], tmp_path, logs)
    assert demo.returncode == 0, demo.stderr[-3000:]
    cfg = tmp_path / "demo" / "backfill.yaml"
    data = yaml.safe_load(cfg.read_text())
    ivy = tmp_path / "ivy"  # empty: the first start of this Ivy folder
    data["spark"].setdefault("conf", {}).update(
        {"spark.jars.packages": "org.apache.commons:commons-text:1.12.0", "spark.jars.ivy": str(ivy)}
    )
    cfg.write_text(yaml.safe_dump(data))

    first, again = (_cli(["promote", str(cfg), "--dry-run"], tmp_path, logs) for _ in range(2))
    for run in (first, again):  # Spark started, the one `error:` line is still there, nothing else
        assert run.returncode == 2 and "error: nothing to promote" in run.stderr, run.stderr[-3000:]
        assert not CHATTER.search(run.stdout + run.stderr), run.stdout + run.stderr
    assert first.stderr.count(FIRST_START) == 1 and FIRST_START not in again.stderr, first.stderr
    assert (ivy / "jars" / "org.apache.commons_commons-text-1.12.0.jar").is_file()
    log = Path(re.findall(r"details in (\S+)", first.stderr)[0])
    assert log.parent == logs and ":: resolving dependencies ::" in log.read_text()
    # one log per Spark start; the demo's fetched no package, both promotes resolved theirs
    spark_logs = [p.read_text() for p in logs.glob("spark-*.log")]
    assert len(spark_logs) == 3 and sum(":: resolving dependencies ::" in t for t in spark_logs) == 2
