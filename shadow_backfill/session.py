"""Getting a Spark session from a config: embedded local Spark, any master, or Spark Connect.

The product code only uses APIs that exist on both classic Spark and Spark Connect (no
SparkContext, no JVM handles, no RDDs), so the same run works on either.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import ConfigError, SessionError, WriteError, first_line, os_reason
from shadow_backfill.formats import format_class
from shadow_backfill.formats.runtimes import pyspark_version, spark_line
from shadow_backfill.formats.settings import S3A_SETTINGS, SessionSettings
from shadow_backfill.ivy_causes import ivy_failure_cause
from shadow_backfill.jar_lock import one_download_at_a_time
from shadow_backfill.jvm_output import (
    announce_first_start,
    ivy_folder,
    jvm_output_to,
    new_jvm_log,
    wait_for_jvm_at_exit,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_sail_lock = threading.Lock()
_sail_server: Any = None

# Settings of a running session, which the tool also asks of a Spark Connect server it opens;
# config `spark.conf` wins. `hugeMethodLimit`: HotSpot compiles no method over 8,000 bytes of
# bytecode, and Spark's default (65,535) lets a stage's generated method grow past that and run
# in the interpreter. The measuring jobs of a table with many changed numeric columns do (the
# key grouping's histogram reader: 21,852 bytes with eight columns). Capped at 8,000, Spark
# runs such a stage without whole-stage code generation, compiled: the measuring jobs 22% and
# 27% faster with 8 and 16 columns at 1 M rows per side (`python -m bench wide`). Spark's docs
# suggest 8,000 on HotSpot. `tests/e2e/test_speed_plans.py` fails once no stage of those jobs
# grows past the limit.
RUNTIME_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.codegen.hugeMethodLimit": "8000",
}
# Settings that keep an embedded session quiet and deterministic; config `spark.conf` wins.
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    **RUNTIME_CONF,
}

# PySpark 4's loggers of the analysis errors it converts (`pyspark.errors.exceptions.base`).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_query_context_loggers() -> None:
    """PySpark 4 writes every analysis error it converts as a JSON line on stderr, before the
    tool catches that error: a consumer's query that fails on live (a judged outcome, in the
    verdict) or a bad config (one `error:` line) would come with a stack trace the user never
    asked for. The tool reports each such error itself, so these two loggers are turned off
    when it opens (or adopts) its session (`open_session`); a program that passes its own
    session keeps its own logging. PySpark 3.5 has neither."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return
    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


# Sail's log filter unless the user set `RUST_LOG`: the server runs in this process and logs to
# its stderr, so its INFO and WARN lines (a session per command, "Hint operation is not yet
# supported") would reach the terminal, as the JVM's no longer do. A failed query still reaches
# the user, as the command's one `error:` line. Sail reads `RUST_LOG` once, as it loads and
# starts (pysail 0.7), so the variable is set for that only and the process's environment (a
# library user's, its children's) is left as it was.
SAIL_LOG_FILTER = "off"


@contextlib.contextmanager
def _rust_log(default: str) -> Iterator[None]:
    """`RUST_LOG=default` for the duration, unless the user set one."""
    if "RUST_LOG" in os.environ:
        yield
        return
    os.environ["RUST_LOG"] = default
    try:
        yield
    finally:
        os.environ.pop("RUST_LOG", None)


def start_sail() -> str:
    """Start (once per process) an embedded Sail Spark Connect server on loopback; return its URL."""
    global _sail_server
    with _sail_lock:
        if _sail_server is None:
            with _rust_log(SAIL_LOG_FILTER):
                try:
                    from pysail.spark import SparkConnectServer
                except ImportError:
                    raise SessionError(
                        "spark.remote is 'sail' but pysail is not installed (pip install pysail)"
                    ) from None
                server = SparkConnectServer(ip="127.0.0.1", port=0)
                with jvm_output_to(None):
                    server.start(background=True)
            _sail_server = server
            atexit.register(server.stop)
        host, port = _sail_server.listening_address
        return f"sc://{host}:{port}"


# How Spark's Ivy resolves `spark.jars.packages` (the format runtimes): Maven Central without
# ~/.m2, whose poms without jars make Spark's default chain fail a first start (the file says why).
IVY_SETTINGS = Path(__file__).with_name("resources") / "ivysettings.xml"

# The masters Spark 3.5 itself understands. Anything else makes the JVM retry for a minute and
# print pages of Java traces, so it is refused before the JVM starts.
_MASTER = re.compile(
    r"^(local(\[\s*(\*|\d+)\s*(,\s*\d+\s*)?\])?"
    r"|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
    r"|spark://[^\s/,]+(,[^\s/,]+)*/?"
    r"|yarn|k8s://\S+|mesos://\S+)$"
)


