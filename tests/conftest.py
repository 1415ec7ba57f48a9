"""One Spark session per test process, tiny data, few shuffle partitions, UI off.

Every behaviour test takes `backend` (or `make`, built on it) and so runs on every table
backend: Iceberg and Delta on classic Spark (`classic` marker), Delta over Spark Connect against
Sail (`sail` marker), and Iceberg and Delta over a real Spark Connect server (`connect` marker,
Spark 4). One process holds one kind of Spark session, so each group runs in its own pytest call
(`-m "not sail and not cluster and not connect"`, `-m sail`, `-m connect`); a backend's session
fixture is only created when a test of that backend runs. Adding a backend = one `Backend` subclass and one
`pytest.param` in `BACKENDS` (plus its module in shadow_backfill/formats/).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

from shadow_backfill import Backfill  # noqa: E402
from shadow_backfill.config import load_config  # noqa: E402

START, END = "2024-01-01", "2024-01-10"
# Tiny data: few partitions, no adaptive re-planning, no generated code at all (interpreted
# expressions: compiling code per query, then JIT-compiling it, costs more than it saves on a few
# rows), Delta's log replayed in 2 tasks rather than 50. Measured on tests/test_recompute.py +
# test_promote.py: 201 s -> 114 s; generated code off as well: test_promote.py 142 s -> 108 s.
# $SB_TEST_SPARK_CONF (JSON) adds settings, to measure their effect.
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# The JVMs of CLI processes the tests start live seconds: the quick JIT compiler only (C2 spends
# more CPU compiling than those seconds win back) and the serial collector. The long-lived test
# session keeps the JVM's defaults (its own `spark.driver.extraJavaOptions` replaces these).
CLI_JVM = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
# The classic session's resolved jars, linked into one folder once it has started: CLI processes
# the tests start (kill trials, the killed run) get them by `spark.jars_dir`, as an offline user
# does, instead of each asking Ivy again.
JARS: dict[str, str] = {}
# The real Spark Connect server's URL once the `connect` group has started it.
CONNECT: dict[str, str] = {}
CLASSIC = "not sail and not cluster and not connect"  # the classic group's -m expression


def _session_kind(item: pytest.Item) -> str | None:
    if item.get_closest_marker("cluster"):
        return "cluster"
    if item.get_closest_marker("sail"):
        return "sail"
    if item.get_closest_marker("connect"):
        return "connect"
    if item.get_closest_marker("classic") or "spark" in getattr(item, "fixturenames", ()):
        return "classic"
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a selection that would open two kinds of Spark session in one process (runs after
    `-m` deselected items)."""
    kinds = sorted({k for item in items if (k := _session_kind(item)) is not None})
    if len(kinds) > 1:
        raise pytest.UsageError(
            f"this selection needs {' and '.join(kinds)} Spark sessions, and one process holds one kind: "
            f'run the groups apart (-m "{CLASSIC}", -m sail, -m connect, -m cluster; nox -s tests-spark4)'
        )


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


def base_config(kind: str, warehouse: Path, **overrides: Any) -> dict[str, Any]:
    """A config for a backend kind: its format, plus `-sail` for Spark Connect on Sail or
    `-connect` for the real Spark Connect server (which holds the formats' settings)."""
    ns = "t" + uuid.uuid4().hex[:10]
    fmt, _, engine = kind.partition("-")
    if engine == "sail":
        spark: dict[str, Any] = {"remote": "sail", "warehouse": str(warehouse)}
    elif engine == "connect":
        spark = {"remote": CONNECT["url"], "warehouse": str(warehouse)}
    else:
        spark = {
            "master": "local[2]",
            "warehouse": str(warehouse),
            **({"jars_dir": JARS["dir"]} if "dir" in JARS else {}),
            "conf": {**TEST_CONF, **CLI_JVM, **json.loads(os.environ.get("SB_TEST_SPARK_CONF", "{}"))},
        }
    live = f"local.{ns}.events" if fmt == "iceberg" else str(warehouse / ns / "events")
    cfg: dict[str, Any] = {
        "live_table": live,
        "version": "v2",
        "format": fmt,
        "partition": {"column": "ds", "granularity": "daily"},
        "keys": ["id"],
        "transform": {"function": "sb_test_transforms:events_v2", "python_path": [str(TESTS)]},
        "spark": spark,
        "run": {"max_parallel": 2, "retries": 0, "retry_backoff_s": 0},
    }
    for k, v in overrides.items():
        if k == "transform":
            cfg[k] = {"python_path": [str(TESTS)], **v}
        elif isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    return cfg


