"""A class-data archive (Java's AppCDS) for the classic CLI processes the tests start.

Why: every kill trial, killed run and CLI test on classic Spark starts a cold JVM, and loading
and verifying Spark's, Iceberg's and Delta's classes is most of what that start costs. Measured
on the 2-core machine (PySpark 4.1, Java 17, a session with the Iceberg and Delta runtimes, one
create, insert and count): 6.6 s wall and 7 s of JVM CPU cold, 4.3 s and 3 s with the archive.
The JVM maps the classes a previous run loaded from one file instead of reading, parsing and
verifying them again. A CI run starts dozens of such JVMs on each Spark line.

How: once per machine, Spark line and set of jars, `dump` runs the tool's own loop (seed, run,
validate, promote on Iceberg) in a JVM started with `-XX:ArchiveClassesAtExit`; the archive is
kept in the tests' cache folder under a key of everything the JVM checks before it maps one (the
Java version, Spark's jars and the session's jars with their sizes and times, the JVM flags).
`java_options` then adds `-XX:SharedArchiveFile` to the CLI processes' flags. If the archive
cannot be mapped the JVM silently loads classes the slow way (`-Xshare:auto`, Java's default),
so the saving can vanish without a test failing on behaviour: `tests/e2e/test_class_archive.py`
fails when a CLI process no longer loads most of its classes from the archive.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

# The CLI JVMs live seconds: the quick JIT compiler only (C2 spends more CPU compiling than those
# seconds win back) and the serial collector.
BASE_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
CACHE = Path(os.environ.get("SB_TEST_CACHE", Path.home() / ".cache" / "shadow-backfill")) / "class-archives"


def _java_version() -> str:
    run = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return run.stderr.strip()


def archive_path(jars_dir: str) -> Path:
    """Where the archive of this machine's Java, this Spark line and these jars lives: any change
    the JVM would refuse the archive for gives another key."""
    import pyspark

    spark_jars = Path(pyspark.__file__).parent / "jars"
    files = sorted([*spark_jars.glob("*.jar"), *Path(jars_dir).glob("*.jar")])
    key = hashlib.sha256()
    for part in (_java_version(), BASE_OPTIONS, str(spark_jars)):
        key.update(part.encode())
    for jar in files:
        stat = jar.stat()  # follows the session folder's symbolic links to Ivy's jars
        key.update(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return CACHE / f"{pyspark.__version__}-{key.hexdigest()[:16]}.jsa"


def java_options(jars_dir: str, warehouse: Path) -> str:
    """The CLI JVMs' flags, with the archive of this set-up, made first if this machine has none
    (about 15 s once; a failed dump leaves the flags without it and says why)."""
    archive = archive_path(jars_dir)
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(f".{os.getpid()}.partial")
        run = subprocess.run(
            [sys.executable, "-m", "support.class_archive", jars_dir, str(warehouse), str(partial)],
            cwd=Path(__file__).parent.parent,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if run.returncode != 0 or not partial.exists():
            print(f"class archive not made (CLI JVMs start the slow way): {run.stderr[-2000:]}", file=sys.stderr)
            return BASE_OPTIONS
        partial.replace(archive)  # atomic: a process running beside this one sees all or nothing
    # -Xlog:cds=off: a refused archive would print a warning on the JVM's stdout, the CLI's output
    return f"{BASE_OPTIONS} -XX:SharedArchiveFile={archive} -Xlog:cds=off"


def dump(jars_dir: str, warehouse: Path, archive: Path) -> None:
    """Run the tool's loop once in a JVM that writes the classes it loaded to `archive` at exit."""
    from shadow_backfill.config import parse_config
    from shadow_backfill.session import open_session
    from support import settings
    from support.settings import END, START, base_config, factory

    settings.JARS["dir"] = jars_dir
    options = f"{BASE_OPTIONS} -XX:ArchiveClassesAtExit={archive} -Xlog:cds=off"
    settings.CLI_JVM["spark.driver.extraJavaOptions"] = options
    spark = open_session(parse_config(base_config("iceberg", warehouse), base_dir=warehouse))
    bf = factory("iceberg", warehouse, warehouse, spark)()
    bf.run(START, END)
    bf.validate()
    bf.promote()
    bf.read_live().count()
    spark.stop()  # the JVM exits normally, and writes the archive


if __name__ == "__main__":
    dump(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
