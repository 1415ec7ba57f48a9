"""The file store a folder log stands on, and the facts it records of a folder's files.

The log's guarantees (a version created once, a switch by rename, locks a dead holder lets go)
are only as good as the calls under it, so they are kept to one small interface, `FileStore`,
that each kind of storage implements once and `tests/formats/test_file_stores.py` holds alike:
`LocalFiles` gives them by POSIX calls (an exclusive create by `link`, `rename`, `flock`), and
`object_files.S3Files` on a bucket, with the state store's leases as its locks (see
docs/design/decisions.md, Parquet on object storage). A folder's fingerprint and row count are
read through the same store, and its partition value from its name, so the log never needs
Spark to tell what a folder holds or whether it changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import posixpath
import shutil
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

from shadow_backfill import testpoints


class FileStore(Protocol):
    """The few file operations the log and its placements use, on paths given as strings (a
    `Path` would fold `s3a://` into `s3a:/`). Kept this small so that another store can hold a
    log: list, read, create once, delete, and each file's size and time for fingerprints."""

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def children(self, path: str) -> list[tuple[str, bool]]:
        """(name, is a folder) of each entry right under `path`, sorted by name; none if absent."""
        ...

    def files(self, path: str) -> list[tuple[str, int, int]]:
        """(path relative to `path`, size, modification time in ns) of every file below it, in
        the order `fingerprint` hashes them: always the same for the same files (a store's own
        order; fingerprints are compared only with the same store's)."""
        ...

    def read_text(self, path: str) -> str: ...

    def create_new(self, path: str, text: str) -> None:
        """Create a file holding `text`, whole or not at all; FileExistsError if one is there."""
        ...

    def touch(self, path: str) -> None: ...

    def make_dirs(self, path: str) -> None: ...

    def rename(self, src: str, dst: str) -> None: ...

    def delete_tree(self, path: str) -> None: ...

    def modified_ms(self, path: str) -> float: ...

    def parquet_rows(self, path: str) -> int:
        """Rows in the Parquet files below `path`, from their footers (no Spark job)."""
        ...

    def lock(self, path: str, exclusive: bool) -> AbstractContextManager[None]:
        """Held across processes until the block ends, and let go if the holder dies."""
        ...


class LocalFiles:
    """A local or mounted file system: the store whose `link`, `rename` and `flock` give the log
    its exclusive create, the path switch and its locks. Errors other than a missing file are
    raised, as `pathlib` raises them: a folder that cannot be read must never pass for one that
    is gone (a switch would take it as moved into place)."""

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def is_dir(self, path: str) -> bool:
        return Path(path).is_dir()

    def children(self, path: str) -> list[tuple[str, bool]]:
        base = Path(path)
        if not base.is_dir():
            return []
        return sorted((child.name, child.is_dir()) for child in base.iterdir())

    def files(self, path: str) -> list[tuple[str, int, int]]:
        out = []
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for name in sorted(filenames):
                full = Path(dirpath) / name
                st = full.stat()
                out.append((str(full.relative_to(path)), st.st_size, st.st_mtime_ns))
        return out

    def read_text(self, path: str) -> str:
        return Path(path).read_text()

    def create_new(self, path: str, text: str) -> None:
        """Written to a temporary file and synced first, then linked into place: `link` fails if
        the name exists, so two writers can never both create one version."""
        tmp = posixpath.join(posixpath.dirname(path), f".{uuid.uuid4().hex}.tmp")
        with open(tmp, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        finally:
            os.unlink(tmp)

    def touch(self, path: str) -> None:
        Path(path).touch()

    def make_dirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def delete_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def modified_ms(self, path: str) -> float:
        return os.stat(path).st_mtime * 1000

    def parquet_rows(self, path: str) -> int:
        import pyarrow.parquet as pq

        return sum(
            pq.read_metadata(Path(dirpath) / name).num_rows
            for dirpath, _, filenames in os.walk(path)
            for name in filenames
            if not name.startswith((".", "_"))
        )

    @contextmanager
    def lock(self, path: str, exclusive: bool) -> Iterator[None]:
        """A `flock` on `path`: the kernel lets it go when its holder dies, so a killed writer
        never blocks the next one. Tried without blocking first, so that a test can see a writer
        start to wait (`testpoints.FOLDER_LOCK_WAITS`) instead of guessing it from time."""
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
            except BlockingIOError:
                testpoints.reached(testpoints.FOLDER_LOCK_WAITS)
                fcntl.flock(handle.fileno(), mode)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


LOCAL_FILES = LocalFiles()


def fingerprint(folder: str | Path, files: FileStore = LOCAL_FILES) -> str:
    """A digest of every file under `folder` (path, size, mtime): a rename keeps all three, so a
    generation moved into place keeps its fingerprint; another writer's files change it."""
    digest = hashlib.sha256()
    for relative, size, mtime_ns in files.files(str(folder)):
        digest.update(f"{relative}\0{size}\0{mtime_ns}\n".encode())
    return digest.hexdigest()


def count_rows(folder: str | Path, files: FileStore = LOCAL_FILES) -> int:
    """Rows in the Parquet files under `folder`, from their footers (no Spark job)."""
    return files.parquet_rows(str(folder))


def folder_text(name: str) -> str | None:
    """The partition value text of a folder `col=value` (Hive escaping undone)."""
    _, sep, value = name.partition("=")
    return unquote(value) if sep else None
