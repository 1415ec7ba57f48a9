"""What the Parquet format makes of its folder log's versions: those it records itself, the
refusals bound to a version, and a version read back with Spark.

The log (`folder_log.py`) journals and switches any version it is given, and adopts other
writers' folders as versions of their own; which versions the format commits besides (a table
adopted or created, a schema widened), when a commit is refused as a conflict, and how a
version's folders become one DataFrame wherever their generations lie are the format's rules on
top of it, kept here so that `parquet.py` holds only the `TableFormat` interface over them.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from collections.abc import Callable, Sequence
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from shadow_backfill.errors import ConfigError, RefusedError
from shadow_backfill.formats.base import empty_frame
from shadow_backfill.formats.folder_files import folder_text
from shadow_backfill.formats.folder_log import FolderLog, UnreadableFolders
from shadow_backfill.formats.folder_versions import Folder, Version, now_ms


class ParquetConflict(RefusedError):
    """A version after the one a commit was bound to touched its partitions."""


class VersionExpired(RefusedError):
    """The folders of a kept version were deleted by `gc` after their retention."""


def synced(log: FolderLog, build_first: Callable[[dict[str, Folder]], Version] | None = None) -> Version | None:
    """`FolderLog.sync`, whose refusal of folders that no longer read as partitions is a config
    error (exit 2, nothing moved), not an engine error."""
    try:
        return log.sync(build_first)
    except UnreadableFolders as exc:
        raise ConfigError(str(exc)) from None


def check_columns(table: str, column: str, columns: Sequence[str]) -> None:
    """The backfill column must be the first partition column: its folders hold the others."""
    if not columns or columns[0] != column:
        raise ConfigError(
            f"Parquet table {table!r} must be partitioned first by {column!r} "
            f"(folders {column}=.../), found partition columns {list(columns)}"
        )


def first_version(operation: str, folders: dict[str, Folder], schema: StructType, columns: Sequence[str]) -> Version:
    """Version 0 of a table: one the tool creates, or one it finds and adopts as it is."""
    return Version(
        0,
        now_ms(),
        operation,
        {},
        sorted({f.key for f in folders.values()}),
        schema.json(),
        list(columns),
        uuid.uuid4().hex,
        folders,
    )


def widened(latest: Version, wider: StructType) -> Version:
    """`latest`'s folders under a wider schema: files written before it read as null there."""
    return Version(
        latest.version + 1,
        now_ms(),
        "ADD COLUMNS",
        {},
        [],
        wider.json(),
        latest.partition_columns,
        latest.table_id,
        dict(latest.folders),
    )


def touched_since(log: FolderLog, since: int | None, keys: Sequence[str]) -> bool:
    """Whether a version after `since` changed any of `keys` (a commit bound to `since` conflicts)."""
    wanted = set(keys)
    return any(wanted & set(v.touched) for v in log.all() if since is None or v.version > since)


def read_folders(
    spark: SparkSession, log: FolderLog, current: Version, at: Version, keys: set[str] | None, gone: str
) -> DataFrame:
    """The wanted folders of version `at`, read from wherever their generation lies now: the
    table's root for current data, `gen/<gid>` for kept data, each read as a dataset of its own
    with the table's schema (partition values typed from the folder names) and filtered to the
    wanted folders. `gone` begins the refusal when `gc` deleted one."""
    schema = schema_of(at)
    bases: dict[str, list[str]] = {}
    for name, folder in sorted(at.folders.items()):
        if keys is None or folder.key in keys:
            path = log.where(name, folder, current)
            if not log.files.exists(path):
                raise VersionExpired(f"{gone}: gc deleted {path}")
            bases.setdefault(posixpath.dirname(path), []).append(name)
    if not bases:
        return empty_frame(spark, schema)
    column = at.partition_columns[0]
    frames = []
    for base, names in bases.items():
        frame = spark.read.schema(schema).parquet(base)
        frame = frame.filter(F.col(column).cast("string").isin([folder_text(n) for n in names]))
        frames.append(frame.select(*schema.fieldNames()))
    return reduce(lambda a, b: a.unionByName(b), frames)


def schema_of(version: Version) -> StructType:
    """The table's schema as `version` recorded it."""
    return StructType.fromJson(json.loads(version.schema))