# Settings whose value is a comma-separated list both the tool and the user add to: the user's
# entries join the tool's. A user lists extra packages there (a catalog's JDBC driver, GCS's
# connector); replacing the tool's list would drop the format runtime, and the first start would
# fail without naming it.
LIST_SETTINGS = ("spark.jars.packages", "spark.jars", "spark.sql.extensions")
# A runtime's artifact without its Spark and Scala suffixes: iceberg-spark-runtime-3.5_2.12 and
# delta-spark_4.1_2.13 name the same runtimes as any other version of them.
_ARTIFACT_SUFFIX = re.compile(r"(-\d+\.\d+)?(_\d+\.\d+)*$")


def join_user_conf(conf: Mapping[str, str], user: Mapping[str, str]) -> dict[str, str]:
    """The session's settings with the user's `spark.conf` applied: the user's value wins,
    except in `LIST_SETTINGS`, where the user's entries join ours. A user's own runtime of a
    format in another version than ours would put two on the classpath: refused, naming both."""
    out = {**conf, **user}
    for key in LIST_SETTINGS:
        if key in conf and key in user:
            ours, theirs = _items(conf[key]), _items(user[key])
            if key == "spark.jars.packages":
                _refuse_other_runtime(ours, theirs)
            out[key] = ",".join(dict.fromkeys([*ours, *theirs]))
    return out


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _refuse_other_runtime(ours: list[str], theirs: list[str]) -> None:
    for mine in ours:
        group, artifact, *_ = mine.split(":")
        for other in theirs:
            parts = other.split(":")
            same = len(parts) >= 3 and parts[0] == group
            if same and _ARTIFACT_SUFFIX.sub("", parts[1]) == _ARTIFACT_SUFFIX.sub("", artifact) and other != mine:
                raise ConfigError(
                    f"spark.conf spark.jars.packages lists {other}, but this Spark line needs {mine} "
                    "(the tool adds it): remove yours, or set spark.jars_dir to a folder of jars you pick"
                )


# Hadoop's S3 connector: a location in this scheme, or a setting of it, means the session needs
# hadoop-aws (`runtimes.SparkLine.hadoop_aws`).
S3A_SCHEME = "s3a://"


def uses_s3a(config: BackfillConfig) -> bool:
    """Whether the config puts a table, a catalog's warehouse or a connector setting on s3a."""
    places = [config.live_table, config.shadow_table or "", *config.spark.conf.values()]
    return any(p.lower().startswith(S3A_SCHEME) for p in places) or any(
        k.startswith(S3A_SETTINGS) for k in config.spark.conf
    )


def object_store_conf(config: BackfillConfig, conf: Mapping[str, str]) -> dict[str, str]:
    """Hadoop's S3 connector of this Spark line joined to the format runtime Spark fetches, when
    the config uses s3a: an S3 user would otherwise have to find the one hadoop-aws version that
    fits PySpark's Hadoop. Only on local masters, where that Hadoop is pip PySpark's: a cluster
    (YARN, Kubernetes, standalone) may run another Hadoop, whose connector the user lists. Nothing
    is added where the jars come from `spark.jars_dir` (offline: the folder holds the connector
    too, and the format's settings list it as `spark.jars`). A format that fetches no runtime
    (Parquet) gets the connector alone."""
    local = config.spark.master.startswith("local")
    if not local or not uses_s3a(config) or "spark.jars" in conf:
        return {}
    return {"spark.jars.packages": ",".join(p for p in (conf.get("spark.jars.packages"), spark_line().hadoop_aws) if p)}


def check_master(master: str) -> None:
    """Fail in a second, naming the master, where Spark would retry and dump Java traces."""
    if not _MASTER.match(master):
        raise ConfigError(
            f"spark.master {master!r} is not a Spark master URL (expected local[N], local-cluster[N,C,M], "
            "spark://host:port, yarn or k8s://...)"
        )
    if not master.startswith("spark://"):
        return
    errors = []
    for hostport in master.removeprefix("spark://").rstrip("/").split(","):
        host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "7077")
        try:
            with socket.create_connection((host, int(port)), timeout=5):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{hostport}: {getattr(exc, 'strerror', None) or exc}")
    raise SessionError(f"spark.master {master!r}: cannot reach the Spark master ({'; '.join(errors)})")


def ensure_warehouse(config: BackfillConfig) -> Path:
    """The warehouse folder, created; a path that cannot be a folder is named before Spark starts."""
    path = config.warehouse
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"spark.warehouse {str(path)!r} cannot be created: {os_reason(path, exc)}") from None
    return path


