"""The one interface every table format implements.

The runner, the validator and the promoter only talk to a :class:`TableFormat`; each format
lives in its own module and no other module knows about Iceberg or Delta specifics.
"""

from __future__ import annotations

import glob
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import SessionError
from shadow_backfill.partitions import PartitionScheme

COMMIT_ID_PROPERTY = "shadow-backfill.commit-id"
PARTITIONS_PROPERTY = "shadow-backfill.partitions"


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame of `schema` built in the JVM (createDataFrame([]) would start Python workers)."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def user_jars(config: BackfillConfig) -> str | None:
    """The jars in `spark.jars_dir` as a `spark.jars` value; None when no folder is configured."""
    if config.spark.jars_dir is None:
        return None
    jars_dir = config.resolve(config.spark.jars_dir)
    jars = sorted(glob.glob(str(jars_dir / "*.jar")))
    if not jars:
        raise SessionError(f"spark.jars_dir {str(jars_dir)!r} holds no .jar files")
    return ",".join(jars)


@dataclass(frozen=True)
class Commit:
    """One commit on a table: its version (Delta) or snapshot id (Iceberg) and our metadata."""

    version: int
    timestamp_ms: int | None
    operation: str | None
    properties: Mapping[str, str]


class TableFormat(ABC):
    """Reads and writes partitions of tables of one format on any Spark session (classic or Connect)."""

    name: str = ""

    @classmethod
    def session_conf(cls, config: BackfillConfig) -> dict[str, str]:
        """Settings a *classic* Spark session needs for this format (jars, catalogs, extensions)."""
        return {}

    def __init__(self, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> None:
        self.spark = spark
        self.scheme = scheme
        self.base_dir = base_dir

    # ---- introspection ------------------------------------------------------------------------

    @abstractmethod
    def exists(self, table: str) -> bool: ...

    @abstractmethod
    def schema(self, table: str) -> StructType: ...

    @abstractmethod
    def partition_columns(self, table: str) -> list[str]: ...

    @abstractmethod
    def current_version(self, table: str) -> int | None:
        """The table's current version (Delta) or snapshot id (Iceberg); None when empty."""

    @abstractmethod
    def history(self, table: str) -> list[Commit]:
        """Commits, oldest first."""

    def list_partitions(self, table: str) -> list[str]:
        """Partition keys present in the table, ascending."""
        return sorted(self.partition_row_counts(table), key=self.scheme.parse_key)

    @abstractmethod
    def partition_row_counts(self, table: str) -> dict[str, int]:
        """Rows per partition key, from metadata where the format keeps it (no data scan)."""

    # ---- reads --------------------------------------------------------------------------------

    @abstractmethod
    def read(self, table: str, version: int | None = None) -> DataFrame:
        """The table, optionally as of a version/snapshot (time travel)."""

    def read_partitions(self, table: str, keys: Sequence[str], version: int | None = None) -> DataFrame:
        return self.read(table, version).filter(self.scheme.predicate(keys))

    # ---- writes -------------------------------------------------------------------------------

    @abstractmethod
    def create(self, table: str, schema: StructType, partition_columns: Sequence[str]) -> None:
        """Create an empty table; fails if it exists."""

    def create_like(self, source: str, target: str, schema: StructType | None = None) -> None:
        """Create `target` partitioned like `source`, with `schema` (default: source's schema)."""
        self.create(target, schema or self.schema(source), self.partition_columns(source))

    @abstractmethod
    def _overwrite(self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str]) -> None:
        """Replace exactly the partitions `keys` of `table` with `df` in one atomic commit."""

    def overwrite_partitions(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str] | None = None
    ) -> int:
        """Replace exactly `keys` with `df` in one commit; return the version that commit made.

        The commit carries a unique id in its metadata, so the version returned is the one this
        call made even when other writers commit at the same time.
        """
        if not keys:
            raise ValueError("overwrite_partitions needs at least one partition")
        commit_id = uuid.uuid4().hex
        props = {**(properties or {}), COMMIT_ID_PROPERTY: commit_id, PARTITIONS_PROPERTY: ",".join(keys)}
        self._overwrite(table, df, keys, props)
        return self.version_of_commit(table, commit_id)

    def commits_touching(
        self, table: str, since: int | None, keys: Sequence[str], commits: Sequence[Commit] | None = None
    ) -> list[tuple[Commit, list[str]]]:
        """Commits after version `since` that may have changed any of `keys`, with the keys hit.

        Our own commits name their partitions; a commit by another writer names none, so it is
        taken to touch them all (the safe answer when deciding whether data changed).
        """
        commits = self.history(table) if commits is None else commits
        versions = [c.version for c in commits]
        start = versions.index(since) + 1 if since in versions else 0
        wanted = set(keys)
        out = []
        for c in commits[start:]:
            named = c.properties.get(PARTITIONS_PROPERTY)
            hit = sorted(wanted if named is None else wanted.intersection(named.split(",")))
            if hit:
                out.append((c, hit))
        return out

    def version_of_commit(self, table: str, commit_id: str) -> int:
        for c in reversed(self.history(table)):
            if c.properties.get(COMMIT_ID_PROPERTY) == commit_id:
                return c.version
        raise RuntimeError(f"commit {commit_id} not found in the history of {table}")

    def is_commit_conflict(self, exc: BaseException) -> bool:
        """True when a write lost an optimistic-concurrency race and can simply be tried again."""
        return False

    def describe(self, table: str) -> dict[str, Any]:
        return {"format": self.name, "table": table, "version": self.current_version(table)}
