"""Fixtures of every tier, and the rules of a test process.

Three tiers, one folder and one marker each (given here by folder): `unit` (tests/unit: no
PySpark imported at all, seconds), `formats` (tests/formats: the contract every TableFormat
keeps, on every backend) and `e2e` (tests/e2e: the user's paths through the CLI and the API).
`smoke` marks the one end-to-end scenario the second Spark line runs per backend.

One Spark session per test process, tiny data, few shuffle partitions, UI off.

What runs where. The coverage promise: every behaviour is tested on every backend where the
backend can change its outcome, not every test on every backend. A test that takes `backend`
(or `make`, built on it) is parametrized over every table backend (support/backends.py):
Iceberg, Delta and Parquet on classic Spark (`classic` marker), Delta and Parquet over Spark
Connect against Sail (`sail`), Iceberg and Delta over a real Spark Connect server (`connect`,
Spark 4), and Iceberg, Delta and Parquet-by-name with their tables on a real S3-compatible
server (`s3`, `store` tests only). Which of those a test keeps is one pure rule,
`support.selection.keeps` (its docstring gives the reasons; tests/unit/test_selection.py holds
it): the contract clauses of `tests/formats` on every backend, an e2e test once per engine unless
marked `every_backend` (the format decides its outcome), without the pairs that only repeat
another (`every_pair` keeps those too), and on the bucket once unless the format decides.

One process holds one kind of Spark session, so each group runs in its own pytest call
(`-m "not sail and not cluster and not connect and not s3"`, `-m sail`, `-m connect`, `-m s3`,
`-m cluster`); a backend's session fixture is only created when a test of that backend runs.
Adding a backend = one `Backend` subclass and one `pytest.param` in `BACKENDS` (plus its module
in shadow_backfill/formats/).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

from support import class_archive, selection  # noqa: E402
from support.backends import BACKENDS, Backend  # noqa: E402
from support.metastore_server import DerbyServer, pyspark_derby  # noqa: E402
from support.object_store import BUCKET, OBJECT_STORE, SeaweedS3  # noqa: E402
from support.processes import metastore_conf, remove_killed_scratch  # noqa: E402
from support.settings import (  # noqa: E402
    CLI_JVM,
    CONNECT,
    JARS,
    S3_CATALOG,
    S3_METASTORE,
    STORE,
    TEST_CONF,
    TEST_JVM_OPTIONS,
    MakeBackfill,
    base_config,
    factory,
)

CLASSIC = "not sail and not cluster and not connect and not s3"  # the classic group's -m expression
TIERS = ("unit", "formats", "e2e", "airflow")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets its tier's marker from its folder, before `-m` selects (tryfirst); then
    `support.selection.keeps` decides which backends it runs on (the coverage promise)."""
    kept, dropped = [], []
    # `SB_BACKENDS=iceberg,delta-sail`: only these backends (and the tests with none); the inner
    # loop (`nox -s changed`) runs one backend per engine this way
    only = frozenset(b for b in os.environ.get("SB_BACKENDS", "").split(",") if b)
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        params = getattr(getattr(item, "callspec", None), "params", {})
        be = params.get("backend")
        candidate = selection.Candidate(
            tier=tier,
            backend=be.name if isinstance(be, Backend) else None,
            markers=frozenset(m.name for m in item.iter_markers()),
            postgres=params.get("state_url") == "postgresql",
        )
        (kept if selection.keeps(candidate, only) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _session_kind(item: pytest.Item) -> str | None:
    if item.get_closest_marker("cluster"):
        return "cluster"
    if item.get_closest_marker("sail"):
        return "sail"
    if item.get_closest_marker("connect"):
        return "connect"
    if item.get_closest_marker("s3"):
        return "s3"
    if item.get_closest_marker("classic") or "spark" in getattr(item, "fixturenames", ()):
        return "classic"
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse a selection that would open two kinds of Spark session in one process (runs after
    `-m` deselected items)."""
    kinds = sorted({k for item in session.items if (k := _session_kind(item)) is not None})
    if len(kinds) > 1:
        raise pytest.UsageError(
            f"this selection needs {' and '.join(kinds)} Spark sessions, and one process holds one kind: "
            f'run the groups apart (-m "{CLASSIC}", -m sail, -m connect, -m cluster; nox -s tests-spark4)'
        )


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


def _link_jars(session: Any, folder: Path) -> None:
    """The jars Spark resolved for this session (`spark.jars` lists them once Ivy is done)."""
    jars = [j.removeprefix("file://") for j in session.sparkContext.getConf().get("spark.jars", "").split(",") if j]
    for jar in jars:
        (folder / Path(jar).name).symlink_to(jar)
    if jars:
        JARS["dir"] = str(folder)


REST_FIXTURE = TESTS / "fixtures" / "iceberg_rest"


def _test_cache() -> Path:
    return Path(os.environ.get("SB_TEST_CACHE", Path.home() / ".cache" / "shadow-backfill"))


def _maven_jar(coordinate: str) -> Path:
    """One jar fetched by Maven into the test cache (a JVM's own class path needs a file; Spark's
    Ivy resolution gives one only once the JVM runs). Maven's repository stays in that cache
    too (see `_rest_fixture_jars`)."""
    _, artifact, version = coordinate.split(":")
    cache = _test_cache()
    jar = cache / "jars" / f"{artifact}-{version}.jar"
    if not jar.exists():
        cmd = ["mvn", "-q", f"-Dmaven.repo.local={cache / 'maven-repository'}", "dependency:copy"]
        cmd += [f"-Dartifact={coordinate}", f"-DoutputDirectory={jar.parent}"]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.CalledProcessError) as exc:
            pytest.fail(f"could not fetch {coordinate} with Maven ({' '.join(cmd)}): {exc}")
    return jar


def _rest_fixture_jars() -> Path:
    """Iceberg's REST catalog test fixtures and their dependencies (pom.xml beside the launcher),
    fetched once by Maven into a cache folder outside the checkout.

    Maven keeps its own repository in that cache too, never in ~/.m2: Spark's Ivy resolution
    reads ~/.m2 first, and Maven leaves there the poms of versions it did not pick, without
    their jars; Ivy then takes such a pom for the module and fails on the missing jar (seen on a
    fresh machine: PySpark 4.1 could not start once this fixture had run, slf4j-api 2.0.13)."""
    cache = _test_cache()
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


# The JDBC driver of the `s3` group's Iceberg catalog (the user's own package: it joins the tool's).
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.51.1.0"


def _shared_metastore(home: Path) -> DerbyServer:
    """The `s3` group's Hive metastore (`support.metastore_server`), stopped when the group ends."""
    version, _ = pyspark_derby()
    server = DerbyServer.start(home, _maven_jar(f"org.apache.derby:derbynet:{version}"))
    S3_METASTORE.update(server.hive_conf(_maven_jar(f"org.apache.derby:derbyclient:{version}")))
    return server


def _classic_session(kind: str, warehouse: Path, extra: dict[str, str], jars: Path) -> Any:
    """One classic session for both classic formats of `kind` (`iceberg`, or `iceberg-s3`): the
    Iceberg config's session with delta-spark's jars, extension and catalog added, and `extra`."""
    from shadow_backfill.config import parse_config
    from shadow_backfill.formats import format_class
    from shadow_backfill.session import open_session, session_settings

    engine = kind.partition("-")[2]
    data = base_config(kind, warehouse)
    iceberg = format_class("iceberg").session_conf(session_settings(parse_config(data, base_dir=warehouse)))
    delta_config = parse_config(base_config("delta" + (f"-{engine}" if engine else ""), warehouse), base_dir=warehouse)
    delta = format_class("delta").session_conf(session_settings(delta_config))
    data["spark"]["conf"].update(
        {
            **delta,
            "spark.jars.packages": f"{iceberg['spark.jars.packages']},{delta['spark.jars.packages']}",
            "spark.sql.extensions": f"{iceberg['spark.sql.extensions']},{delta['spark.sql.extensions']}",
        }
    )
    packages = ",".join(
        p for p in (data["spark"]["conf"]["spark.jars.packages"], extra.get("spark.jars.packages")) if p
    )
    data["spark"]["conf"].update({**extra, "spark.jars.packages": packages})
    session = open_session(parse_config(data, base_dir=warehouse))
    _link_jars(session, jars)
    return session


def _use_class_archive(tmp_path_factory: pytest.TempPathFactory) -> None:
    """CLI processes the tests start load their classes from an archive of this session's jars."""
    if "dir" in JARS:
        archive_warehouse = tmp_path_factory.mktemp("class-archive")
        CLI_JVM["spark.driver.extraJavaOptions"] = class_archive.java_options(JARS["dir"], archive_warehouse)


def _no_other_session(group: str) -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and "connect" in type(active).__module__:
        pytest.fail(f"classic Spark tests must run in their own process: pytest -m {group!r}")


@pytest.fixture(scope="session")
def spark(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _no_other_session(CLASSIC)
    session = _classic_session("iceberg", warehouse, metastore_conf(warehouse), tmp_path_factory.mktemp("jars"))
    _use_class_archive(tmp_path_factory)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def object_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    """The `s3` group's S3-compatible server on loopback (`support.object_store`)."""
    try:
        server = SeaweedS3.start(tmp_path_factory.mktemp("seaweedfs"))
    except RuntimeError as exc:
        pytest.fail(str(exc))
    OBJECT_STORE["server"] = server
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_spark(
    warehouse: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """A classic session whose tables live on a real S3-compatible server on loopback
    (SeaweedFS, `support.object_store`): Delta by `s3a://` path, Iceberg in catalog `lake` with
    its warehouse on the bucket, Parquet by name in a Hive metastore that CLI processes share
    (`support.metastore_server`). The tool adds Hadoop's s3a connector (`hadoop-aws` of this
    Spark line) because the settings name s3a, as it does for a user."""
    _no_other_session("s3")
    server = request.getfixturevalue("object_store")
    catalog = f"spark.sql.catalog.{S3_CATALOG}"
    STORE.update(server.spark_conf())
    # A JDBC catalog (SQLite) commits by a conditional update of the table's pointer: atomic on
    # an object store, unlike the Hadoop catalog's rename.
    STORE.update({catalog: "org.apache.iceberg.spark.SparkCatalog", f"{catalog}.type": "jdbc"})
    STORE[f"{catalog}.uri"] = f"jdbc:sqlite:{tmp_path_factory.mktemp('iceberg-catalog') / 'catalog.db'}"
    STORE[f"{catalog}.jdbc.schema-version"] = "V1"  # the current schema (V0 has no views)
    STORE[f"{catalog}.warehouse"] = f"s3a://{BUCKET}/iceberg"
    try:
        metastore = _shared_metastore(tmp_path_factory.mktemp("metastore"))
    except RuntimeError as exc:
        pytest.fail(str(exc))
    request.addfinalizer(metastore.stop)
    extra = {**S3_METASTORE, "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS, "spark.jars.packages": SQLITE_JDBC}
    session = _classic_session("iceberg-s3", warehouse, extra, tmp_path_factory.mktemp("jars"))
    _use_class_archive(tmp_path_factory)
    yield session
    session.stop()


@pytest.fixture(scope="session", autouse=True)
def _suite_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The suites GX accepted (`validate.suite_cache`) are kept in the run's own folder, not the
    user's cache, for this process and the CLI processes it starts."""
    os.environ["SHADOW_BACKFILL_CACHE_DIR"] = str(tmp_path_factory.mktemp("checked-suites"))


@pytest.fixture(autouse=True)
def _remove_killed_scratch() -> Iterator[None]:
    """After each test, the Spark scratch of CLI processes it started (`killable_cli_env`)."""
    yield
    remove_killed_scratch()


@pytest.fixture
def make_backfill(tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
    """Iceberg on classic Spark only: for tests of classic-only behaviour (most take `make`)."""
    return factory("iceberg", tmp_path, warehouse, spark)


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
        server, CONNECT["url"], CONNECT["ui"] = connect_server.start(warehouse, log, TEST_CONF)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    session = open_session(parse_config(base_config("delta-connect", warehouse), base_dir=warehouse))
    yield session
    session.stop()
    server.terminate()
    server.wait(timeout=60)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn; its Spark session is opened here, only when one of its tests runs."""
    be: Backend = request.param
    request.getfixturevalue(be.session_fixture)
    return be


@pytest.fixture
def make(backend: Backend, request: pytest.FixtureRequest, tmp_path: Path, warehouse: Path) -> MakeBackfill:
    """The MakeBackfill factory on the current backend."""
    return factory(backend.name, tmp_path, warehouse, request.getfixturevalue(backend.session_fixture))


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server (Debian's package) on loopback, for the shared state store."""
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
