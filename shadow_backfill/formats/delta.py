"""Delta Lake tables, addressed by path or by name in a Spark catalog.

A `live_table` with a `/` (or a URL) is a path; anything else (`db.events`,
`spark_catalog.db.events`) names a table in the session catalog (delta-spark's DeltaCatalog over
the user's metastore), which is resolved once to its location: reads, writes and the log are then
the location's, so a table reached by name behaves exactly as one reached by path. A shadow of a
named table is created by name (`saveAsTable`), in the same catalog and namespace.

Writes are `mode("overwrite")` with a `replaceWhere` predicate over exactly the requested
partition values (rendered from typed literals), never dynamic partition overwrite: on some
engines (Sail) dynamic overwrite replaces the whole table. Commit metadata goes into the
commit's `userMetadata` as JSON. History, versions and partition row counts come from the
Delta log through `deltalake` (delta-rs) when it can open the path, else from Delta SQL.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from shadow_backfill.errors import ConfigError, RefusedError
from shadow_backfill.formats.base import (
    COMMIT_ID_PROPERTY,
    Bound,
    Commit,
    TableFormat,
    TableIdentity,
    empty_frame,
    user_jars,
)
from shadow_backfill.formats.locations import normalize_location
from shadow_backfill.formats.races import is_delta_commit_race
from shadow_backfill.formats.runtimes import spark_line
from shadow_backfill.formats.settings import SessionSettings
from shadow_backfill.partitions import PartitionScheme

DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _delta_log(path: str) -> Any | None:
    """A delta-rs handle on the table's log, or None when delta-rs is missing or cannot open it.
    Only for a local path: on an object store the log is read through Spark, which holds the
    user's credentials and endpoint (delta-rs would need them again as storage options, and
    without them asks the cloud's metadata service for credentials and waits on its timeout)."""
    if "://" in path and not path.startswith("file:"):
        return None
    try:
        from deltalake import DeltaTable
    except ImportError:
        return None
    try:
        return DeltaTable(path)
    except Exception:
        return None


def _quoted(name: str) -> str:
    """A catalog name with each part in backticks (the config has checked it is an identifier)."""
    return ".".join(f"`{part}`" for part in name.split("."))


