"""Table formats behind one interface, and the one registry of them.

Config validation, the CLI's choices and the demo ask this registry; nothing outside
`formats/` names a format. Adding a backend = one module `formats/<name>.py` with a
`formats.base.TableFormat` subclass `<Name>Format`, plus one :class:`FormatSpec` entry below.
This module imports no format and no Spark (`config.py` imports it, and Delta users need no
Iceberg and back): `format_class` imports a format's module when it is asked for, and the
interface is imported from `formats.base`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from shadow_backfill.formats.base import TableFormat
    from shadow_backfill.partitions import PartitionScheme

__all__ = ["FORMATS", "FormatSpec", "format_class", "format_for", "format_names", "spec"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class FormatSpec:
    """What the rest of the tool may know about a format without importing it."""

    name: str
    summary: str
    demo_live_table: str  # the demo's live table
    # Table names: an identifier (catalog.db.table) only, or also a path.
    identifier_only: bool = False
    demo_spark: dict[str, Any] = field(default_factory=dict)  # the demo's settings beyond the defaults

    # A format lives in `formats/<name>.py` as the class `<Name>Format`: one convention, so an
    # entry names only what differs.
    @property
    def title(self) -> str:
        return self.name.capitalize()

    @property
    def module(self) -> str:
        return f"{__name__}.{self.name}"

    @property
    def class_name(self) -> str:
        return f"{self.title}Format"

    def table_name_error(self, name: str) -> str | None:
        """Why `name` cannot name a table of this format, or None when it can."""
        if self.identifier_only and not _IDENTIFIER.match(name):
            return f"{self.title} table {name!r} must be an identifier like catalog.db.table"
        if "/" not in name and "://" not in name and not _IDENTIFIER.match(name):
            return f"{self.title} table {name!r} is neither a path (with a /) nor a table name like db.table"
        return None


FORMATS: dict[str, FormatSpec] = {
    spec.name: spec
    for spec in (
        FormatSpec(
            name="iceberg",
            summary="Iceberg tables in a Spark catalog (embedded local Spark)",
            demo_live_table="local.demo.features",
            identifier_only=True,
        ),
        FormatSpec(
            name="delta",
            summary="Delta tables by path or by name (classic Spark with delta-spark, or Spark Connect with --remote)",
            demo_live_table="warehouse/delta/features",
        ),
        FormatSpec(
            name="parquet",
            summary="Hive-style Parquet folders by path (col=value/), switched by versioned partition folders",
            demo_live_table="warehouse/parquet/features",
        ),
    )
}


def format_names() -> list[str]:
    return list(FORMATS)


def spec(name: str) -> FormatSpec:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown table format {name!r} (expected one of: {', '.join(FORMATS)})") from None


def format_class(name: str) -> type[TableFormat]:
    """The class for a format name, imported on first use."""
    s = spec(name)
    cls: type[TableFormat] = getattr(importlib.import_module(s.module), s.class_name)
    return cls


def format_for(name: str, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> TableFormat:
    return format_class(name)(spark, scheme, base_dir)
