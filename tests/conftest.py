"""One Spark session per test process, tiny data, few shuffle partitions, UI off.

Classic Spark (Iceberg) tests and Sail (Delta over Spark Connect) tests cannot share a
process, so the Sail ones carry the `sail` marker and run in their own pytest call.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
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


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


def base_config(fmt: str, warehouse: Path, **overrides: Any) -> dict[str, Any]:
    ns = "t" + uuid.uuid4().hex[:10]
    if fmt == "iceberg":
        live = f"local.{ns}.events"
        spark: dict[str, Any] = {
            "master": "local[2]",
            "warehouse": str(warehouse),
            "conf": {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        }
    else:
        live = str(warehouse / ns / "events")
        spark = {"remote": "sail", "warehouse": str(warehouse)}
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


def _factory(fmt: str, tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
    def make(seed_live: bool = True, **overrides: Any) -> Backfill:
        data = base_config(fmt, warehouse, **overrides)
        data.setdefault("state", {"url": f"sqlite:///{tmp_path / ('state-' + uuid.uuid4().hex[:6] + '.db')}"})
        path = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(data))
        bf = Backfill(load_config(path), spark=spark)
        bf.config_path = path  # type: ignore[attr-defined]
        if seed_live:
            seed(bf)
        return bf

    return make


def seed(bf: Backfill, start: str = START, end: str = END) -> None:
    """Create the live table with the v1 transform over the test range."""
    import sb_test_transforms as t

    keys = bf.scheme.expand(start, end)
    df = t.events(bf.spark, [bf.scheme.value(k) for k in keys])
    fmt = bf.table_format
    fmt.create(bf.live_table, df.schema, ["ds"])
    fmt.overwrite_partitions(bf.live_table, df, keys)


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[Any]:
    from shadow_backfill.config import parse_config
    from shadow_backfill.session import open_session

    cfg = parse_config(base_config("iceberg", warehouse), base_dir=warehouse)
    session = open_session(cfg)
    yield session
    session.stop()


@pytest.fixture
def make_backfill(tmp_path: Path, warehouse: Path, spark: Any) -> MakeBackfill:
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

    cfg = parse_config(base_config("delta", warehouse), base_dir=warehouse)
    session = open_session(cfg)
    yield session
    session.stop()


@pytest.fixture
def make_delta_backfill(tmp_path: Path, warehouse: Path, sail_spark: Any) -> MakeBackfill:
    return _factory("delta", tmp_path, warehouse, sail_spark)


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
