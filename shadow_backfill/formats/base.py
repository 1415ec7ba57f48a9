"""The one interface every table format implements.

The runner, the validator and the promoter only talk to a :class:`TableFormat`; each format
lives in its own module and no other module knows about Iceberg or Delta specifics.
"""

from __future__ import annotations

import glob
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from shadow_backfill.errors import ConfigError, RefusedError, SessionError
from shadow_backfill.formats.locations import LineageDataset, inside, lineage_name
from shadow_backfill.formats.settings import SessionSettings
from shadow_backfill.partitions import PartitionScheme, quote_identifier

COMMIT_ID_PROPERTY = "shadow-backfill.commit-id"
PARTITIONS_PROPERTY = "shadow-backfill.partitions"


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame of `schema` built in the JVM (createDataFrame([]) would start Python workers)."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def user_jars(settings: SessionSettings) -> str | None:
    """The jars in `spark.jars_dir` as a `spark.jars` value; None when no folder is configured."""
    jars_dir = settings.jars_dir
    if jars_dir is None:
        return None
    jars = sorted(glob.glob(str(jars_dir / "*.jar")))
    if not jars:
        raise SessionError(f"spark.jars_dir {str(jars_dir)!r} holds no .jar files")
    return ",".join(jars)


@dataclass(frozen=True)
class Bound:
    """The version a guarded write is bound to (None: the table had no commit yet)."""

    version: int | None


@dataclass(frozen=True)
class Commit:
    """One commit on a table: its version (Delta) or snapshot id (Iceberg) and our metadata."""

    version: int
    timestamp_ms: int | None
    operation: str | None
    properties: Mapping[str, str]
    parent: int | None = None  # the version it was applied on top of, where the format tells


@dataclass(frozen=True)
class Written:
    """The commit a write made and its real parent (the version it was applied on top of)."""

    version: int
    parent: int | None


@dataclass(frozen=True)
class PartitionFacts:
    """What a live table says of its partition column: its Spark type, and the granularity
    (`daily`, `hourly`, `monthly`) of a hidden transform of it, if the format has those."""

    column_type: str
    hidden_granularity: str | None = None


@dataclass(frozen=True)
class TableIdentity:
    """What a table *is*, whatever name reached it: its id (Iceberg table UUID, Delta table id)
    and its resolved location. Two catalogs over one warehouse give one table two names."""

    id: str | None
    location: str


class LiveChangedError(RefusedError):
    """Another writer committed to partitions being written after the version a write was bound to.

    `hits` maps each partition to the first such commit. `written` is None when the format
    refused the commit itself (nothing was written); otherwise the commit landed and the caller
    must put the other writer's data back (see `promote.commit_guarded`).
    """

    def __init__(self, table: str, hits: Mapping[str, Commit], written: Written | None) -> None:
        parts = sorted(hits)
        super().__init__(
            f"partitions {parts[:5]} of {table} changed after validation "
            f"(commit {next(iter(hits.values())).version if hits else '?'} by another writer)"
        )
        self.table = table
        self.hits = dict(hits)
        self.written = written


class LockService(Protocol):
    """Named locks across processes (and machines, with a shared state store), let go when
    their holder dies: what a format needs where its storage has no lock of its own (Parquet's
    folder log on an object store). The state store's leases give it (`state.locks`)."""

    def hold(self, name: str, exclusive: bool = True) -> AbstractContextManager[None]: ...


