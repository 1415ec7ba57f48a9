"""One table's context, built once per command object: every step reads the same resolved
facts instead of asking a facade that settles them as a side effect.

The partition scheme is the config's completed from the live table (its column type, a
hidden transform's granularity); the format is built for that scheme, read-only or writing
as fixed at construction, so no step can see a half-resolved scheme and no call order
matters. The state store opens on first use only: a command's checks read the context
before anything may be written, and opening the store creates it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from shadow_backfill.config import BackfillConfig
from shadow_backfill.formats import format_for
from shadow_backfill.formats.base import TableFormat
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.state import StateStore
from shadow_backfill.state.locks import LeaseLocks


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


def open_table(
    config: BackfillConfig,
    spark: SparkSession,
    open_store: Callable[[], StateStore],
    locks: Callable[[], LeaseLocks],
    *,
    read_only: bool,
) -> TableContext:
    """The context of `config`'s tables. Live and the shadow must be plain tables (or not exist
    yet): a view or a metadata table is a usage error naming it here, before any step, rather
    than an engine error half-way. A live table created later (the demo's seeding) leaves the
    config's scheme for this context's life."""
    scheme = PartitionScheme.from_spec(config.partition)
    fmt = _format(config, spark, scheme, locks, read_only)
    fmt.check_plain_table(config.live_table, "live table")
    fmt.check_plain_table(config.shadow, "shadow table")
    facts = fmt.partition_facts(config.live_table, config.partition.column)
    if facts is not None:
        resolved = scheme.resolved(config.partition, facts.column_type, facts.hidden_granularity, config.live_table)
        if resolved != scheme:
            scheme, fmt = resolved, _format(config, spark, resolved, locks, read_only)
    return TableContext(config, spark, fmt, scheme, read_only, open_store)


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
