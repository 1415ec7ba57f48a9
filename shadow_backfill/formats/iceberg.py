"""Apache Iceberg tables through a Spark catalog.

Writes use DataFrameWriterV2 `overwrite(condition)` with a condition built from typed
literals: unlike dynamic `overwritePartitions`, it also clears a requested partition for
which the transform produced no rows, so a rerun is idempotent even then. Commit metadata
goes into snapshot properties.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.base import (
    COMMIT_ID_PROPERTY,
    Bound,
    Commit,
    PartitionFacts,
    TableFormat,
    TableIdentity,
    Written,
    empty_frame,
    user_jars,
)
from shadow_backfill.formats.locations import LineageDataset, normalize_location
from shadow_backfill.formats.races import read_again_on_commit_race
from shadow_backfill.formats.runtimes import spark_line
from shadow_backfill.formats.settings import SessionSettings
from shadow_backfill.partitions import quote_identifier

_TRANSFORM = re.compile(r"^(years|months|days|hours)\((\w+)\)$")
_UNITS = {"year": "years", "month": "months", "day": "days", "hour": "hours"}  # field suffix -> transform
_GRANULARITY = {"days": "daily", "hours": "hourly", "months": "monthly"}  # transform -> partition.granularity
# What Iceberg's SparkCatalog reads as `<table>.<name>`: its metadata tables, and a branch, tag or
# point in time of the table (Iceberg's MetadataTableType and its selector prefixes).
_METADATA_TABLES = frozenset(
    {
        "entries",
        "files",
        "data_files",
        "delete_files",
        "history",
        "metadata_log_entries",
        "snapshots",
        "refs",
        "manifests",
        "partitions",
        "all_data_files",
        "all_delete_files",
        "all_files",
        "all_manifests",
        "all_entries",
        "position_deletes",
    }
)
_SELECTOR = re.compile(r"^(branch_|tag_|snapshot_id_\d|at_timestamp_\d)", re.IGNORECASE)


def _partition_expr(spec: str) -> Column:
    """A partition spec entry (`ds`, `days(event_ts)`) as the Column `partitionedBy` takes."""
    m = _TRANSFORM.match(spec)
    if m is None:
        return F.col(spec)
    # pyspark.sql.functions.partitioning on Spark 4 (the top-level names are deprecated there)
    transforms = importlib.import_module("pyspark.sql.functions")
    with contextlib.suppress(ImportError):
        transforms = importlib.import_module("pyspark.sql.functions.partitioning")
    fn: Callable[[Column], Column] = getattr(transforms, m.group(1))
    return fn(F.col(m.group(2)))


class IcebergFormat(TableFormat):
    name = "iceberg"
    validates_conflicts = True
    widens_types = True  # Iceberg's type promotions: int -> long, float -> double, decimal precision

    @classmethod
    def session_conf(cls, settings: SessionSettings) -> dict[str, str]:
        """Jars: a user folder if given, else the official Iceberg runtime for this Spark line
        (see `runtimes.py`), fetched by Spark from Maven Central at first start."""
        conf: dict[str, str] = {}
        if (jars := user_jars(settings)) is not None:
            conf["spark.jars"] = jars
        else:
            conf["spark.jars.packages"] = spark_line().iceberg
        conf["spark.sql.extensions"] = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        cat = f"spark.sql.catalog.{settings.catalog}"
        if cat not in settings.user_conf:
            # The embedded Hadoop catalog only when the user has not configured this name: a
            # Hive metastore, REST, Glue or Nessie catalog in `spark.conf` is used as it is.
            conf.update(
                {
                    cat: "org.apache.iceberg.spark.SparkCatalog",
                    f"{cat}.type": "hadoop",
                    f"{cat}.warehouse": str(settings.warehouse / "iceberg"),
                }
            )
        return conf

    def lineage_dataset(self, table: str) -> LineageDataset:
        """The catalog name as OpenLineage's Spark listener gives it (measured: bench/lineage_names.py):
        the table without its catalog, in the namespace of the catalog's warehouse (or URI)."""
        found = super().lineage_dataset(table)
        catalog, _, name = table.partition(".")
        setting = f"spark.sql.catalog.{catalog}"
        where = self.spark.conf.get(f"{setting}.warehouse", None) or self.spark.conf.get(f"{setting}.uri", None)
        if not where:
            return found
        where = where if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", where) else f"file:{where}"
        return dataclasses.replace(found, symlink=name, symlink_namespace=where)

    # ---- introspection ------------------------------------------------------------------------

    def exists(self, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(table))

    def check_plain_table(self, table: str, role: str) -> None:
        """Refuse `<table>.snapshots` and the like: Iceberg resolves such a name to a metadata
        table (or a branch, tag or snapshot) of `<table>`, which reads fine and cannot be written,
        so it would fail late and unclearly. A table of that name in a namespace named like a
        table would be shadowed the same way for a reader of the config; it is refused too."""
        parent, _, last = table.rpartition(".")
        metadata = last.lower() in _METADATA_TABLES
        if parent and (metadata or _SELECTOR.match(last)) and self.exists(parent):
            what = f"the {last.lower()} metadata table" if metadata else "a branch, tag or snapshot"
            raise ConfigError(f"{role} {table!r} is {what} of Iceberg table {parent!r}, not a table of its own")
        super().check_plain_table(table, role)

    def schema(self, table: str) -> StructType:
        return self.spark.table(table).schema

    def partition_columns(self, table: str) -> list[str]:
        """The partition spec: identity columns by name, hidden partitions as their transform
        (`days(event_ts)`), which `create` reads back. Read from the fields of the `partitions`
        metadata table (an analysis, no Spark job): Iceberg names an identity field after its
        column and a `days`/`hours`/`months`/`years` field `<column>_day` (... `_year`)."""
        part = self.spark.table(f"{table}.partitions").schema["partition"].dataType
        assert isinstance(part, StructType)
        columns = set(self.schema(table).fieldNames())
        specs = []
        for field in part.fieldNames():
            source, _, unit = field.rpartition("_")
            if field not in columns and source in columns and unit in _UNITS:
                specs.append(f"{_UNITS[unit]}({source})")
            else:
                specs.append(field)
        return specs

    def partition_facts(self, table: str, column: str) -> PartitionFacts | None:
        """A timestamp column's hidden transform (`hours(event_ts)`) names the granularity."""
        facts = super().partition_facts(table, column)
        if facts is None or not facts.column_type.startswith("timestamp"):
            return facts
        for spec in self.partition_columns(table):
            m = _TRANSFORM.match(spec)
            if m and m.group(2) == column and m.group(1) in _GRANULARITY:
                return PartitionFacts(facts.column_type, _GRANULARITY[m.group(1)])
        return facts

    def _partition_text(self, table: str, struct: str) -> Column:
        """The backfill partition's key text from a metadata table's partition struct (`partitions`,
        `all_entries`): an identity field as text, a `days`/`hours`/`months` field (a date, hours
        or months since 1970) as the key of its period."""
        col = self.scheme.column
        for spec in self.partition_columns(table):
            m = _TRANSFORM.match(spec)
            if spec == col:
                return F.col(f"{struct}.{col}").cast("string")
            if m and m.group(2) == col:
                field = F.col(f"{struct}.{col}_{m.group(1).rstrip('s')}")
                if m.group(1) == "days":
                    return F.date_format(field, "yyyy-MM-dd")
                if m.group(1) == "hours":
                    return F.date_format(F.timestamp_seconds(field.cast("long") * 3600), "yyyy-MM-dd'T'HH")
                if m.group(1) == "months":
                    return F.date_format(F.add_months(F.lit(dt.date(1970, 1, 1)), field), "yyyy-MM")
        raise ConfigError(
            f"{table} is not partitioned by {col!r} or by days/hours/months of it (its partitioning: "
            f"{', '.join(self.partition_columns(table)) or 'none'})"
        )

    def refresh(self, table: str) -> None:
        # SparkCatalog caches loaded tables (cache-enabled): a long-lived session would otherwise
        # plan against the snapshot it loaded before another process committed.
        self.spark.catalog.refreshTable(table)

    def current_version(self, table: str) -> int | None:
        def refs() -> list[Row]:  # built anew on each try: a classic DataFrame keeps its resolved snapshot
            return self.spark.table(f"{table}.refs").filter(F.col("name") == "main").select("snapshot_id").collect()

        rows = read_again_on_commit_race(refs)
        return int(rows[0][0]) if rows else None

    def history(self, table: str) -> list[Commit]:
        rows = read_again_on_commit_race(
            lambda: (
                self.spark.table(f"{table}.snapshots")
                .select("snapshot_id", "parent_id", "committed_at", "operation", "summary")
                .orderBy("committed_at")
                .collect()
            )
        )
        return [
            Commit(
                version=int(r["snapshot_id"]),
                timestamp_ms=int(r["committed_at"].timestamp() * 1000) if r["committed_at"] else None,
                operation=r["operation"],
                properties=dict(r["summary"] or {}),
                parent=None if r["parent_id"] is None else int(r["parent_id"]),
            )
            for r in rows
        ]

    def _snapshot_of(self, table: str, commit_id: str) -> list[Row]:
        return read_again_on_commit_race(
            lambda: (
                self.spark.table(f"{table}.snapshots")
                .filter(F.col("summary").getItem(COMMIT_ID_PROPERTY) == F.lit(commit_id))
                .select("snapshot_id", "parent_id")
                .collect()
            )
        )

    def version_of_commit(self, table: str, commit_id: str) -> int:
        return self.written_by(table, commit_id).version

    def written_by(self, table: str, commit_id: str) -> Written:
        # Filter in Spark: only the one matching snapshot reaches the driver, however long the history.
        rows = self._snapshot_of(table, commit_id)
        if not rows:
            # Another thread of this session reloaded the table into the catalog's cache while
            # our commit was landing (a promotion refreshing the shadow as a recompute commits):
            # the cached table predates our snapshot. Reload once and look again.
            self.refresh(table)
            rows = self._snapshot_of(table, commit_id)
        if not rows:
            raise RuntimeError(f"commit {commit_id} not found in the snapshots of {table}")
        parent = rows[0]["parent_id"]
        return Written(int(rows[0]["snapshot_id"]), None if parent is None else int(parent))

    def partitions_touched(self, table: str, commit: Commit) -> list[str] | None:
        """From the manifest entries the snapshot added or deleted (all_entries keeps them all)."""
        rows = read_again_on_commit_race(
            lambda: (
                self.spark.table(f"{table}.all_entries")
                .filter((F.col("snapshot_id") == F.lit(commit.version)) & (F.col("status") != F.lit(0)))
                .select(self._partition_text(table, "data_file.partition").alias("k"))
                .distinct()
                .collect()
            )
        )
        return sorted({k for r in rows if (k := self.scheme.key_from_column_text(r["k"])) is not None})

    def identity(self, table: str) -> TableIdentity | None:
        """The table UUID and location from its current metadata file, whichever catalog named it."""
        return self.identities([table])[0]

    def identities(self, tables: Sequence[str]) -> list[TableIdentity | None]:
        """Two Spark jobs for all tables instead of two per table (0.35 -> 0.2 s for live and
        shadow, on every promotion and recompute): their latest metadata files, then those
        files' two fields."""
        present = [t for t in dict.fromkeys(tables) if self.exists(t)]
        if not present:
            return [None] * len(tables)

        def latest() -> list[Row]:
            logs = [
                self.spark.table(f"{t}.metadata_log_entries").select(F.lit(i).alias("t"), "timestamp", "file")
                for i, t in enumerate(present)
            ]
            by_table = reduce(DataFrame.unionByName, logs).groupBy("t")
            return by_table.agg(F.max_by("file", "timestamp").alias("file")).collect()

        files = {int(r["t"]): r["file"] for r in read_again_on_commit_race(latest)}
        # Only the two fields, by schema: inferring the whole metadata file's schema is a Spark job.
        meta = self.spark.read.schema("`table-uuid` string, location string").option("multiLine", "true")
        fields = [
            meta.json(f).select(F.lit(i).alias("t"), F.col("`table-uuid`").alias("id"), "location")
            for i, f in files.items()
        ]
        found = {int(r["t"]): r for r in reduce(DataFrame.unionByName, fields).collect()} if fields else {}
        by_table = {
            t: TableIdentity(id=r["id"], location=normalize_location(r["location"]))
            for i, t in enumerate(present)
            if (r := found.get(i)) is not None
        }
        return [by_table.get(t) for t in tables]

    def partition_row_counts(self, table: str) -> dict[str, int]:
        rows = read_again_on_commit_race(
            lambda: (
                self.spark.table(f"{table}.partitions")
                .select(self._partition_text(table, "partition").alias("k"), F.col("record_count").alias("n"))
                .collect()
            )
        )
        out: dict[str, int] = {}
        for r in rows:
            key = self.scheme.key_from_column_text(r["k"])
            if key is not None:
                out[key] = out.get(key, 0) + int(r["n"])
        return out

    def is_commit_conflict(self, exc: BaseException) -> bool:
        # Iceberg retries commits itself; one that still fails after its retries is a conflict.
        return "CommitFailedException" in f"{type(exc).__name__}: {exc}"

    def is_validation_conflict(self, exc: BaseException) -> bool:
        # Raised by validateNoConflictingData: a snapshot after validate-from-snapshot-id added
        # data matching the overwrite's filter.
        text = f"{type(exc).__name__}: {exc}"
        return "ValidationException" in text and "onflicting" in text

    def is_read_conflict(self, exc: BaseException) -> bool:
        # Iceberg's scan builder checks that the snapshot Spark resolved is the one the scan
        # uses; a commit refreshing the shared table meanwhile (seen on Spark 4.1 Connect, a
        # `run --force` of the shadow during a promotion) fails that check before any write.
        return "Failed to enforce scan consistency" in f"{type(exc).__name__}: {exc}"

    # ---- reads --------------------------------------------------------------------------------

    def read(self, table: str, version: int | None = None) -> DataFrame:
        if version is None:
            return self.spark.read.table(table)
        # SQL time travel: the `versionAsOf` read option of `spark.read.table` was silently
        # ignored once the session had read the table (it returned the current snapshot, and a
        # rollback restored the wrong content), and Iceberg's `snapshot-id` read option is
        # refused by its runtime for Spark 4.1. The name passed the identifier rule; the
        # version is an int.
        return self.spark.sql(f"SELECT * FROM {table} VERSION AS OF {int(version)}")

    # ---- writes -------------------------------------------------------------------------------

    def create(
        self, table: str, schema: StructType, partition_columns: Sequence[str], data: DataFrame | None = None
    ) -> None:
        writer = (empty_frame(self.spark, schema) if data is None else data).writeTo(table).using("iceberg")
        if partition_columns:
            writer = writer.partitionedBy(*[_partition_expr(p) for p in partition_columns])
        writer.create()

    def drop(self, table: str) -> None:
        # The name passed the registry's identifier rule; PURGE removes only this table's files.
        self.spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")

    def append(self, table: str, df: DataFrame) -> None:
        df.writeTo(table).append()

    def widen_columns(self, table: str, types: Mapping[str, DataType]) -> None:
        for column, kind in types.items():
            column_sql = f"{self.sql_table(table)} ALTER COLUMN {quote_identifier(column)}"
            self.spark.sql(f"ALTER TABLE {column_sql} TYPE {kind.simpleString()}")
        self.refresh(table)

    def _overwrite(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str], bound: Bound | None
    ) -> None:
        writer = df.writeTo(table)
        for k, v in properties.items():
            writer = writer.option(f"snapshot-property.{k}", v)
        if bound is not None:
            # Serializable: the commit fails if any snapshot after the bound one added data
            # matching the overwrite filter (without a bound snapshot: any snapshot at all).
            writer = writer.option("isolation-level", "serializable")
            if bound.version is not None:
                writer = writer.option("validate-from-snapshot-id", str(bound.version))
        writer.overwrite(self.scheme.predicate(keys))
