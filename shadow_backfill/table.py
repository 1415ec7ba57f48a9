"""One table's context, built once per command object: every step reads the same resolved
facts instead of asking a facade that settles them as a side effect.

The partition scheme is the config's completed from the live table (its column type, a
hidden transform's granularity); the format is built for that scheme, read-only or writing
as fixed at construction, so no step can see a half-resolved scheme and no call order
matters. The state store opens on first use only: a command's checks read the context
before anything may be written, and opening the store creates it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import LocalLocksWarning
from shadow_backfill.formats import format_for
from shadow_backfill.formats.base import TableFormat
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.session import ensure_warehouse
from shadow_backfill.state import StateStore, reading
from shadow_backfill.state.locks import LeaseLocks
from shadow_backfill.state.urls import shown_url


@dataclass(frozen=True)
class TableContext:
    """What every step of one table's command shares, resolved once (`open_table`)."""

    config: BackfillConfig
    spark: SparkSession
    fmt: TableFormat
    scheme: PartitionScheme
    read_only: bool
    open_store: Callable[[], StateStore] = field(repr=False)
    """The state store, opened (and for a writing command created) on first use."""

    @property
    def store(self) -> StateStore:
        return self.open_store()

    @property
    def live_table(self) -> str:
        return self.config.live_table

    @property
    def shadow_table(self) -> str:
        return self.config.shadow

    def read(self, table: str, partitions: Sequence[str] | None = None, version: int | None = None) -> DataFrame:
        """`table` (live or the shadow) at `version`, whole or the named partitions."""
        if partitions is None:
            return self.fmt.read(table, version)
        return self.fmt.read_partitions(table, self.scheme.normalize_all(partitions), version)

    def collect_garbage(self, now: float, *, dry_run: bool) -> dict[str, list[str] | None]:
        """Delete the data live and the shadow replaced more than `promote.retention_days`
        before `now` (seconds since the epoch): per table, the folders deleted (None where the
        format keeps its own)."""
        older_than_ms = int((now - self.config.promote.retention_days * 86400) * 1000)
        return {
            table: self.fmt.collect_garbage(table, older_than_ms, dry_run=dry_run, now_ms=int(now * 1000))
            for table in (self.live_table, self.shadow_table)
            if self.fmt.exists(table)
        }


def open_store(config: BackfillConfig, *, read_only: bool) -> StateStore:
    """The config's state store: read as it is for a read-only command (never created), else
    opened and migrated, the default one in the warehouse (created with it)."""
    if read_only:
        return reading(config.state_url)
    if config.state.url is None:
        ensure_warehouse(config)
    return StateStore(config.state_url)


def open_table(
    config: BackfillConfig, spark: SparkSession, open_store: Callable[[], StateStore], *, read_only: bool
) -> TableContext:
    """The context of `config`'s tables. Live and the shadow must be plain tables (or not exist
    yet): a view or a metadata table is a usage error naming it here, before any step, rather
    than an engine error half-way. A live table created later (the demo's seeding) leaves the
    config's scheme for this context's life."""
    scheme = PartitionScheme.from_spec(config.partition)

    def locks() -> LeaseLocks:
        return lease_locks(config, open_store())

    fmt = _format(config, spark, scheme, locks, read_only)
    fmt.check_plain_table(config.live_table, "live table")
    fmt.check_plain_table(config.shadow, "shadow table")
    facts = fmt.partition_facts(config.live_table, config.partition.column)
    if facts is not None:
        resolved = scheme.resolved(config.partition, facts.column_type, facts.hidden_granularity, config.live_table)
        if resolved != scheme:
            scheme, fmt = resolved, _format(config, spark, resolved, locks, read_only)
    return TableContext(config, spark, fmt, scheme, read_only, open_store)


def lease_locks(config: BackfillConfig, store: StateStore) -> LeaseLocks:
    """The state store's leases, as the locks a format asks for when its storage has none; a
    local store's leases do not reach another machine, which the warning says."""
    if config.state.url is None:
        warnings.warn(
            LocalLocksWarning(
                f"the locks of {config.live_table} are leases in the local state store "
                f"({shown_url(config.state_url)}): a command on another machine would not wait for "
                "them; for several machines set state.url to a shared store (PostgreSQL)"
            ),
            stacklevel=3,
        )
    return LeaseLocks(store)


def _format(
    config: BackfillConfig,
    spark: SparkSession,
    scheme: PartitionScheme,
    locks: Callable[[], LeaseLocks],
    read_only: bool,
) -> TableFormat:
    """The config's format, taking the locks its storage may lack from the state store."""
    fmt = format_for(config.format, spark, scheme, config.base_dir)
    fmt.use_locks(locks)
    fmt.read_only = read_only
    return fmt


__all__ = ["TableContext", "open_table"]
