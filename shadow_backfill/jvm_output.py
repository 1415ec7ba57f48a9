"""Where the JVM's own output goes: a log file per Spark start, never the terminal.

PySpark's launcher starts Spark's JVM as a child of this process with our file descriptors 1
and 2. Before any log4j setting applies, Ivy prints its resolution of `spark.jars.packages`
there (~18 lines: `:: loading settings ::`, `:: resolving dependencies ::`, a table), and
log4j's console appender then writes its warnings there for the JVM's whole life. On a terminal
those lines bury the CLI's one-line results and break its progress bars; under `--json | jq`
they break the JSON. So the JVM is started with both descriptors on a log file of its own
(`jvm_output_to`), in the folder where the CLI writes its other logs, and ours are put back as
soon as it runs: the JVM keeps the file, we keep the terminal.

A first start downloads the format runtimes (hundreds of MB, minutes on a slow link): with
Ivy quiet, the user would see nothing happen, so one line says so and names the log
(`announce_first_start`).
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

LOG_DIR_ENV = "SHADOW_BACKFILL_LOG_DIR"
# Spark logs older than this are removed when a new one is made: every command that starts
# Spark writes one, and nobody reads last month's.
KEEP_DAYS = 7
LOG_PREFIX = "spark-"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return str(os.getpid())


def log_dir() -> Path:
    """Where every log of the tool goes (the JVM's, and the CLI's full tracebacks):
    $SHADOW_BACKFILL_LOG_DIR, else a per-user folder in the system temp dir, writable even when
    the config's folder is the thing that is broken."""
    chosen = os.environ.get(LOG_DIR_ENV)
    return Path(chosen) if chosen else Path(tempfile.gettempdir()) / f"shadow-backfill-{_user()}" / "logs"


def new_jvm_log() -> Path | None:
    """A new, empty log file for one JVM (0600 in a 0700 folder: Spark's warnings can quote data
    values); None where none can be made, and the JVM then writes where it always did."""
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _ours_alone(folder):
            return None
        _prune(folder)
        fd, name = tempfile.mkstemp(prefix=time.strftime(f"{LOG_PREFIX}%Y%m%dT%H%M%S-"), suffix=".log", dir=folder)
    except OSError:
        return None
    os.close(fd)
    return Path(name)


def _ours_alone(folder: Path) -> bool:
    """Whether only this user can change what is in `folder`: the default one lies in the shared
    temp folder, where another user may have made it first and could swap our log for a link
    to a file of ours that the JVM would then append to."""
    st = folder.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _prune(folder: Path) -> None:
    cutoff = time.time() - KEEP_DAYS * 86400
    for old in folder.glob(f"{LOG_PREFIX}*.log"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                old.unlink()


@contextlib.contextmanager
def jvm_output_to(log: Path | None) -> Iterator[None]:
    """Point our stdout and stderr at `log` while a JVM starts, so that it inherits the file for
    its whole life; ours are restored on exit. Without a log, or in a process started without
    stdout or stderr (`>&-`), the JVM's stdout goes to our stderr instead, as before: `--json`
    output stays parseable either way."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:
        yield
        return
    try:
        target = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW) if log is not None else os.dup(saved[1])
    except OSError:
        target = os.dup(saved[1])
    try:
        os.dup2(target, 1)
        if log is not None:
            os.dup2(target, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def ivy_folder(conf: Mapping[str, str], spark_version: str) -> Path:
    """The Ivy folder Spark resolves packages into: `spark.jars.ivy`, else Ivy's default in the
    home folder, which Spark 4 names after its Ivy version."""
    if conf.get("spark.jars.ivy"):
        return Path(conf["spark.jars.ivy"]).expanduser()
    return Path.home() / (".ivy2" if spark_version.startswith("3.") else ".ivy2.5.2")


def missing_jars(conf: Mapping[str, str], spark_version: str) -> list[str]:
    """The packages of `spark.jars.packages` whose jar is not yet in the Ivy folder (Spark copies
    each resolved jar to `<ivy>/jars/<group>_<artifact>-<version>.jar`): a first start."""
    jars = ivy_folder(conf, spark_version) / "jars"
    missing = []
    for package in conf.get("spark.jars.packages", "").split(","):
        parts = package.strip().split(":")
        if len(parts) >= 3 and not (jars / f"{parts[0]}_{parts[1]}-{parts[-1]}.jar").exists():
            missing.append(package.strip())
    return missing


def announce_first_start(conf: Mapping[str, str], spark_version: str, log: Path | None) -> bool:
    """Say in one line on stderr that the runtimes are being fetched, once, and where the details
    go; whether it was said (nothing is missing on every later start)."""
    if not missing_jars(conf, spark_version):
        return False
    where = f"; details in {log}" if log is not None else ""
    sys.stderr.write(f"fetching the Spark runtimes (first start only, into {ivy_folder(conf, spark_version)}){where}\n")
    sys.stderr.flush()
    return True


# How long a command's end waits for its JVM to exit (Spark's own shutdown takes about a second).
JVM_EXIT_WAIT_S = 60


def quietly(stop: Callable[[], object]) -> None:
    """Run a best-effort stop at exit with logging off and its errors dropped. When the JVM
    closes py4j's connection during a command (as it may while it stops), py4j reports it with
    `logging.exception` on the root logger, which configures logging and prints a traceback on
    the terminal after the command's last line. The command's outcome is decided by then."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.suppress(Exception):
            stop()
    finally:
        logging.disable(before)


def wait_for_jvm_at_exit(proc: Any) -> None:
    """When this process ends, stop Spark and wait for its JVM (`proc`, the child PySpark
    started) to exit. The JVM exits on its own once our end closes its stdin, but no longer
    holds our stdout and stderr (they point at its log), so a caller that waits for our output
    to end (a scheduler, `subprocess.run`) would otherwise go on while the JVM still writes its
    last files and holds its locks (an embedded metastore's, a class archive written at exit)."""

    def _wait() -> None:
        spark_context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
        if spark_context is not None and spark_context._active_spark_context is not None:
            quietly(spark_context._active_spark_context.stop)
        with contextlib.suppress(Exception):
            proc.stdin.close()
            proc.wait(timeout=JVM_EXIT_WAIT_S)

    atexit.register(_wait)