def _column_text(value: Any) -> str:
    """Render a partition value from the Delta log the way Spark's CAST(... AS STRING) does."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


class DeltaFormat(TableFormat):
    name = "delta"

    def __init__(self, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> None:
        super().__init__(spark, scheme, base_dir)
        self._locations: dict[str, str] = {}  # catalog name -> location

    @classmethod
    def session_conf(cls, settings: SessionSettings) -> dict[str, str]:
        """Jars: a user folder if given, else delta-spark for this Spark line (see `runtimes.py`),
        fetched by Spark from Maven Central at first start."""
        conf = dict(DELTA_EXTENSIONS)
        if (jars := user_jars(settings)) is not None:
            conf["spark.jars"] = jars
        else:
            conf["spark.jars.packages"] = spark_line().delta
        return conf

    @staticmethod
    def is_name(table: str) -> bool:
        """A catalog name (`db.events`), not a path: no `/` and no URL scheme."""
        return "/" not in table and "://" not in table

    def path(self, table: str) -> str:
        """The table's location: a path as given (relative to the config's folder), or the
        location the catalog holds for a name (looked up once per name and format object)."""
        if self.is_name(table):
            return self._location(table)
        if "://" in table:
            return table
        return str(self.base_dir / table) if not table.startswith("/") else table

    def _location(self, name: str) -> str:
        locations = self._locations
        if name not in locations:
            if not self.spark.catalog.tableExists(name):
                raise LookupError(f"Delta table {name!r} does not exist in the Spark catalog")
            location = str(self.spark.sql(f"DESCRIBE DETAIL {_quoted(name)}").collect()[0]["location"])
            locations[name] = location.removeprefix("file:") if location.startswith("file:/") else location
        return locations[name]

    # ---- introspection ------------------------------------------------------------------------

    def check_plain_table(self, table: str, role: str) -> None:
        """Refuse a path inside a Delta table's log (`_delta_log`) or change-data folder: Delta's
        counterpart of a metadata table, which no command can read or write as a table."""
        if not self.is_name(table):
            parts = Path(table.split("://", 1)[-1]).parts
            inner = next((p for p in parts if p in ("_delta_log", "_change_data")), None)
            if inner is not None:
                raise ConfigError(
                    f"{role} {table!r} lies in the {inner} folder of a Delta table, not a table: "
                    "name the table's folder"
                )
        super().check_plain_table(table, role)

    def exists(self, table: str) -> bool:
        if self.is_name(table):
            return bool(self.spark.catalog.tableExists(table))
        log = _delta_log(self.path(table))
        if log is not None:
            return True
        try:
            self.spark.read.format("delta").load(self.path(table)).schema  # noqa: B018
        except Exception:
            return False
        return True

    def schema(self, table: str) -> StructType:
        return self.read(table).schema

    def partition_columns(self, table: str) -> list[str]:
        log = _delta_log(self.path(table))
        if log is not None:
            return list(log.metadata().partition_columns)
        row = self.spark.sql(f"DESCRIBE DETAIL delta.`{self.path(table)}`").collect()[0]
        return list(row["partitionColumns"])

    def current_version(self, table: str) -> int | None:
        log = _delta_log(self.path(table))
        if log is not None:
            return int(log.version())
        commits = self.history(table)
        return commits[-1].version if commits else None

    def version_of_commit(self, table: str, commit_id: str) -> int:
        # Our commit is almost always among the newest few: look there before reading it all.
        for commits in (self.history(table, limit=64), self.history(table)):
            for c in reversed(commits):
                if c.properties.get(COMMIT_ID_PROPERTY) == commit_id:
                    return c.version
        raise RuntimeError(f"commit {commit_id} not found in the history of {table}")

    def history(self, table: str, limit: int | None = None) -> list[Commit]:
        log = _delta_log(self.path(table))
        if log is not None:
            entries = [
                (e["version"], e.get("timestamp"), e.get("operation"), e.get("userMetadata"))
                for e in log.history(limit=limit)
            ]
        else:
            rows = self.spark.sql(
                f"DESCRIBE HISTORY delta.`{self.path(table)}`" + (f" LIMIT {int(limit)}" if limit else "")
            ).collect()
            entries = [
                (r["version"], int(r["timestamp"].timestamp() * 1000), r["operation"], r["userMetadata"]) for r in rows
            ]
        commits = []
        for version, ts, op, user_md in sorted(entries, key=lambda e: e[0]):
            props: dict[str, str] = {}
            if user_md:
                try:
                    parsed = json.loads(user_md)
                    if isinstance(parsed, dict):
                        props = {str(k): str(v) for k, v in parsed.items()}
                except ValueError:
                    props = {"userMetadata": str(user_md)}
            parent = int(version) - 1 if int(version) > 0 else None
            commits.append(Commit(int(version), int(ts) if ts is not None else None, op, props, parent))
        return commits

    def partition_row_counts(self, table: str) -> dict[str, int]:
        col = self.scheme.column
        log = _delta_log(self.path(table))
        counts: dict[str, int] = {}
        if log is not None:
            # deltalake >= 1.0 returns an arro3 table; pyarrow reads it through the Arrow C stream.
            actions = pa.table(log.get_add_actions(flatten=True)).to_pydict()
            values = actions.get(f"partition.{col}", [])
            records = actions.get("num_records", [None] * len(values))
            if values and None not in records:
                for v, n in zip(values, records, strict=False):
                    key = self.scheme.key_from_column_text(None if v is None else _column_text(v))
                    if key is not None:
                        counts[key] = counts.get(key, 0) + int(n)
                return counts
        rows = self.read(table).groupBy(F.col(col).cast("string").alias("k")).count().collect()
        for r in rows:
            key = self.scheme.key_from_column_text(r["k"])
            if key is not None:
                counts[key] = int(r["count"])
        return counts

    def identity(self, table: str) -> TableIdentity | None:
        """The table id from the log's metadata and the resolved path (symlinks, `..`, `file:`).

        A path with no table yet still has a location, so a shadow that would be created inside
        live is refused before it is created."""
        if self.is_name(table) and not self.exists(table):
            return None  # the catalog places a new named table; it cannot be inside live's folder
        path = self.path(table)
        location = normalize_location(path)
        log = _delta_log(path)
        if log is not None:
            return TableIdentity(id=str(log.metadata().id), location=location)
        try:
            row = self.spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
            return TableIdentity(id=str(row["id"]), location=normalize_location(str(row["location"])))
        except Exception:
            return TableIdentity(id=None, location=location)

    def partitions_touched(self, table: str, commit: Commit) -> list[str] | None:
        """From the add and remove actions of the commit's log file."""
        log_file = f"{self.path(table).rstrip('/')}/_delta_log/{commit.version:020d}.json"
        try:
            lines = [r["value"] for r in self.spark.read.text(log_file).collect()]
        except Exception:
            return None
        keys: set[str] = set()
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                values = (action.get(kind) or {}).get("partitionValues") or {}
                if self.scheme.column in values:
                    key = self.scheme.key_from_column_text(values[self.scheme.column])
                    if key is not None:
                        keys.add(key)
        return sorted(keys)

    def is_commit_conflict(self, exc: BaseException) -> bool:
        return is_delta_commit_race(exc)

    def is_validation_conflict(self, exc: BaseException) -> bool:
        """delta-spark refuses a commit when another one landed in its partitions after its
        transaction began (a killed Spark Connect client's promotion still running on the server
        is one); the promotion then plans again and sees that commit in the history."""
        return self.is_commit_conflict(exc)

    # ---- reads --------------------------------------------------------------------------------

    def read(self, table: str, version: int | None = None) -> DataFrame:
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", str(version))
        return reader.load(self.path(table))

    # ---- writes -------------------------------------------------------------------------------

    def create(
        self, table: str, schema: StructType, partition_columns: Sequence[str], data: DataFrame | None = None
    ) -> None:
        frame = empty_frame(self.spark, schema) if data is None else data
        writer = frame.write.format("delta").partitionBy(*partition_columns).mode("error")
        if self.is_name(table):
            writer.saveAsTable(table)
        else:
            writer.save(self.path(table))

    def drop(self, table: str) -> None:
        # Only reached for a table created a moment ago by `create_like`; a path's location is
        # known before creation, so `check_distinct` refuses a misplaced one first.
        if self.is_name(table):
            self.spark.sql(f"DROP TABLE IF EXISTS {_quoted(table)}")
            self._locations.pop(table, None)
            return
        path = self.path(table)
        if "://" not in path:
            shutil.rmtree(path, ignore_errors=True)

    def append(self, table: str, df: DataFrame) -> None:
        df.write.format("delta").mode("append").save(self.path(table))

    def add_columns(self, table: str, fields: Sequence[StructField]) -> None:
        """By `ALTER TABLE ... ADD COLUMNS` (a metadata-only commit). Sail (0.7) has no such
        statement and ignores `mergeSchema` (a write would drop the new values), so when the
        engine refuses the statement as unsupported, the metadata is committed by delta-rs, the
        Delta kernel Sail itself is built on (local paths only)."""
        try:
            super().add_columns(table, fields)
        except PySparkException as exc:
            log = _delta_log(self.path(table)) if "unsupported" in str(exc).lower() else None
            if log is None:
                raise
            from deltalake.schema import Field

            try:
                log.alter.add_columns([Field.from_json(f.json()) for f in fields])
            except Exception as rs:  # delta-rs raises its own errors, one line is enough
                first = str(rs).strip().splitlines()[0] if str(rs).strip() else type(rs).__name__
                raise RefusedError(f"delta-rs could not add columns to {table}: {first}") from None
            self.refresh(table)

    def sql_table(self, table: str) -> str:
        return _quoted(table) if self.is_name(table) else f"delta.`{self.path(table)}`"

    def _overwrite(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str], bound: Bound | None
    ) -> None:
        # Delta offers no way to bind a write to an older version than the one its transaction
        # reads; `commit_partitions` checks the log right after the commit instead.
        (
            df.write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", self.scheme.sql_predicate(keys))
            .option("userMetadata", json.dumps(dict(properties), sort_keys=True))
            .save(self.path(table))
        )
