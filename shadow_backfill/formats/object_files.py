"""The folder log of a Parquet table by name, kept on S3: `folder_files.FileStore` over pyarrow's
S3 client, with the state store's leases as its locks.

A table by name is switched by its metastore partitions' locations (`parquet_metastore.py`), so
nothing on the bucket is ever renamed: the log needs only to list prefixes, read and write
small objects, delete a prefix, and each object's size and time (for fingerprints). What a
bucket lacks, an exclusive create and `flock`, comes from the lock service: every log write
holds the table's exclusive lock, so "create if absent" is a check and a put under it, and a
pinned read holds a shared lock that `gc` waits for. Paths are `s3a://`, `s3://` or `s3n://`
URIs; the client is pyarrow's (a dependency already), set up from the same `fs.s3a.*` settings
the user gives Spark, so one set of credentials serves both.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.locations import normalize_location

if TYPE_CHECKING:  # the unit tier imports this module without PySpark, which formats.base needs
    from shadow_backfill.formats.base import LockService

S3_SCHEMES = ("s3a", "s3", "s3n")


def on_s3(path: str) -> bool:
    return urlparse(path).scheme.lower() in S3_SCHEMES


def bucket_of(path: str) -> str:
    return urlparse(path).netloc


def s3_options(setting: Callable[[str], str | None], bucket: str) -> dict[str, Any]:
    """pyarrow's S3 client options from Hadoop's s3a settings (`setting("endpoint")` reads
    `spark.hadoop.fs.s3a.endpoint`), read as s3a reads them for `bucket`: a per-bucket setting
    `fs.s3a.bucket.<bucket>.<key>` wins over `fs.s3a.<key>`, so a user whose buckets differ in
    endpoint or credentials sets them once, for Spark and the tool alike. What is not set comes
    from AWS's default chain, as in s3a."""

    def get(key: str) -> str | None:
        value = setting(f"bucket.{bucket}.{key}")
        return setting(key) if value is None else value

    options: dict[str, Any] = {}
    for key, option in (("access.key", "access_key"), ("secret.key", "secret_key"), ("session.token", "session_token")):
        if (value := get(key)) is not None:
            options[option] = value
    region = get("endpoint.region") or get("region")
    if region is not None:
        options["region"] = region
    if (endpoint := get("endpoint")) is not None:
        parsed = urlparse(endpoint if "://" in endpoint else f"//{endpoint}")
        ssl = (get("connection.ssl.enabled") or "true").lower() == "true"
        options["scheme"] = parsed.scheme or ("https" if ssl else "http")
        options["endpoint_override"] = parsed.netloc
        if (get("path.style.access") or "false").lower() != "true":
            options["force_virtual_addressing"] = True  # s3a's default; pyarrow >= 16
    return options


def s3_client(setting: Callable[[str], str | None], bucket: str) -> Any:
    """pyarrow's S3 client for one bucket (`s3_options`)."""
    from pyarrow import fs

    return fs.S3FileSystem(**s3_options(setting, bucket))


class S3Files:
    """`folder_files.FileStore` on S3 (see the module docstring). `locks` gives the lock service
    when a lock is first taken; without one, a lock is refused rather than faked."""

    def __init__(self, client: Any, locks: Callable[[], LockService] | None) -> None:
        self.client = client
        self._locks = locks

    @staticmethod
    def _key(path: str) -> str:
        """`bucket/key` as pyarrow names an object."""
        parsed = urlparse(path)
        return posixpath.normpath(f"{parsed.netloc}/{parsed.path.lstrip('/')}")

    def _info(self, path: str) -> Any:
        return self.client.get_file_info(self._key(path))

    def exists(self, path: str) -> bool:
        from pyarrow import fs

        return bool(self._info(path).type != fs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        from pyarrow import fs

        return bool(self._info(path).type == fs.FileType.Directory)

    def _listing(self, path: str, recursive: bool) -> list[Any]:
        from pyarrow import fs

        return list(
            self.client.get_file_info(fs.FileSelector(self._key(path), allow_not_found=True, recursive=recursive))
        )

    def children(self, path: str) -> list[tuple[str, bool]]:
        from pyarrow import fs

        return sorted((i.base_name, i.type == fs.FileType.Directory) for i in self._listing(path, False))

    def files(self, path: str) -> list[tuple[str, int, int]]:
        """Every object below `path`, by key (a bucket has no folders to walk depth first)."""
        from pyarrow import fs

        base = self._key(path)
        found = [i for i in self._listing(path, True) if i.type == fs.FileType.File]
        return sorted((posixpath.relpath(i.path, base), int(i.size), int(i.mtime_ns or 0)) for i in found)

    def read_text(self, path: str) -> str:
        with self.client.open_input_stream(self._key(path)) as source:
            return bytes(source.read()).decode()

    def create_new(self, path: str, text: str) -> None:
        """A check and a put: exclusive because every caller holds the table's lock (a bucket
        has no create-if-absent this client can ask for)."""
        if self.exists(path):
            raise FileExistsError(path)
        self._put(path, text.encode())

    def _put(self, path: str, data: bytes) -> None:
        with self.client.open_output_stream(self._key(path)) as out:
            out.write(data)

    def touch(self, path: str) -> None:
        self._put(path, b"")

    def make_dirs(self, path: str) -> None:
        """A marker object, so that an empty prefix (a partition pointed at nothing) exists."""
        self.client.create_dir(self._key(path), recursive=True)

    def rename(self, src: str, dst: str) -> None:
        raise ConfigError(f"cannot rename {src} on an object store: Parquet by path is refused there")

    def delete_tree(self, path: str) -> None:
        """Gone already is fine (a metastore's DROP TABLE may have deleted part of it)."""
        with contextlib.suppress(FileNotFoundError):
            self.client.delete_dir(self._key(path))

    def modified_ms(self, path: str) -> float:
        """A prefix's newest object: a generation still being written is as young as its last file."""
        from pyarrow import fs

        info = self._info(path)
        if info.type == fs.FileType.File:
            return int(info.mtime_ns or 0) / 1e6
        found = [int(i.mtime_ns or 0) for i in self._listing(path, True) if i.type == fs.FileType.File]
        return max(found, default=0) / 1e6

    def parquet_rows(self, path: str) -> int:
        """Rows from each data file's footer (pyarrow reads only the footer's byte range)."""
        import pyarrow.parquet as pq

        names = [i.path for i in self._listing(path, True) if i.is_file and not i.base_name.startswith((".", "_"))]
        return sum(pq.ParquetFile(name, filesystem=self.client).metadata.num_rows for name in names)

    @contextmanager
    def lock(self, path: str, exclusive: bool) -> Iterator[None]:
        if self._locks is None:
            raise ConfigError(f"no lock for {path}: Parquet tables on an object store need the tool's state store")
        with self._locks().hold(normalize_location(path), exclusive):
            yield
