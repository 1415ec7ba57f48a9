"""Hive-style Parquet tables: datasets by path (`/warehouse/events/ds=2024-01-01/part-*.parquet`)
and metastore tables by name (`db.events`, `PARTITIONED BY`).

The seeds' mechanism, `partitionOverwriteMode=dynamic` into the live folders, overwrites data in
place with no way back and no atomic multi-partition commit. Here a write never touches live
data: it goes to a fresh generation folder, and the commit switches readers to it (a path
dataset's folders by rename; a metastore table's partitions by location, see
`parquet_metastore.py`), journaled in `folder_log.py` so that a killed switch is finished by the
next command.
The replaced folders are kept as the rollback target until `gc` deletes them after
`promote.retention_days`. Any other reader keeps reading plain `col=value/` folders.

The backfill column must be the first partition column (its folders hold the others).

This module is the `TableFormat` interface over two of its own: where a table may lie
(`parquet_paths.py`), and the versions the format records and reads back (`parquet_versions.py`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from shadow_backfill.errors import RefusedError
from shadow_backfill.formats.base import Bound, Commit, PartitionFacts, TableFormat, TableIdentity, user_jars
from shadow_backfill.formats.folder_files import LOCAL_FILES, FileStore
from shadow_backfill.formats.folder_log import FolderLog
from shadow_backfill.formats.folder_versions import Folder, Version
from shadow_backfill.formats.locations import normalize_location
from shadow_backfill.formats.object_files import S3Files, bucket_of, on_s3, s3_client
from shadow_backfill.formats.parquet_metastore import MetastorePlacement, create_table, quoted_name, table_location
from shadow_backfill.formats.parquet_paths import dataset_path, is_name, named_table_path, nested_names
from shadow_backfill.formats.parquet_versions import (
    ParquetConflict,
    VersionExpired,
    check_columns,
    first_version,
    read_folders,
    schema_of,
    synced,
    touched_since,
    widened,
)
from shadow_backfill.formats.settings import S3A_SETTINGS, SessionSettings
from shadow_backfill.partitions import PartitionScheme

# The refusals a caller may catch stay importable from the format's own module.
__all__ = ["ParquetConflict", "ParquetFormat", "VersionExpired"]


class ParquetFormat(TableFormat):
    name = "parquet"
    validates_conflicts = True

    def __init__(self, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> None:
        super().__init__(spark, scheme, base_dir)
        self._logs: dict[str, FolderLog] = {}
        self._locations: dict[str, str] = {}  # metastore table name -> its location
        # table folder -> the versions pinned for reads, innermost last (promotions of one
        # Backfill object in several threads each pin the shadow: shared locks, one stack)
        self._pins: dict[str, list[Version]] = {}
        self._s3: dict[str, S3Files] = {}  # bucket -> its store (s3a's settings may differ by bucket)

    @classmethod
    def session_conf(cls, settings: SessionSettings) -> dict[str, str]:
        """No runtime to fetch; a folder of jars the user brings (`spark.jars_dir`: the S3
        connector, a metastore's driver) is loaded as for the other formats."""
        jars = user_jars(settings)
        return {} if jars is None else {"spark.jars": jars}

    is_name = staticmethod(is_name)

    def path(self, table: str) -> str:
        """The folder holding the table: a path as given (relative to the config's folder), or the
        location the metastore holds for a name."""
        if self.is_name(table):
            if table not in self._locations:
                if not self.spark.catalog.tableExists(table):
                    raise LookupError(f"Parquet table {table!r} does not exist in the Spark catalog")
                self._locations[table] = table_location(self.spark, table)
            return named_table_path(table, self._locations[table])
        return dataset_path(table, self.base_dir)

    def _files(self, path: str) -> FileStore:
        """The store a table's folders and log lie in: a local or mounted file system, or S3 for
        a table by name (`path` refuses the others)."""
        if not on_s3(path):
            return LOCAL_FILES
        bucket = bucket_of(path)
        if bucket not in self._s3:
            self._s3[bucket] = S3Files(s3_client(self._s3a_setting, bucket), self._lock_service)
        return self._s3[bucket]

    def _s3a_setting(self, key: str) -> str | None:
        """Hadoop's `fs.s3a.<key>` as the session holds it: the settings the user gives Spark."""
        value = self.spark.conf.get(f"{S3A_SETTINGS}{key}", None)
        return None if value is None else str(value)

    def _log(self, table: str) -> FolderLog:
        path = self.path(table)
        if path not in self._logs:
            placement = MetastorePlacement(self.spark, table) if self.is_name(table) else None
            key_of = self.scheme.key_from_column_text
            self._logs[path] = FolderLog(path, self.scheme.column, key_of, placement, self._files(path))
        return self._logs[path]

    def refresh(self, table: str) -> None:
        if self.is_name(table) and self.spark.catalog.tableExists(table):
            self.spark.catalog.refreshTable(table)

    def _latest(self, table: str) -> Version:
        """The newest version after settling and adopting other writers' folders; an existing
        dataset the tool has never seen gets version 0 from its folders. Inside `pinned`, the
        pinned version (the log's lock is not taken while pinned: see `FolderLog.moving`)."""
        pinned = self._pins.get(self.path(table))
        if pinned:
            return pinned[-1]
        log = self._log(table)
        if self.read_only:
            return self._as_logged(table, log)
        with log.locked():
            latest = synced(log, lambda found: self._first_version(table, found))
        assert latest is not None
        return latest

    def _as_logged(self, table: str, log: FolderLog) -> Version:
        """A dry run's view: the newest version as the log holds it, nothing settled, adopted or
        locked; a table the tool has never seen, as its first version would record it."""
        latest = log.latest()
        if latest is not None:
            return latest
        return self._first_version(table, log.scan(log.placement.current(log, None), "v0"))

    def _first_version(self, table: str, found: dict[str, Folder]) -> Version:
        if self.is_name(table):
            schema = self.spark.table(table).schema
            columns = [c.name for c in self.spark.catalog.listColumns(table) if c.isPartition]
        elif not found:
            raise LookupError(f"Parquet table {table!r} has no partition folders {self.scheme.column}=...")
        else:
            schema = self.spark.read.parquet(self.path(table)).schema
            nested = nested_names(self._files(self.path(table)), self.path(table))
            columns = [c for c in schema.fieldNames() if any(n.startswith(f"{c}=") for n in nested)]
        check_columns(table, self.scheme.column, columns)
        return first_version("ADOPT", found, schema, columns)

    # ---- introspection ------------------------------------------------------------------------

    def exists(self, table: str) -> bool:
        if self.is_name(table):
            return bool(self.spark.catalog.tableExists(table))
        log = self._log(table)
        return log.has_log() or log.has_folders()

    def schema(self, table: str) -> StructType:
        return schema_of(self._latest(table))

    def partition_facts(self, table: str, column: str) -> PartitionFacts | None:
        """Read from the catalog, the log as written, or (a dataset never seen) Spark's reading of
        the folders, never through `_latest`: settling adopts folders by the scheme, and one not
        settled yet could take every folder for a deleted one."""
        if self.is_name(table):
            if not self.spark.catalog.tableExists(table):
                return None
            schema = self.spark.table(table).schema
        elif (latest := self._log(table).latest()) is not None:
            schema = schema_of(latest)
        elif self._has_folders_of(self.path(table), column):
            schema = self.spark.read.parquet(self.path(table)).schema
        else:
            return None
        types = {f.name: f.dataType.simpleString() for f in schema.fields}
        return PartitionFacts(types[column]) if column in types else None

    def _has_folders_of(self, path: str, column: str) -> bool:
        return any(name.startswith(f"{column}=") for name, _ in self._files(path).children(path))

    def partition_columns(self, table: str) -> list[str]:
        return list(self._latest(table).partition_columns)

    def current_version(self, table: str) -> int | None:
        return self._latest(table).version

    def history(self, table: str) -> list[Commit]:
        self._latest(table)
        return [
            Commit(v.version, v.timestamp_ms, v.operation, v.properties, v.version - 1 if v.version else None)
            for v in self._log(table).all()
        ]

    def partitions_touched(self, table: str, commit: Commit) -> list[str] | None:
        return list(self._log(table).get(commit.version).touched)

    def partition_row_counts(self, table: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self._latest(table).folders.values():
            counts[f.key] = counts.get(f.key, 0) + f.rows
        return counts

    def identity(self, table: str) -> TableIdentity | None:
        if self.is_name(table) and not self.exists(table):
            return None  # the catalog places a new named table; it cannot be inside live's folder
        latest = self._log(table).latest()
        return TableIdentity(id=latest.table_id if latest else None, location=normalize_location(self.path(table)))

    # ---- reads --------------------------------------------------------------------------------

    @contextmanager
    def pinned(self, table: str) -> Iterator[None]:
        """Folders move on every commit (a path dataset's current data lies at the root, replaced
        data under `gen/`), and a Spark job lists and reads them lazily: a commit by another
        process in between would hand the job other data, or files that are gone. While pinned,
        no commit or `gc` of `table` moves or deletes a folder."""
        path = self.path(table)
        if self.read_only:  # a dry run reads metadata; it must not hold off another writer
            yield
            return
        self._latest(table)  # a dataset the tool has not seen yet gets its first version
        with self._log(table).pinned() as latest:
            stack = self._pins.setdefault(path, [])
            stack.append(latest)
            try:
                yield
            finally:
                stack.remove(latest)
                if not stack:
                    self._pins.pop(path, None)

    def read(self, table: str, version: int | None = None) -> DataFrame:
        return self._frame(table, version, None)

    def read_partitions(self, table: str, keys: Sequence[str], version: int | None = None) -> DataFrame:
        frame = self._frame(table, version, set(keys))
        if version is not None:
            # Remembered so that writing this frame back over the same partitions (a rollback)
            # repoints them to the kept folders instead of copying the data.
            frame._sb_origin = (self.path(table), version, frozenset(keys))  # type: ignore[attr-defined]
        return frame

    def _frame(self, table: str, version: int | None, keys: set[str] | None) -> DataFrame:
        current = self._latest(table)
        at = current if version is None else self._at(table, version)
        return read_folders(self.spark, self._log(table), current, at, keys, f"version {version} of {table} is gone")

    def _at(self, table: str, version: int) -> Version:
        if version not in self._log(table).versions():
            raise RefusedError(f"{table} has no version {version}")
        return self._log(table).get(version)

    # ---- writes -------------------------------------------------------------------------------

    def create(
        self, table: str, schema: StructType, partition_columns: Sequence[str], data: DataFrame | None = None
    ) -> None:
        if self.exists(table):
            raise RefusedError(f"Parquet table {table!r} exists already")
        check_columns(table, self.scheme.column, partition_columns)
        if self.is_name(table):
            create_table(self.spark, table, schema, list(partition_columns))
        log = self._log(table)
        gid, staged = self._stage(table, log, schema, partition_columns, data)
        first = first_version("CREATE", staged, schema, partition_columns)
        with log.locked():
            if log.has_log():
                log.files.delete_tree(log.gen_dir(gid))
                raise RefusedError(f"Parquet table {table!r} exists already")
            log.commit(first)

    def _stage(
        self, table: str, log: FolderLog, schema: StructType, partition_columns: Sequence[str], df: DataFrame | None
    ) -> tuple[str, dict[str, Folder]]:
        """Write `df` to a fresh generation folder (never live's); its partition folders."""
        gid = uuid.uuid4().hex
        target = log.gen_dir(gid)
        if df is not None:
            df.select(*schema.fieldNames()).write.partitionBy(*partition_columns).mode("error").parquet(target)
        return gid, log.staged(gid)

    def drop(self, table: str) -> None:
        path = self.path(table)
        if self.is_name(table):
            self.spark.sql(f"DROP TABLE IF EXISTS {quoted_name(table)}")
            self._locations.pop(table, None)
        self._files(path).delete_tree(path)
        self._logs.pop(path, None)

    def append(self, table: str, df: DataFrame) -> None:
        """As any other writer would: files added straight into the live folders (the next
        command adopts them as a version by another writer)."""
        latest = self._latest(table)
        if self.is_name(table):
            df.select(*self.spark.table(table).columns).write.insertInto(table)
            return
        df.write.mode("append").partitionBy(*latest.partition_columns).parquet(self.path(table))

    def add_columns(self, table: str, fields: Sequence[StructField]) -> None:
        """A version of its own in the folder log, with the wider schema and the same folders
        (and, for a table by name, the metastore's schema first): files written before it have no
        such column, and every read takes the log's schema, so they read as null there. Only what
        each lacks is added: a promotion killed between the two, or another one adding the same
        column at the same time, must not fail the next or add the column twice."""
        if self.is_name(table):
            self.refresh(table)
            have = set(self.spark.table(table).columns)
            if missing := [f for f in fields if f.name not in have]:
                super().add_columns(table, missing)
        log = self._log(table)
        with log.locked():
            latest = synced(log)
            assert latest is not None
            schema = schema_of(latest)
            fresh = [f for f in fields if f.name not in schema.fieldNames()]
            if not fresh:
                return
            log.commit(widened(latest, StructType([*schema.fields, *fresh])))

    def _overwrite(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str], bound: Bound | None
    ) -> None:
        log = self._log(table)
        before = self._latest(table)
        origin = getattr(df, "_sb_origin", None)
        if origin is not None and origin[0] == self.path(table) and origin[2] == frozenset(keys):
            gid, operation = None, "RESTORE"  # the folders as of a version: repointed, not copied
            staged = {n: f for n, f in self._at(table, origin[1]).folders.items() if f.key in set(keys)}
        else:
            schema = schema_of(before)
            gid, staged = self._stage(table, log, schema, before.partition_columns, df)
            operation = "OVERWRITE"
        stray = sorted({f.key for f in staged.values()} - set(keys))
        if stray:
            self._discard(log, gid)
            raise RefusedError(
                f"rows for partitions {stray[:5]} that were not asked for; nothing was written to {table}"
            )
        with log.locked():
            latest = synced(log)
            assert latest is not None
            if bound is not None and touched_since(log, bound.version, keys):
                self._discard(log, gid)
                raise ParquetConflict(f"partitions of {table} changed after version {bound.version}")
            gone = [p for n, f in staged.items() if not log.files.exists(p := log.where(n, f, latest))]
            if gone:
                raise VersionExpired(
                    f"the folders to restore are gone (gc deleted them): {gone[:3]}; nothing was written"
                )
            log.commit(log.next_version(latest, operation, properties, keys, staged))

    @staticmethod
    def _discard(log: FolderLog, gid: str | None) -> None:
        if gid is not None:
            log.files.delete_tree(log.gen_dir(gid))

    def is_validation_conflict(self, exc: BaseException) -> bool:
        return isinstance(exc, ParquetConflict)

    def is_expired(self, exc: BaseException) -> bool:
        return isinstance(exc, VersionExpired)

    # ---- garbage ------------------------------------------------------------------------------

    def collect_garbage(
        self, table: str, older_than_ms: int, dry_run: bool = False, now_ms: int | None = None
    ) -> list[str]:
        log = self._log(table)
        if dry_run or self.read_only:  # the log as it is: no lock taken, nothing settled
            return log.expired(older_than_ms, now_ms)
        with log.locked():
            synced(log)
            expired = log.expired(older_than_ms, now_ms)
            log.delete(expired)
        return expired