class TableFormat(ABC):
    """Reads and writes partitions of tables of one format on any Spark session (classic or Connect)."""

    name: str = ""
    # Capability: the format itself refuses a commit when another commit touched the partitions
    # being overwritten after a given version (Iceberg: validate-from-snapshot + serializable).
    # Without it, `commit_partitions` checks the log right after the commit instead.
    validates_conflicts: bool = False
    # Capability: a column's type can be widened in place, as a change of metadata only (int to
    # bigint, float to double, decimal precision up), old data files read as the wider type.
    widens_types: bool = False
    # A dry run's format: reads what the table's metadata says now and writes nothing, not even
    # what a format writes when it reads (Parquet's folder log settles and adopts, under locks).
    read_only: bool = False

    @classmethod
    def session_conf(cls, settings: SessionSettings) -> dict[str, str]:
        """Settings a *classic* Spark session needs for this format (jars, catalogs, extensions)."""
        return {}

    def __init__(self, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> None:
        self.spark = spark
        self.scheme = scheme
        self.base_dir = base_dir
        self._lock_service: Callable[[], LockService] | None = None

    def use_locks(self, service: Callable[[], LockService]) -> None:
        """Where this format gets cross-process locks its storage lacks; called once it is made.
        A callable, so that the state store is opened only by a format that takes a lock."""
        self._lock_service = service

    # ---- introspection ------------------------------------------------------------------------

    @abstractmethod
    def exists(self, table: str) -> bool: ...

    @abstractmethod
    def schema(self, table: str) -> StructType: ...

    @abstractmethod
    def partition_columns(self, table: str) -> list[str]: ...

    def partition_facts(self, table: str, column: str) -> PartitionFacts | None:
        """The partition column's type, read without settling or writing anything: the scheme
        it completes is not settled yet, and a format that adopts what it finds (Parquet's
        folders) must not read the table through an unsettled scheme. None when the table or
        the column does not exist (the commands name that)."""
        if not self.exists(table):
            return None
        types = {f.name: f.dataType.simpleString() for f in self.schema(table).fields}
        return PartitionFacts(types[column]) if column in types else None

    def refresh(self, table: str) -> None:
        """Forget what this session cached about `table`, so the next read sees other processes'
        commits (formats whose catalog caches loaded tables override this)."""
        return None

    @abstractmethod
    def current_version(self, table: str) -> int | None:
        """The table's current version (Delta) or snapshot id (Iceberg); None when empty."""

    @abstractmethod
    def history(self, table: str) -> list[Commit]:
        """Commits, oldest first."""

    def list_partitions(self, table: str) -> list[str]:
        """Partition keys present in the table, ascending."""
        return self.scheme.sort(self.partition_row_counts(table))

    @abstractmethod
    def partition_row_counts(self, table: str) -> dict[str, int]:
        """Rows per partition key, from metadata where the format keeps it (no data scan)."""

    # ---- reads --------------------------------------------------------------------------------

    @abstractmethod
    def read(self, table: str, version: int | None = None) -> DataFrame:
        """The table, optionally as of a version/snapshot (time travel)."""

    def read_partitions(self, table: str, keys: Sequence[str], version: int | None = None) -> DataFrame:
        return self.read(table, version).filter(self.scheme.predicate(keys))

    @contextmanager
    def pinned(self, table: str) -> Iterator[None]:
        """Keep the data files of `table`'s versions where they are while a job reading them runs
        (a promotion reads the validated shadow version inside). Formats whose files are never
        moved nor rewritten by a commit (Iceberg, Delta: new files, new snapshot) need nothing."""
        yield

    # ---- writes -------------------------------------------------------------------------------

    @abstractmethod
    def create(
        self, table: str, schema: StructType, partition_columns: Sequence[str], data: DataFrame | None = None
    ) -> None:
        """Create a table, empty or holding `data` (one commit, not a create then a write: seeding
        a table costs one job); fails if it exists."""

    def create_like(self, source: str, target: str, schema: StructType | None = None) -> None:
        """Create `target` partitioned like `source`, with `schema` (default: source's schema).

        A path is refused before creation: its location is known, and on an object store a
        table by path cannot be dropped again without listing and deleting objects. A name that
        resolves into the source's storage is refused right after creation, before any data is
        written (a new named table's location is only known once it exists)."""
        if "/" in target or "://" in target:
            self.check_distinct(source, target)
        self.create(target, schema or self.schema(source), self.partition_columns(source))
        try:
            self.check_distinct(source, target)
        except ConfigError:
            self.drop(target)
            raise

    def drop(self, table: str) -> None:
        """Remove a table this tool has just created and found misplaced (never live)."""
        raise NotImplementedError(f"{self.name} cannot drop {table}")

    @abstractmethod
    def _overwrite(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str], bound: Bound | None
    ) -> None:
        """Replace exactly the partitions `keys` of `table` with `df` in one atomic commit; with
        `bound`, formats that can make the commit fail if another commit touched `keys` after
        `bound.version` do so."""

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
        self._overwrite(table, df, keys, props, None)
        return self.version_of_commit(table, commit_id)

    def commit_partitions(
        self, table: str, df: DataFrame, keys: Sequence[str], properties: Mapping[str, str], since: int | None
    ) -> Written:
        """Replace `keys` with `df` in one commit that is bound to version `since`.

        Raises :class:`LiveChangedError` when another commit touched any of `keys` after
        `since`: before writing where the format validates that itself, else right after the
        commit (with `written` set, so the caller can restore what the other writer wrote).
        """
        if not keys:
            raise ValueError("commit_partitions needs at least one partition")
        commit_id = uuid.uuid4().hex
        props = {**properties, COMMIT_ID_PROPERTY: commit_id, PARTITIONS_PROPERTY: ",".join(keys)}
        try:
            self._overwrite(table, df, keys, props, Bound(since))
        except Exception as exc:
            if not self.is_validation_conflict(exc):
                raise
            hits = self.foreign_touches(table, since, keys)
            raise LiveChangedError(table, hits, None) from None
        written = self.written_by(table, commit_id)
        if not self.validates_conflicts:
            hits = self.foreign_touches(table, since, keys, until=written.version)
            if hits:
                raise LiveChangedError(table, hits, written)
        return written

    def foreign_touches(
        self, table: str, since: int | None, keys: Sequence[str], until: int | None = None
    ) -> dict[str, Commit]:
        """Each of `keys` that a commit after `since` (and before `until`) touched, with the first such commit."""
        commits = self.history(table)
        versions = [c.version for c in commits]
        if until in versions:
            commits = commits[: versions.index(until)]
        hits: dict[str, Commit] = {}
        for commit, touched in self.commits_touching(table, since, keys, commits):
            for k in touched:
                hits.setdefault(k, commit)
        return hits

    def written_by(self, table: str, commit_id: str) -> Written:
        """The version a commit made and its real parent (formats with linear versions: version - 1)."""
        version = self.version_of_commit(table, commit_id)
        return Written(version, version - 1 if version > 0 else None)

    def is_validation_conflict(self, exc: BaseException) -> bool:
        """True when the format refused a commit because another commit touched its partitions."""
        return False

    def is_read_conflict(self, exc: BaseException) -> bool:
        """True when a read of a pinned version failed only because another commit to the same
        table landed while the read was planned: nothing was written, and planning again reads
        (or refuses) with that commit in view."""
        return False

    def partitions_touched(self, table: str, commit: Commit) -> list[str] | None:
        """The partition keys a commit added or removed data in; None when it cannot be told."""
        return None

    @abstractmethod
    def append(self, table: str, df: DataFrame) -> None:
        """Append rows in one commit, as any other writer of the table would."""

    def add_columns(self, table: str, fields: Sequence[StructField]) -> None:
        """Add nullable columns to `table` ahead of a promotion whose rows carry them. A change of
        metadata only, no data file written: until the promotion's own commit, every reader sees
        the new columns as null, as the partitions it does not promote keep them."""
        columns = ", ".join(f"{quote_identifier(f.name)} {f.dataType.simpleString()}" for f in fields)
        self.spark.sql(f"ALTER TABLE {self.sql_table(table)} ADD COLUMNS ({columns})")
        self.refresh(table)

    def widen_columns(self, table: str, types: Mapping[str, DataType]) -> None:
        """Widen columns of `table` to `types` ahead of a promotion whose rows carry them (only
        where `widens_types`: a change of metadata only, as `add_columns` is)."""
        raise NotImplementedError(f"{self.name} tables cannot widen a column's type in place")

    def sql_table(self, table: str) -> str:
        """How SQL names `table` (a catalog name, each part quoted)."""
        return ".".join(quote_identifier(part) for part in table.split("."))

    # ---- identity ----------------------------------------------------------------------------

    @abstractmethod
    def identity(self, table: str) -> TableIdentity | None:
        """The table's id and resolved location; None when it does not exist."""

    def identities(self, tables: Sequence[str]) -> list[TableIdentity | None]:
        """`identity` of each table; a format may read them together (fewer Spark jobs)."""
        return [self.identity(t) for t in tables]

    def lineage_dataset(self, table: str) -> LineageDataset:
        """`table` as lineage names it (`LineageDataset`); a table not created yet has no version."""
        found = self.identity(table)
        location = found.location if found is not None else table
        namespace, name = lineage_name(location)
        named = "/" not in table and "://" not in table
        version = self.current_version(table) if found is not None and self.exists(table) else None
        return LineageDataset(
            namespace, name, table if named else None, self.name, "parquet", None if version is None else str(version)
        )

    def check_distinct(self, live: str, shadow: str) -> None:
        """Refuse a shadow that is, contains or lies inside the live table, whatever its name."""
        a, b = self.identities([live, shadow])
        if a is None or b is None:
            return
        if a.id is not None and a.id == b.id:
            raise ConfigError(
                f"shadow table {shadow!r} is the live table {live!r} under another name (same table id {a.id})"
            )
        if inside(b.location, a.location) or inside(a.location, b.location):
            how = (
                "is" if a.location == b.location else ("lies inside" if inside(b.location, a.location) else "contains")
            )
            raise ConfigError(
                f"shadow table {shadow!r} {how} the live table {live!r} on storage "
                f"({b.location} vs {a.location}): choose a shadow location apart from live"
            )

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
            touched = named.split(",") if named is not None else self.partitions_touched(table, c)
            hit = sorted(wanted if touched is None else wanted.intersection(touched))
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

    def collect_garbage(
        self, table: str, older_than_ms: int, dry_run: bool = False, now_ms: int | None = None
    ) -> list[str] | None:
        """Delete the data this tool kept only as a rollback target, replaced before
        `older_than_ms`; the paths deleted (or that would be). `now_ms`: the clock (a test's
        later day). None: the format keeps its own retention (Iceberg snapshot expiry, Delta
        VACUUM) and the tool deletes nothing."""
        return None

    def is_expired(self, exc: BaseException) -> bool:
        """True when a read failed because the version's data was deleted after its retention."""
        return False

    def describe(self, table: str) -> dict[str, Any]:
        return {"format": self.name, "table": table, "version": self.current_version(table)}

    def check_plain_table(self, table: str, role: str) -> None:
        """Refuse a `live_table` or `shadow_table` (`role`) that is no plain table, before any
        command reads or writes it: a view reads other tables, so validating it judges something
        else and a write to it cannot land. Formats add what only they know (Iceberg's metadata
        tables, Delta's log folder) and call this. A name the catalog does not know, or an engine
        that cannot say, passes: the commands name a missing table themselves."""
        if "/" in table or "://" in table:
            return  # a path: no catalog object
        try:
            found = self.spark.catalog.getTable(table)
        except Exception:
            return
        kind = str(found.tableType or "").upper()
        if found.isTemporary or "VIEW" in kind or kind == "TEMPORARY":
            temporary = "temporary " if found.isTemporary or kind == "TEMPORARY" else ""
            raise ConfigError(f"{role} {table!r} is a {temporary}view, not a table: name the table itself")
