"""The table backends and what a test may know about each.

Which tests run on which backend is one rule, `support.selection.keeps`: every backend runs the
contract clauses of tests/formats, an end-to-end test runs once per engine unless the format
decides its outcome, and the S3 backends run only `store` tests."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.object_store import BUCKET, OBJECT_STORE
from support.settings import CONNECT, METASTORE_S3, S3_CATALOG

if TYPE_CHECKING:
    from shadow_backfill import Backfill


@dataclass(frozen=True, kw_only=True)
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
    catalog = "local"  # the Hadoop catalog the backend's tables are in

    def alias(self, bf: Backfill) -> str:
        """The same table through a second catalog over the same warehouse."""
        spark = bf.spark
        same = {
            k: spark.conf.get(f"spark.sql.catalog.{self.catalog}{k}", None) for k in (".type", ".uri", ".warehouse")
        }
        for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", **{k: v for k, v in same.items() if v}}.items():
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


class OnBucket(Backend):
    """A backend whose tables are objects on the `s3` group's bucket (SeaweedFS), read and
    deleted here through the store's own S3 API, not Spark."""

    def delete_data_files(self, bf: Backfill, table: str) -> None:
        files = self.data_files(bf, table)
        assert files, f"{table} has no data files to delete"
        store_filesystem().delete_files([str(f) for f in files])


class IcebergS3(OnBucket, IcebergClassic):
    """Iceberg in a JDBC catalog (SQLite) whose warehouse is on the S3 bucket."""

    catalog = S3_CATALOG

    def alias(self, bf: Backfill) -> str:
        """The same table registered under a second name of the catalog (its current metadata
        file): a JDBC catalog keeps its tables under its own name, so a second catalog over the
        same database would not see them."""
        live = bf.live_table
        ns = live.split(".")[1]
        entries = bf.spark.table(f"{live}.metadata_log_entries").orderBy("timestamp", ascending=False)
        metadata = entries.first()["file"]  # type: ignore[index]
        alias = f"{ns}.events_alias"
        bf.spark.sql(f"CALL {self.catalog}.system.register_table(table => '{alias}', metadata_file => '{metadata}')")
        return f"{self.catalog}.{alias}"

    def location(self, bf: Backfill, table: str) -> Path:
        _, *parts = table.split(".")
        warehouse = bf.spark.conf.get(f"spark.sql.catalog.{self.catalog}.warehouse")
        return Path(warehouse.removeprefix("s3a://")).joinpath(*parts)

    def commits(self, bf: Backfill, table: str) -> int:
        return len(objects(self.location(bf, table) / "metadata", lambda name: name.endswith(".metadata.json")))

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        return objects(self.location(bf, table) / "data", lambda name: name.endswith(".parquet"))


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


class DeltaS3(OnBucket, DeltaPaths):
    """Delta tables by `s3a://` path on the S3 bucket."""

    def alias(self, bf: Backfill) -> str:
        """The same prefix by another spelling: a `..` segment (Hadoop's Path resolves it)."""
        parent, _, name = bf.live_table.rpartition("/")
        return f"{parent}/../{parent.rpartition('/')[2]}/{name}"

    def location(self, bf: Backfill, table: str) -> Path:
        return Path(bf.table_format.path(table).removeprefix("s3a://"))  # type: ignore[attr-defined]

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        found = objects(self.location(bf, table), lambda name: name.endswith(".parquet"))
        return [f for f in found if "_delta_log" not in f.parts]

    def drop(self, bf: Backfill, table: str) -> None:
        store_filesystem().delete_dir(str(self.location(bf, table)))

    def commits(self, bf: Backfill, table: str) -> int:
        return len(objects(self.location(bf, table) / "_delta_log", lambda name: name.endswith(".json")))


class ParquetMetastoreS3(OnBucket, Backend):
    """Parquet tables by name in the `s3` group's Hive metastore (a Derby server), in databases
    whose location is on the bucket: the folder log lies on the bucket beside the data."""

    def alias(self, bf: Backfill) -> str:
        """The same table through the session catalog's own name."""
        return f"spark_catalog.{bf.live_table}"

    def inside(self, bf: Backfill) -> str:
        """A table of a database whose location is a folder inside live's."""
        ns = "n" + uuid.uuid4().hex[:10]
        where = f"{bf.table_format.path(bf.live_table)}/nested"  # type: ignore[attr-defined]
        bf.spark.sql(f"CREATE DATABASE {ns} LOCATION '{where}'")
        return f"{ns}.events"

    def location(self, bf: Backfill, table: str) -> Path:
        return Path(bf.table_format.path(table).removeprefix("s3a://"))  # type: ignore[attr-defined]

    def data_files(self, bf: Backfill, table: str) -> list[Path]:
        return objects(self.location(bf, table), lambda name: name.endswith(".parquet"))

    def drop(self, bf: Backfill, table: str) -> None:
        bf.spark.sql(f"DROP TABLE {table}")

    def commits(self, bf: Backfill, table: str) -> int:
        log = self.location(bf, table) / "_shadow_backfill" / "log"
        return len(objects(log, lambda name: name.endswith(".json")))

    def refresh(self, bf: Backfill) -> None:
        """Another process switched partitions in the metastore: this session's cached listing
        of them is stale."""
        for table in (bf.live_table, bf.shadow_table):
            if bf.spark.catalog.tableExists(table):
                bf.spark.catalog.refreshTable(table)


def store_filesystem() -> Any:
    """The `s3` group's bucket seen through its own S3 API (pyarrow), not through Spark."""
    return OBJECT_STORE["server"].filesystem()


