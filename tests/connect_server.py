"""A real Spark Connect server for the `connect` backends: Spark 4's built-in one, started from
the installed PySpark (its `spark-submit` and jars) on loopback, with the official Iceberg and
delta-spark runtimes of `runtimes.py`, an Iceberg Hadoop catalog `local` and delta-spark's catalog.

Spark 3.5's server (the separate `spark-connect_2.12` package) has no bind-address setting and
listens on every interface, so the tests start one only on Spark 4 (see docs/guides/connect.md).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark
from support.settings import TEST_JVM_OPTIONS

from shadow_backfill.formats.runtimes import spark_line
from shadow_backfill.jar_lock import one_download_at_a_time

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
LOG4J = Path(__file__).parents[1] / "shadow_backfill" / "resources" / "log4j2.properties"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_conf(warehouse: Path, extra: dict[str, str]) -> dict[str, str]:
    """The server's settings: what a platform team would configure for its users' Spark Connect
    endpoint (formats and catalogs are server-side; a Connect client cannot add jars)."""
    line = spark_line()
    return {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.jars.packages": f"{line.iceberg},{line.delta}",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
        "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalog.local": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.local.type": "hadoop",
        "spark.sql.catalog.local.warehouse": str(warehouse / "iceberg"),
        "spark.sql.warehouse.dir": str(warehouse / "spark"),
        "spark.sql.session.timeZone": "UTC",
        # The UI's REST API tells the kill trials when a killed client's work has ended on the
        # server (`running_queries`); like every server here it binds to SPARK_LOCAL_IP, loopback.
        "spark.ui.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{LOG4J} {TEST_JVM_OPTIONS}",
        **extra,
    }


def running_queries(ui: str) -> int:
    """How many SQL executions the server is running now, from its UI's REST API: a Spark Connect
    server runs a killed client's last request to its end, a commit included, and this says when
    it has. Every execution is listed (the API's default page is the first 20)."""
    with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=10) as r:
        app = json.load(r)[0]["id"]
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/sql?details=false&length=1000000", timeout=10) as r:
        return sum(e["status"] == "RUNNING" for e in json.load(r))


def start(
    warehouse: Path, log: Path, extra: dict[str, str], timeout_s: float = 600
) -> tuple[subprocess.Popen, str, str]:
    """Start the server and wait until it accepts connections; returns it, its sc:// URL and its
    UI's http:// URL. Raises RuntimeError naming the log when it exits or does not listen in time."""
    if spark_line().spark == "3.5":
        raise RuntimeError(
            "Spark 3.5's Connect server listens on every interface (no spark.connect.grpc.binding.address): "
            "the connect tests run on PySpark 4"
        )
    home = Path(pyspark.__file__).parent
    port, ui_port = _free_port(), _free_port()
    conf = {
        **server_conf(warehouse, extra),
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.port": str(ui_port),
    }
    cmd = [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    with one_download_at_a_time(conf):  # the server resolves its runtimes with Ivy as it starts
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        return _listening(proc, port, ui_port, log, timeout_s)


def _listening(
    proc: subprocess.Popen, port: int, ui_port: int, log: Path, timeout_s: float
) -> tuple[subprocess.Popen, str, str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited with {proc.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"sc://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"the Spark Connect server did not listen within {timeout_s:.0f} s; see {log}")
