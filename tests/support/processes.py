"""Helpers for tests that start other processes: CLI processes to kill, a headless browser, a
state store read from outside, the embedded metastore's settings."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from support.settings import TEST_JVM_OPTIONS

if TYPE_CHECKING:
    from shadow_backfill import Backfill


def state_count(db: str, sql: str) -> int | None:
    """One count from a run's SQLite state store while another process writes it, opened
    read-only so the test creates nothing in it; None while the store or its tables do not exist
    yet, or the query yields NULL."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        value = c.execute(sql).fetchone()[0]
        return None if value is None else int(value)
    return None


# Spark scratch folders of CLI processes a test started, removed after each test by the autouse
# fixture `_remove_killed_scratch` (conftest): with the s3 group's AWS SDK bundle each killed
# process leaves a 760 MB copy of its jars, and a CI group keeps its temporary folder until it ends.
KILLED_SCRATCH: list[Path] = []


def remove_killed_scratch() -> None:
    """Remove the scratch of every CLI process started since the last call."""
    while KILLED_SCRATCH:
        shutil.rmtree(KILLED_SCRATCH.pop(), ignore_errors=True)


def killable_cli_env(bf: Backfill, slow_seconds: float) -> dict[str, str]:
    """The environment of a CLI process a test will kill with SIGKILL. A killed JVM runs no
    shutdown hook, so its Spark scratch (the session's copy of every jar, up to 760 MB) would stay
    in /tmp for good: it goes to the backfill's own temporary folder, removed after the test."""
    scratch = Path(bf.config_path).parent / "spark-scratch"  # type: ignore[attr-defined]
    KILLED_SCRATCH.append(scratch)
    return {
        **os.environ,
        "SB_SLOW_SECONDS": str(slow_seconds),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(scratch),
    }


def metastore_conf(warehouse: Path) -> dict[str, str]:
    """A real Hive metastore for the classic session: Spark's own (Hive 2.3) embedded in the test
    JVM over Derby in the warehouse, as `spark_catalog` (Delta tables by name through delta-spark's
    DeltaCatalog) and as Iceberg catalog `hms` (Iceberg's HiveCatalog). Only the test session
    opens it: embedded Derby admits one JVM, so CLI processes the tests start never name it."""
    derby = f"jdbc:derby:;databaseName={warehouse / 'metastore_db'};create=true"
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": derby,
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # Embedded Hive 2.3 has no lock tables: Iceberg commits by an atomic alter_table instead.
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={warehouse / 'derby.log'} {TEST_JVM_OPTIONS}",
        "spark.sql.catalog.hms": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.hms.type": "hive",
        "spark.sql.catalog.hms.warehouse": str(warehouse / "hms"),
    }


def chromium_dump_dom(page: Path, user_data: Path, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """Render `page` in Debian's headless Chromium and return its DOM (stdout) and log (stderr).
    Skips when Chromium is missing, except in CI where .ci/run installs it."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium")
        pytest.skip("chromium not installed (apt-get install chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    flags += ["--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(
        [chromium, *flags, f"--user-data-dir={user_data}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