MakeBackfill = Callable[..., Backfill]


def _factory(kind: str, tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
    def make(seed_live: bool = True, **overrides: Any) -> Backfill:
        data = base_config(kind, warehouse, **overrides)
        data.setdefault("state", {"url": f"sqlite:///{tmp_path / ('state-' + uuid.uuid4().hex[:6] + '.db')}"})
        path = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(data))
        bf = Backfill(load_config(path), spark=spark)
        bf.config_path = path  # type: ignore[attr-defined]
        if seed_live:
            seed(bf)
        return bf

    return make


DRIFT = "2024-01-05"


QUIET = {m: {"warn": None, "fail": None} for m in ("mean_shift", "std_change", "psi", "ks")}


def validated(make: MakeBackfill) -> Backfill:
    """Recomputed and validated: DRIFT fails (a key dropped), the other nine pass. Distribution
    thresholds are off so the verdicts depend only on the row/key checks (5 rows a day is tiny)."""
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET)
    assert bf.run(START, END).ok
    bf.validate()
    return bf


def seed(bf: Backfill, start: str = START, end: str = END, partitioned_by: tuple[str, ...] = ("ds",)) -> None:
    """Create the live table with the v1 transform over the test range, in one commit."""
    import sb_test_transforms as t

    keys = bf.scheme.expand(start, end)
    df = t.events(bf.spark, [bf.scheme.value(k) for k in keys])
    bf.table_format.create(bf.live_table, df.schema, list(partitioned_by), data=df)


def state_count(db: str, sql: str) -> int | None:
    """One count from a run's SQLite state store while another process writes it, opened
    read-only so the test creates nothing in it; None while the store or its tables do not exist
    yet, or the query yields NULL."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        value = c.execute(sql).fetchone()[0]
        return None if value is None else int(value)
    return None


def killable_cli_env(bf: Backfill, slow_seconds: float) -> dict[str, str]:
    """The environment of a CLI process a test will kill with SIGKILL. A killed JVM runs no
    shutdown hook, so its Spark scratch (the session's copy of every jar, up to 130 MB) would stay
    in /tmp for good: it goes to the backfill's own temporary folder, which pytest prunes."""
    scratch = Path(bf.config_path).parent / "spark-scratch"  # type: ignore[attr-defined]
    return {
        **os.environ,
        "SB_SLOW_SECONDS": str(slow_seconds),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(scratch),
    }


def _link_jars(session: Any, folder: Path) -> None:
    """The jars Spark resolved for this session (`spark.jars` lists them once Ivy is done)."""
    jars = [j.removeprefix("file://") for j in session.sparkContext.getConf().get("spark.jars", "").split(",") if j]
    for jar in jars:
        (folder / Path(jar).name).symlink_to(jar)
    if jars:
        JARS["dir"] = str(folder)


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
        "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={warehouse / 'derby.log'}",
        "spark.sql.catalog.hms": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.hms.type": "hive",
        "spark.sql.catalog.hms.warehouse": str(warehouse / "hms"),
    }


REST_FIXTURE = TESTS / "fixtures" / "iceberg_rest"


