"""Parquet tables by name in the session catalog (Hive metastore, `PARTITIONED BY`): readers are
switched by each partition's location, so no data folder is ever renamed.

A generation's folders stay where Spark wrote them (`<table location>/_shadow_backfill/gen/<id>/`);
a switch points each metastore partition at its new folder (`ALTER TABLE … PARTITION (…) SET
LOCATION`), adds partitions that are new and drops cleared ones after pointing them at an empty
folder (a managed table's DROP PARTITION deletes the partition's folder, which must stay as the
rollback target). A metastore reader never sees a partition absent or half written; each
partition flips atomically, and a killed switch is finished by the next command from the journal.
Partition values reach SQL only as typed literals rendered from parsed values.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import uuid
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.folder_files import folder_text
from shadow_backfill.formats.folder_placements import PlacedLog
from shadow_backfill.formats.folder_versions import Folder, Version
from shadow_backfill.partitions import PartitionValue, quote_identifier, sql_literal


def quoted_name(name: str) -> str:
    return ".".join(quote_identifier(part) for part in name.split("."))


def _local_or_uri(location: str) -> str:
    """A catalog's location as the folder log spells paths: a local one without `file:` and
    normalized (as the log has always recorded it), a URI as it is."""
    if location.startswith("file:/"):
        location = location.removeprefix("file:")
    return str(Path(location)) if location.startswith("/") else location


def table_location(spark: SparkSession, name: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quoted_name(name)}").collect()
    for r in rows:
        if r["col_name"] == "Location":
            return _local_or_uri(str(r["data_type"]))
    raise ConfigError(f"Parquet table {name!r} has no location in the catalog")


def _typed(text: str, spark_type: str) -> PartitionValue:
    """A partition value parsed from its folder text by the column's type (for a typed literal)."""
    if spark_type == "date":
        return dt.date.fromisoformat(text)
    if spark_type == "timestamp":
        return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    if spark_type in ("int", "bigint", "smallint", "tinyint"):
        return int(text)
    if spark_type == "string":
        return text
    raise ConfigError(f"partition columns of type {spark_type} are not supported on metastore Parquet tables")


class MetastorePlacement:
    """Switches the partitions of one metastore table by location (see the module docstring)."""

    located = True

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark = spark
        self.name = name
        self._types: dict[str, str] | None = None
        self._columns: list[str] | None = None

    def _schema(self) -> tuple[dict[str, str], list[str]]:
        if self._types is None or self._columns is None:
            table = self.spark.table(self.name)
            self._types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
            self._columns = [c.name for c in self.spark.catalog.listColumns(self.name) if c.isPartition]
        return self._types, self._columns

    def spec(self, path: str) -> str:
        """`PARTITION (ds = DATE'2024-01-01', …)` for a partition path `ds=2024-01-01/…`."""
        types, _ = self._schema()
        parts = []
        for segment in path.split("/"):
            column, _, _ = segment.partition("=")
            text = folder_text(segment)
            if column not in types or text is None:
                raise ConfigError(f"{segment!r} is not a partition of {self.name}")
            parts.append(f"{quote_identifier(column)} = {sql_literal(_typed(text, types[column]))}")
        return f"PARTITION ({', '.join(parts)})"

    def _partitions(self) -> list[str]:
        return [str(r[0]) for r in self.spark.sql(f"SHOW PARTITIONS {quoted_name(self.name)}").collect()]

    def _location(self, partition: str) -> str:
        rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {quoted_name(self.name)} {self.spec(partition)}").collect()
        for r in rows:
            if r["col_name"] == "Location":
                return _local_or_uri(str(r["data_type"]))
        raise ConfigError(f"partition {partition} of {self.name} has no location")

    def _leaves(self, log: PlacedLog, folder: str) -> list[str]:
        """Partition paths below a folder, relative to it ("" for a one-column table)."""
        _, columns = self._schema()
        level = [""]
        for column in columns[1:]:
            below = []
            for rel in level:
                base = posixpath.join(folder, rel)
                if not log.files.is_dir(base):
                    raise FileNotFoundError(f"partition folder {base} is missing")  # never taken as empty
                below += [
                    f"{rel}/{n}".lstrip("/") for n, d in log.files.children(base) if d and n.startswith(f"{column}=")
                ]
            level = below
        return level

    def current(self, log: PlacedLog, latest: Version | None) -> dict[str, str]:
        out: dict[str, str] = {}
        for partition in self._partitions():
            name, _, rest = partition.partition("/")
            if name in out:
                continue
            known = latest.folders.get(name) if latest is not None else None
            if known is not None and known.location is not None:
                out[name] = known.location
                continue
            folder = self._location(partition)
            for _ in range(rest.count("/") + 1 if rest else 0):  # from the leaf up to the first column's folder
                folder = posixpath.dirname(folder)
            out[name] = folder
        return out

    def switch(self, log: PlacedLog, name: str, old: Folder | None, new: Folder | None, version: int) -> None:
        table = quoted_name(self.name)
        kept: set[str] = set()
        if new is not None and new.location is not None:
            for leaf in self._leaves(log, new.location):
                path = f"{name}/{leaf}".rstrip("/")
                where = sql_literal(posixpath.join(new.location, leaf).rstrip("/"))
                self.spark.sql(f"ALTER TABLE {table} ADD IF NOT EXISTS {self.spec(path)} LOCATION {where}")
                self.spark.sql(f"ALTER TABLE {table} {self.spec(path)} SET LOCATION {where}")
                kept.add(path)
        if old is None or old.location is None or not log.files.exists(old.location):
            return
        existing = set(self._partitions())
        for leaf in self._leaves(log, old.location):
            path = f"{name}/{leaf}".rstrip("/")
            if path in kept or path not in existing:
                continue
            empty = posixpath.join(log.meta, "empty", uuid.uuid4().hex)
            log.files.make_dirs(empty)
            self.spark.sql(f"ALTER TABLE {table} {self.spec(path)} SET LOCATION {sql_literal(empty)}")
            self.spark.sql(f"ALTER TABLE {table} DROP IF EXISTS {self.spec(path)}")

    def settled(self) -> None:
        self.spark.catalog.refreshTable(self.name)


def create_table(spark: SparkSession, name: str, schema: StructType, partition_columns: list[str]) -> None:
    """An empty managed Parquet table partitioned Hive-style, as its owner would create it."""
    from shadow_backfill.formats.base import empty_frame

    empty_frame(spark, schema).write.format("parquet").partitionBy(*partition_columns).saveAsTable(name)
