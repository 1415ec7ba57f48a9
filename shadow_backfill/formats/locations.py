"""Where a table lies, in one spelling, so two configs naming the same place are seen to.

Table identity compares locations: live and shadow must not be the same table, nor one inside
the other. A local path has many spellings (`file:`, `..`, symlinks); an object-store URI has
others (`s3://`, `s3a://` and `s3n://` name the same bucket; a doubled slash or a `.` segment
names the same key prefix). No PySpark here: the unit tier tests it.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from urllib.parse import urlparse

# Hadoop's connectors for one store, and the name the store goes by.
_SAME_STORE = {"s3a": "s3", "s3n": "s3"}


def normalize_location(location: str) -> str:
    """A location in one spelling. Local: `file:` dropped, `..` and symlinks resolved. Object
    stores: the scheme lower-cased and its connectors merged (`s3a` → `s3`), the key prefix
    normalized lexically as Hadoop's `Path` does (no symlinks on a bucket), no trailing slash."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return os.path.realpath(parsed.path if parsed.scheme else location)
    scheme = parsed.scheme.lower()
    scheme = _SAME_STORE.get(scheme, scheme)
    path = posixpath.normpath("/" + parsed.path.lstrip("/")) if parsed.path.strip("/") else ""
    return f"{scheme}://{parsed.netloc}{path}".rstrip("/")


def inside(inner: str, outer: str) -> bool:
    """Whether normalized location `inner` is `outer` or lies under it."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def table_spelling(table: str, base_dir: str) -> str:
    """One spelling of a config's table, so two configs naming the same table differently are
    caught before Spark starts: a path (relative to its config's folder, as the formats read it)
    or URI normalized, a name lower-cased without the session catalog's own prefix
    (`spark_catalog.db.t` is `db.t`). The formats compare identities again once tables open."""
    if "/" in table or "://" in table:
        absolute = "://" in table or table.startswith(("/", "file:"))
        return normalize_location(table if absolute else os.path.join(base_dir, table))
    name = table.lower().replace("`", "")  # a quoted part is the same table
    return name.removeprefix("spark_catalog.") if name.count(".") >= 2 else name


def lineage_name(location: str) -> tuple[str, str]:
    """A normalized location as OpenLineage's dataset naming spells it (and so its Spark
    integration): a local path is namespace `file` and the absolute path; an object store's
    is `scheme://bucket` and the key without its leading slash."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return "file", parsed.path if parsed.scheme else location
    return f"{parsed.scheme}://{parsed.netloc}", parsed.path.lstrip("/")


@dataclass(frozen=True)
class LineageDataset:
    """A table as lineage systems name it: OpenLineage's naming of a physical location
    (`namespace` `file` with an absolute path, or `s3://bucket` with the key), the catalog
    name it goes by (`symlink`, for a table reached by name), how it is stored and its version
    (an Iceberg snapshot id, a Delta version, a Parquet table's version in the tool's log)."""

    namespace: str
    name: str
    symlink: str | None
    storage_layer: str
    file_format: str
    version: str | None
    symlink_namespace: str | None = None  # the catalog's, where it differs from the location's
