"""The first start fetches the format runtimes from Maven Central whatever Maven left in ~/.m2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from shadow_backfill.session import IVY_SETTINGS

# What Maven leaves in ~/.m2 for a version it did not pick: the pom, no jar.
_POM_ONLY = (
    "<project><modelVersion>4.0.0</modelVersion><groupId>org.apache.commons</groupId>"
    "<artifactId>commons-lang3</artifactId><version>3.14.0</version></project>"
)
_START = """
import sys
from pyspark.sql import SparkSession
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for setting in sys.argv[1:]:
    builder = builder.config(*setting.split("=", 1))
builder.getOrCreate().stop()
"""


def _first_start(tmp_path: Path, name: str, settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A first start (empty Ivy folder) fetching a small package whose dependency has only its
    pom in the ~/.m2 of the JVM's home."""
    home = tmp_path / "home"
    pom = home / ".m2/repository/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.pom"
    pom.parent.mkdir(parents=True, exist_ok=True)
    pom.write_text(_POM_ONLY)
    conf = {
        "spark.jars.packages": "org.apache.commons:commons-text:1.12.0",
        "spark.jars.ivy": str(tmp_path / f"ivy-{name}"),
        "spark.driver.extraJavaOptions": f"-Duser.home={home}",
        **settings,
    }
    cmd = [sys.executable, "-c", _START, *[f"{k}={v}" for k, v in conf.items()]]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_first_start_ignores_poms_without_jars_in_m2(spark: Any, tmp_path: Path) -> None:
    """Spark's default Ivy chain reads ~/.m2 first and fails on a pom without its jar (the
    hazard is real: the first half); the settings the tool gives Spark fetch from Maven Central
    alone, and the same first start succeeds."""
    assert spark.sparkContext.getConf().get("spark.jars.ivySettings") == str(IVY_SETTINGS)
    default = _first_start(tmp_path, "default", {})
    assert default.returncode != 0 and "download failed" in default.stderr
    ours = _first_start(tmp_path, "ours", {"spark.jars.ivySettings": str(IVY_SETTINGS)})
    assert ours.returncode == 0, ours.stderr[-2000:]
    assert (tmp_path / "ivy-ours" / "jars" / "org.apache.commons_commons-lang3-3.14.0.jar").exists()
