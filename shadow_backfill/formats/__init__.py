"""Table formats behind one interface: pick one with :func:`format_for`."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from shadow_backfill.formats.base import Commit, TableFormat
from shadow_backfill.partitions import PartitionScheme

__all__ = ["Commit", "TableFormat", "format_class", "format_for"]


def format_class(name: str) -> type[TableFormat]:
    """The class for a format name; imported lazily so Delta users need no Iceberg and back."""
    if name == "iceberg":
        from shadow_backfill.formats.iceberg import IcebergFormat

        return IcebergFormat
    if name == "delta":
        from shadow_backfill.formats.delta import DeltaFormat

        return DeltaFormat
    raise ValueError(f"unknown table format {name!r} (expected 'iceberg' or 'delta')")


def format_for(name: str, spark: SparkSession, scheme: PartitionScheme, base_dir: Path) -> TableFormat:
    return format_class(name)(spark, scheme, base_dir)