def objects(prefix: Path, keep: Callable[[str], bool]) -> list[Path]:
    """The objects under `prefix` (bucket/key...) whose name `keep` accepts, sorted."""
    from pyarrow import fs

    infos = store_filesystem().get_file_info(fs.FileSelector(str(prefix), recursive=True, allow_not_found=True))
    return sorted(Path(i.path) for i in infos if i.type == fs.FileType.File and keep(i.base_name))


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


# An overwrite must refuse rows for partitions it was not asked to write (they would land in
# live unvalidated and unrecorded); only the runner's own check keeps them out today.
ICEBERG_STRAY = ("stray_rows_accepted", "DataFrameWriterV2.overwrite(condition) commits rows outside the condition")
SAIL_STRAY = ("stray_rows_accepted", "Sail's replaceWhere commits rows outside the predicate (delta-spark refuses)")

# Each backend as keyword arguments: what a test can rely on, by name.
CLASSIC_ERROR, SAIL_ERROR, CONNECT_ERROR = "Py4JJavaError", "QueryExecutionException", "SparkException"
MISSING_PATH, MISSING_NAME = "/nonexistent/table", "local.nonexistent.table"
ICEBERG = IcebergClassic(
    name="iceberg",
    format="iceberg",
    session_fixture="spark",
    missing_table=MISSING_NAME,
    engine_error=CLASSIC_ERROR,
    gaps=(ICEBERG_STRAY,),
)
DELTA = DeltaPaths(
    name="delta", format="delta", session_fixture="spark", missing_table=MISSING_PATH, engine_error=CLASSIC_ERROR
)
# Plain Parquet keeps no list of files: files deleted from a live folder are another writer's
# change, which the format adopts as a version of its own (test_parquet_folders.py).
NO_FILE_LIST = (("listed_files_gone", "a folder table lists no files; deleted files are another writer's change"),)
PARQUET = ParquetPaths(
    name="parquet",
    format="parquet",
    session_fixture="spark",
    missing_table=MISSING_PATH,
    engine_error=CLASSIC_ERROR,
    inapplicable=NO_FILE_LIST,
)
DELTA_SAIL = DeltaPaths(
    name="delta-sail",
    format="delta",
    session_fixture="sail_spark",
    missing_table=MISSING_PATH,
    engine_error=SAIL_ERROR,
    gaps=(SAIL_STRAY,),
)
PARQUET_SAIL = ParquetPaths(
    name="parquet-sail",
    format="parquet",
    session_fixture="sail_spark",
    missing_table=MISSING_PATH,
    engine_error=SAIL_ERROR,
    inapplicable=NO_FILE_LIST,
)
# Spark 4.1's Connect server drops named SQL parameters when Iceberg's or Delta's SQL extension
# parser is installed, even with the legacy binding setting that mends classic Spark 4.1.
SQL_PARAMS_GAP = ("sql_parameters", "Spark 4.1 Connect with the Iceberg/Delta parsers leaves :partition unbound")
ICEBERG_CONNECT = IcebergClassic(
    name="iceberg-connect",
    format="iceberg",
    session_fixture="connect_spark",
    missing_table=MISSING_NAME,
    engine_error=CONNECT_ERROR,
    gaps=(SQL_PARAMS_GAP, ICEBERG_STRAY),
    server_outlives_client=True,
)
DELTA_CONNECT = DeltaPaths(
    name="delta-connect",
    format="delta",
    session_fixture="connect_spark",
    missing_table=MISSING_PATH,
    engine_error=CONNECT_ERROR,
    gaps=(SQL_PARAMS_GAP,),
    server_outlives_client=True,
)
# The `s3` group: the formats whose commits are atomic on an object store, their warehouse on a
# real S3-compatible server on loopback (SeaweedFS), on classic Spark with Hadoop's s3a.
ICEBERG_S3 = IcebergS3(
    name="iceberg-s3",
    format="iceberg",
    session_fixture="s3_spark",
    missing_table=f"{S3_CATALOG}.nonexistent.table",
    engine_error=CLASSIC_ERROR,
    gaps=(ICEBERG_STRAY,),
)
DELTA_S3 = DeltaS3(
    name="delta-s3",
    format="delta",
    session_fixture="s3_spark",
    missing_table=f"s3a://{BUCKET}/nonexistent/table",
    engine_error=CLASSIC_ERROR,
)
PARQUET_METASTORE_S3 = ParquetMetastoreS3(
    name=METASTORE_S3,
    format="parquet",
    session_fixture="s3_spark",
    missing_table="nonexistent_db.events",
    engine_error=CLASSIC_ERROR,
    inapplicable=NO_FILE_LIST,
)
BACKENDS = [
    pytest.param(ICEBERG, id=ICEBERG.name, marks=pytest.mark.classic),
    pytest.param(DELTA, id=DELTA.name, marks=pytest.mark.classic),
    pytest.param(PARQUET, id=PARQUET.name, marks=pytest.mark.classic),
    pytest.param(DELTA_SAIL, id=DELTA_SAIL.name, marks=pytest.mark.sail),
    pytest.param(PARQUET_SAIL, id=PARQUET_SAIL.name, marks=pytest.mark.sail),
    pytest.param(ICEBERG_CONNECT, id=ICEBERG_CONNECT.name, marks=pytest.mark.connect),
    pytest.param(DELTA_CONNECT, id=DELTA_CONNECT.name, marks=pytest.mark.connect),
    pytest.param(ICEBERG_S3, id=ICEBERG_S3.name, marks=pytest.mark.s3),
    pytest.param(DELTA_S3, id=DELTA_S3.name, marks=pytest.mark.s3),
    pytest.param(PARQUET_METASTORE_S3, id=PARQUET_METASTORE_S3.name, marks=pytest.mark.s3),
]
