"""Where a Parquet table lies, and the places it may not lie.

A table is named two ways, by path or by its metastore name, and the switch that gives it
versions works only where its moves are atomic for readers: a path dataset's renames on a local
or mounted file system, a named table's partition locations there or on S3. So where a table
lies decides whether the format takes it at all; these rules are kept here, apart from the
format's reads and writes, so that each refusal is worded once.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.folder_files import FileStore
from shadow_backfill.formats.object_files import on_s3

# Why Parquet by path stays on local or mounted file systems: its switch renames folders into
# place, and on an object store a rename is a copy and a delete per object, which readers see
# half done. A table by name is switched by partition locations instead (no data moves), so it
# can live on S3, its log there too (`object_files.py`). Iceberg and Delta commit atomically.
OBJECT_STORE_REFUSAL = (
    "Parquet tables by path on object storage are not supported (their switch renames folders, a copy "
    "and a delete per object there); name the table in your metastore (db.table), keep it on a local or "
    "mounted file system, or use Iceberg or Delta"
)
NOT_S3_REFUSAL = (
    "Parquet tables by name are supported on a local or mounted file system and on S3 (s3a://) only; "
    "use Iceberg or Delta there"
)


def is_name(table: str) -> bool:
    """A metastore table (`db.events`), not a folder: no `/` and no URL scheme."""
    return "/" not in table and "://" not in table


def named_table_path(table: str, location: str) -> str:
    """The folder of a table by name, from the location the metastore holds for it."""
    if "://" in location and not on_s3(location):
        raise ConfigError(f"Parquet table {table!r} lies at {location}: {NOT_S3_REFUSAL}")
    return location


def dataset_path(table: str, base_dir: Path) -> str:
    """The folder of a table by path: as given, relative to the config's folder."""
    if table.startswith("file:"):
        table = table.removeprefix("file:").replace("///", "/", 1)
    if "://" in table:
        raise ConfigError(f"Parquet table {table!r}: {OBJECT_STORE_REFUSAL}")
    return table if table.startswith("/") else str(base_dir / table)


def nested_names(files: FileStore, root: str) -> set[str]:
    """Folder names `col=value` at every depth of the first partition path (the layout's columns)."""
    names: set[str] = set()
    level = root
    while True:
        subs = [n for n, is_dir in files.children(level) if is_dir and "=" in n and not n.startswith(("_", "."))]
        if not subs:
            return names
        names.add(subs[0])
        level = posixpath.join(level, subs[0])