def _rest_fixture_jars() -> Path:
    """Iceberg's REST catalog test fixtures and their dependencies (pom.xml beside the launcher),
    fetched once by Maven into a cache folder outside the checkout.

    Maven keeps its own repository in that cache too, never in ~/.m2: Spark's Ivy resolution
    reads ~/.m2 first, and Maven leaves there the poms of versions it did not pick, without
    their jars; Ivy then takes such a pom for the module and fails on the missing jar (seen on a
    fresh machine: PySpark 4.1 could not start once this fixture had run, slf4j-api 2.0.13)."""
    cache = Path(os.environ.get("SB_TEST_CACHE", Path.home() / ".cache" / "shadow-backfill"))
    folder = cache / "iceberg-rest-fixture"
    if not (folder / ".complete").exists():
        pom = REST_FIXTURE / "pom.xml"
        cmd = [
            "mvn",
            "-q",
            "-f",
            str(pom),
            f"-Dmaven.repo.local={cache / 'maven-repository'}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={folder}",
        ]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.CalledProcessError) as exc:
            pytest.fail(f"could not fetch the Iceberg REST fixture's jars with Maven ({' '.join(cmd)}): {exc}")
        (folder / ".complete").touch()
    return folder


@pytest.fixture(scope="session")
def rest_catalog(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Iceberg's REST catalog server on loopback (a JDBC catalog in SQLite behind it), registered
    in the classic session as catalog `rest`; yields the settings a user's config would carry."""
    home = tmp_path_factory.mktemp("rest-catalog")
    launcher = REST_FIXTURE / "LoopbackRestCatalog.java"
    cmd = ["java", "-cp", f"{_rest_fixture_jars()}/*", str(launcher), str(home / "warehouse"), str(home / "catalog.db")]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    assert server.stdout is not None
    line = server.stdout.readline()  # blocks until the server listens, or returns "" if it died
    if not line.startswith("LISTENING "):
        server.kill()
        pytest.fail(f"the Iceberg REST catalog fixture did not start ({' '.join(cmd)})")
    conf = {
        "spark.sql.catalog.rest": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.rest.type": "rest",
        "spark.sql.catalog.rest.uri": f"http://127.0.0.1:{line.split()[1]}",
    }
    for k, v in conf.items():
        spark.conf.set(k, v)
    yield conf
    server.kill()
    server.wait(timeout=30)


@pytest.fixture(scope="session")
def spark(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and "connect" in type(active).__module__:
        pytest.fail(f'classic Spark tests must run in their own process: pytest -m "{CLASSIC}"')
    from shadow_backfill.config import parse_config
    from shadow_backfill.formats import format_class
    from shadow_backfill.session import open_session

    # One classic session serves both classic backends (Iceberg and Delta): the Iceberg config's
    # session with delta-spark's jars, extension and catalog added.
    data = base_config("iceberg", warehouse)
    iceberg = format_class("iceberg").session_conf(parse_config(data, base_dir=warehouse))
    delta = format_class("delta").session_conf(parse_config(base_config("delta", warehouse), base_dir=warehouse))
    data["spark"]["conf"].update(
        {
            **delta,
            "spark.jars.packages": f"{iceberg['spark.jars.packages']},{delta['spark.jars.packages']}",
            "spark.sql.extensions": f"{iceberg['spark.sql.extensions']},{delta['spark.sql.extensions']}",
        }
    )
    data["spark"]["conf"].update(metastore_conf(warehouse))
    session = open_session(parse_config(data, base_dir=warehouse))
    _link_jars(session, tmp_path_factory.mktemp("jars"))
    yield session
    session.stop()


@pytest.fixture
def make_backfill(tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
    """Iceberg on classic Spark only: for tests of classic-only behaviour (most take `make`)."""
    return _factory("iceberg", tmp_path, warehouse, spark)


@pytest.fixture(scope="session")
def sail_spark(warehouse: Path) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    if (
        SparkSession.getActiveSession() is not None
        and "connect" not in type(SparkSession.getActiveSession()).__module__
    ):
        pytest.fail("Sail tests must run in their own process: pytest -m sail")
    from shadow_backfill.config import parse_config
    from shadow_backfill.session import open_session

    cfg = parse_config(base_config("delta-sail", warehouse), base_dir=warehouse)
    session = open_session(cfg)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_spark(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A client session of a real Spark Connect server (Spark 4's own) started on loopback."""
    import connect_server
    from pyspark.sql import SparkSession

    from shadow_backfill.config import parse_config
    from shadow_backfill.session import open_session

    if (active := SparkSession.getActiveSession()) is not None and "connect" not in type(active).__module__:
        pytest.fail("Spark Connect tests must run in their own process: pytest -m connect")
    log = tmp_path_factory.mktemp("connect-server") / "server.log"
    try:
        server, CONNECT["url"] = connect_server.start(warehouse, log, TEST_CONF)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    session = open_session(parse_config(base_config("delta-connect", warehouse), base_dir=warehouse))
    yield session
    session.stop()
    server.terminate()
    server.wait(timeout=60)


@dataclass(frozen=True)
class Backend:
    """What the tests need to know about one table backend, and nothing the product knows."""

    name: str  # the test id and config kind: "iceberg", "delta", "delta-sail", "iceberg-connect"
    format: str  # config `format`
    session_fixture: str  # the fixture holding this backend's Spark session
    missing_table: str  # a live table name that does not exist
    engine_error: str  # how an unforeseen engine error is named on the catch-all's one line
    # Behaviour every backend should have that this one does not yet: key -> why. A test that
    # meets one is a strict xfail (it fails the run as soon as the product fixes the gap).
    gaps: tuple[tuple[str, str], ...] = ()
    # A Spark Connect server runs a killed client's operations to their end (Sail stops them).
    server_outlives_client: bool = False
    # Situations that cannot arise on this backend: key -> why (the test is skipped, saying so).
    inapplicable: tuple[tuple[str, str], ...] = ()

    def remote(self) -> list[str]:
        """The `--remote` option that puts a CLI command on this backend's engine."""
        engine = self.name.partition("-")[2]
        return {"sail": ["--remote", "sail"], "connect": ["--remote", CONNECT.get("url", "")]}.get(engine, [])

    def known_gap(self, request: pytest.FixtureRequest, key: str) -> None:
        """Mark the running test a strict xfail when this backend has gap `key`; skip it when the
        situation `key` cannot arise on this backend."""
        reason = dict(self.gaps).get(key)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=f"{self.name}: {reason}", strict=True))
        why = dict(self.inapplicable).get(key)
        if why is not None:
            pytest.skip(f"{self.name}: {why}")

    def alias(self, bf: Backfill) -> str:
        """Another spelling of `bf.live_table` that resolves to the same table."""
        raise NotImplementedError

    def inside(self, bf: Backfill) -> str:
        """A table name whose storage lies inside `bf.live_table`'s."""
        raise NotImplementedError

    def location(self, bf: Backfill, table: str) -> Path:
        """The folder holding the table's files."""
        raise NotImplementedError

    def metadata_table(self, bf: Backfill) -> str:
        """A name that reaches `bf.live_table`'s metadata (its history, its log), not a table."""
        raise NotImplementedError

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        """The table's data files (not its log or metadata)."""
        raise NotImplementedError

    def drop(self, bf: Backfill, table: str) -> None:
        """Drop the table as its owner would, behind the tool's back."""
        raise NotImplementedError

    def refresh(self, bf: Backfill) -> None:
        """Forget what this session cached about bf's tables: another process wrote them."""

    def commits(self, bf: Backfill, table: str) -> int:
        """How many commits the table's log holds, read from its files (no Spark): a test that
        kills a writer watches it to kill just after a commit has landed."""
        raise NotImplementedError

    def delete_data_files(self, bf: Backfill, table: str) -> None:
        """The table's log still lists files that are gone (someone cleaned the bucket)."""
        files = self.data_files(bf, table)
        assert files, f"{table} has no data files to delete"
        for f in files:
            f.unlink()


class IcebergClassic(Backend):
    def alias(self, bf: Backfill) -> str:
        """The same table through a second catalog over the same warehouse."""
        spark = bf.spark
        for k, v in {
            "": "org.apache.iceberg.spark.SparkCatalog",
            ".type": "hadoop",
            ".warehouse": spark.conf.get("spark.sql.catalog.local.warehouse"),
        }.items():
            spark.conf.set(f"spark.sql.catalog.other{k}", v)
        return "other." + bf.live_table.split(".", 1)[1]

    def inside(self, bf: Backfill) -> str:
        """A Hadoop-catalog table in namespace `<ns>.events`: its folder is under live's."""
        return f"{bf.live_table}.shadow"

    def metadata_table(self, bf: Backfill) -> str:
        """Iceberg's metadata table of live's snapshots (readable, not writable)."""
        return f"{bf.live_table}.snapshots"

    def location(self, bf: Backfill, table: str) -> Path:
        _, *parts = table.split(".")
        return Path(bf.spark.conf.get("spark.sql.catalog.local.warehouse")).joinpath(*parts)

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        return sorted((self.location(bf, table) / "data").rglob("*.parquet"))

    def drop(self, bf: Backfill, table: str) -> None:
        bf.spark.sql(f"DROP TABLE {table} PURGE")

    def commits(self, bf: Backfill, table: str) -> int:
        """A Hadoop-catalog commit writes the next `v<N>.metadata.json`."""
        return len(list((self.location(bf, table) / "metadata").glob("v*.metadata.json")))

    def refresh(self, bf: Backfill) -> None:
        """The Iceberg catalog caches loaded tables (cache-enabled): without this, a read after
        another process's commit sees the snapshot this session loaded before it."""
        for table in (bf.live_table, bf.shadow_table):
            if bf.table_format.exists(table):
                bf.spark.catalog.refreshTable(table)


class DeltaPaths(Backend):
    """Delta tables by path, on classic Spark (delta-spark) or over Spark Connect (Sail)."""

    def alias(self, bf: Backfill) -> str:
        """The same folder by another path (`..` through its parent)."""
        live = Path(bf.live_table)
        return f"{live.parent}/../{live.parent.name}/{live.name}"

    def inside(self, bf: Backfill) -> str:
        return f"{bf.live_table}/shadow"

    def metadata_table(self, bf: Backfill) -> str:
        """The folder of live's transaction log."""
        return f"{bf.live_table}/_delta_log"

    def location(self, bf: Backfill, table: str) -> Path:
        return Path(bf.table_format.path(table))  # type: ignore[attr-defined]

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        root = self.location(bf, table)
        return sorted(f for f in root.rglob("*.parquet") if "_delta_log" not in f.relative_to(root).parts)

    def drop(self, bf: Backfill, table: str) -> None:
        shutil.rmtree(self.location(bf, table))

    def commits(self, bf: Backfill, table: str) -> int:
        """A Delta commit is the next `_delta_log/<version>.json`."""
        return len(list((self.location(bf, table) / "_delta_log").glob("*.json")))


class ParquetPaths(DeltaPaths):
    """Hive-style Parquet folders by path: the data files are the live folders' (not the kept
    generations' under `_shadow_backfill/`), a commit is the next log file."""

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        root = self.location(bf, table)
        return sorted(f for f in root.rglob("*.parquet") if "_shadow_backfill" not in f.relative_to(root).parts)

    def commits(self, bf: Backfill, table: str) -> int:
        return len(list((self.location(bf, table) / "_shadow_backfill" / "log").glob("*.json")))

    def metadata_table(self, bf: Backfill) -> str:
        """The folder of live's version log and kept generations."""
        return f"{bf.live_table}/_shadow_backfill"


ICEBERG = IcebergClassic(
    "iceberg",
    "iceberg",
    "spark",
    "local.nonexistent.table",
    "Py4JJavaError",
)
DELTA = DeltaPaths("delta", "delta", "spark", "/nonexistent/table", "Py4JJavaError")
# Plain Parquet keeps no list of files: files deleted from a live folder are another writer's
# change, which the format adopts as a version of its own (test_parquet_folders.py).
NO_FILE_LIST = (("listed_files_gone", "a folder table lists no files; deleted files are another writer's change"),)
PARQUET = ParquetPaths("parquet", "parquet", "spark", "/nonexistent/table", "Py4JJavaError", inapplicable=NO_FILE_LIST)
DELTA_SAIL = DeltaPaths("delta-sail", "delta", "sail_spark", "/nonexistent/table", "QueryExecutionException")
PARQUET_SAIL = ParquetPaths(
    "parquet-sail", "parquet", "sail_spark", "/nonexistent/table", "QueryExecutionException", inapplicable=NO_FILE_LIST
)
# Spark 4.1's Connect server drops named SQL parameters when Iceberg's or Delta's SQL extension
# parser is installed, even with the legacy binding setting that mends classic Spark 4.1.
SQL_PARAMS_GAP = ("sql_parameters", "Spark 4.1 Connect with the Iceberg/Delta parsers leaves :partition unbound")
ICEBERG_CONNECT = IcebergClassic(
    "iceberg-connect", "iceberg", "connect_spark", "local.nonexistent.table", "SparkException", (SQL_PARAMS_GAP,), True
)
DELTA_CONNECT = DeltaPaths(
    "delta-connect", "delta", "connect_spark", "/nonexistent/table", "SparkException", (SQL_PARAMS_GAP,), True
)
BACKENDS = [
    pytest.param(ICEBERG, id=ICEBERG.name, marks=pytest.mark.classic),
    pytest.param(DELTA, id=DELTA.name, marks=pytest.mark.classic),
    pytest.param(PARQUET, id=PARQUET.name, marks=pytest.mark.classic),
    pytest.param(DELTA_SAIL, id=DELTA_SAIL.name, marks=pytest.mark.sail),
    pytest.param(PARQUET_SAIL, id=PARQUET_SAIL.name, marks=pytest.mark.sail),
    pytest.param(ICEBERG_CONNECT, id=ICEBERG_CONNECT.name, marks=pytest.mark.connect),
    pytest.param(DELTA_CONNECT, id=DELTA_CONNECT.name, marks=pytest.mark.connect),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn; its Spark session is opened here, only when one of its tests runs."""
    be: Backend = request.param
    request.getfixturevalue(be.session_fixture)
    return be


@pytest.fixture
def make(backend: Backend, request: pytest.FixtureRequest, tmp_path: Path, warehouse: Path) -> MakeBackfill:
    """The MakeBackfill factory on the current backend."""
    return _factory(backend.name, tmp_path, warehouse, request.getfixturevalue(backend.session_fixture))


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server (Debian's package) on loopback, for the shared state store."""
    import shutil
    import socket
    import subprocess

    pg = _pg_bin()
    if pg is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is missing in CI: .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL server not installed (apt-get install postgresql)")
    import tempfile

    # Not under pytest's tmp dir: its parents are private to root, and the server runs as postgres.
    data = Path(tempfile.mkdtemp(prefix="sb-pg-")) / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        shutil.chown(data.parent, "postgres")
    subprocess.run(
        [*as_pg, str(pg / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"], check=True, capture_output=True
    )
    subprocess.run(
        [
            *as_pg,
            str(pg / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(data.parent / "log"),
            "-o",
            f"-h 127.0.0.1 -p {port} -k {data.parent}",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_pg, str(pg / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(data.parent, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared-state.db'}"
    return str(request.getfixturevalue("postgres_url"))


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