def session_settings(config: BackfillConfig) -> SessionSettings:
    """What the table formats read of the config to set up a classic session."""
    jars_dir = config.resolve(config.spark.jars_dir) if config.spark.jars_dir is not None else None
    return SessionSettings(jars_dir, config.spark.catalog, dict(config.spark.conf), config.warehouse)


def open_session(config: BackfillConfig) -> SparkSession:
    """The session a config asks for; reuses the process's active session when there is one.
    PySpark is imported here, not with the module: config checks (`check_master`) run without it."""
    from pyspark.sql import SparkSession

    quiet_query_context_loggers()
    remote = config.spark.remote
    if remote:
        url = start_sail() if remote == "sail" else remote
        if not url.startswith("sc://"):
            raise SessionError(f"spark.remote {remote!r} must be a Spark Connect URL (sc://host:port) or 'sail'")
        try:
            spark = SparkSession.builder.remote(url).getOrCreate()
        except Exception as exc:
            raise SessionError(f"cannot connect to Spark Connect at {url}: {exc}") from None
        for k, v in {**RUNTIME_CONF, **config.spark.conf}.items():
            with contextlib.suppress(Exception):  # static settings cannot change on a running server
                spark.conf.set(k, v)
        return spark

    check_master(config.spark.master)
    ensure_warehouse(config)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if config.spark.master.startswith("local-cluster") and "SPARK_HOME" not in os.environ:
        # local-cluster launches worker JVMs through SPARK_HOME's scripts; pip's PySpark ships them.
        import pyspark

        os.environ["SPARK_HOME"] = os.path.dirname(pyspark.__file__)
    conf: dict[str, str] = dict(DEFAULT_CONF)
    log4j = Path(__file__).with_name("resources") / "log4j2.properties"
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile=file:{log4j}"
    conf["spark.sql.warehouse.dir"] = str(config.warehouse / "spark")
    conf.update(format_class(config.format).session_conf(session_settings(config)))
    conf.update(object_store_conf(config, conf))
    conf = join_user_conf(conf, config.spark.conf)
    if "spark.jars.packages" in conf:
        conf.setdefault("spark.jars.ivySettings", str(IVY_SETTINGS))  # a user's own replaces ours
    if (user_opts := config.spark.conf.get("spark.driver.extraJavaOptions")) is not None:
        # The user's JVM options join ours: replacing them would bring back Spark's log noise.
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile=file:{log4j} {user_opts}"
    builder = SparkSession.builder.master(config.spark.master).appName("shadow-backfill")
    for k, v in conf.items():
        builder = builder.config(k, v)
    return start_jvm(builder, conf, config.format)


def start_jvm(builder: Any, conf: Mapping[str, str], fmt: str) -> SparkSession:
    """Start the JVM with its output on a log file of its own (`jvm_output`), one download of
    the runtimes at a time (`jar_lock`); a failure names its cause, read from that log."""
    from pyspark import SparkContext

    version = pyspark_version()
    fresh = getattr(SparkContext, "_gateway", None) is None  # else this process's JVM runs already
    log = new_jvm_log() if fresh else None
    if fresh and "spark.jars.packages" in conf:
        announce_first_start(conf, version, log)
    try:
        with contextlib.ExitStack() as starting:
            if fresh:  # the lock first: while it waits (or fails), the terminal is still ours
                starting.enter_context(one_download_at_a_time(conf))
                starting.enter_context(jvm_output_to(log))
            session = builder.getOrCreate()
        proc = getattr(SparkContext._gateway, "proc", None)
        if fresh and log is not None and proc is not None:
            wait_for_jvm_at_exit(proc)
        return session  # type: ignore[no-any-return]
    except Exception as exc:
        why = _start_failure(exc, conf, version, log)
        raise SessionError(f"could not start Spark for format {fmt!r}: {why}") from None


def _start_failure(exc: Exception, conf: Mapping[str, str], version: str, log: Path | None) -> str:
    """Why the JVM did not start: Ivy's cause when it was fetching packages, else Spark's words;
    with the log's path, where the whole story is."""
    text = ""
    if log is not None:
        with contextlib.suppress(OSError):
            text = log.read_text(errors="replace")
    cause = None
    if "spark.jars.packages" in conf:
        cause = ivy_failure_cause(text, str(ivy_folder(conf, version)))
        if cause is not None:
            cause = f"fetching {conf['spark.jars.packages']} failed: {cause}"
    cause = cause or first_line(exc)
    return f"{cause} (Spark's log: {log})" if log is not None else cause
