"""Versions and crash-safe switches for a Hive-style folder table, kept beside its data.

Plain Parquet in `col=value/` folders has no snapshots and no atomic commit. This log adds
both without changing what other readers of the folders see:

    <root>/<col>=<value>/                          the current data of a partition (any reader)
    <root>/_shadow_backfill/gen/<gid>/<col>=<value>/  every other generation: staged or kept
    <root>/_shadow_backfill/log/<version>.json     one file per version: the table's whole state
    <root>/_shadow_backfill/log/<version>.applied  that version's folder switch has finished

A generation (`gid`) is written once and never modified; it is either current (at the root) or
kept (under `gen/`). A version lists, for each partition folder, the generation it holds. A
commit writes its version file first (the journal: the switch it intends, created exclusively),
then moves folders, then marks the version applied. A killed switch is rolled forward by the
next process that opens the table, so each partition ends all-old or all-new and the log agrees
with the folders. Folders that changed behind the log's back (another writer's dynamic
overwrite or append) are adopted as a version of their own, so such a write is seen as a commit
by another writer. Spark skips `_`-prefixed folders, so readers never see `_shadow_backfill`.

A reader that needs the folders to stay put for the length of a Spark job (a promotion reading
the validated shadow version) *pins* the table: a shared `flock` on `<root>/_shadow_backfill/readers`
that every switch and every `gc` deletion waits for exclusively. A folder is therefore never
moved or deleted while a pinned job lists or reads it.

Local and mounted file systems only: the switch relies on POSIX rename and `flock`.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

META = "_shadow_backfill"
PIN_ATTEMPTS = 20  # a pin waits for at most this many other writers' switches to finish
STAGING_GRACE_MS = 6 * 3600 * 1000  # an uncommitted generation younger than this may be in flight


@dataclass(frozen=True)
class Folder:
    """One partition folder's data at one version: which generation holds it, and its facts."""

    key: str
    gid: str
    fingerprint: str
    rows: int
    location: str | None = None  # where the data stays (metastore tables); None: by position


@dataclass(frozen=True)
class Version:
    """The table's whole state after one commit."""

    version: int
    timestamp_ms: int
    operation: str
    properties: dict[str, str]
    touched: list[str]  # partition keys this version changed
    schema: str  # Spark StructType JSON
    partition_columns: list[str]
    table_id: str
    folders: dict[str, Folder] = field(default_factory=dict)  # folder name -> its data

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Version:
        raw = json.loads(text)
        raw["folders"] = {name: Folder(**f) for name, f in raw["folders"].items()}
        return cls(**raw)

    def keys(self) -> set[str]:
        return {f.key for f in self.folders.values()}


class Placement(Protocol):
    """How readers are pointed at a partition folder's data: by renaming folders into place under
    the root (path datasets), or by a metastore partition's location (tables by name)."""

    located: bool  # folders keep their own location (recorded in the log) instead of moving

    def current(self, log: FolderLog, latest: Version | None) -> dict[str, Path]:
        """Each partition folder readers see now, and where its data is."""

    def switch(self, log: FolderLog, name: str, old: Folder | None, new: Folder | None, version: int) -> None:
        """Point readers of folder `name` from `old` to `new` (None: no such partition); idempotent."""

    def settled(self) -> None:
        """Called after a switch finished (a metastore table's cached listings are refreshed)."""


class RenamePlacement:
    """Path datasets: the current data of `ds=X` is `<root>/ds=X`; a switch renames the current
    folder into its generation folder and the new one into place."""

    located = False

    def current(self, log: FolderLog, latest: Version | None) -> dict[str, Path]:
        return {child.name: child for child, _ in log.partition_folders(log.root)}

    def switch(self, log: FolderLog, name: str, old: Folder | None, new: Folder | None, version: int) -> None:
        live = log.root / name
        if old is not None and new is not None and old.gid == new.gid:
            return
        staged = log.gen_dir(new.gid) / name if new is not None else None
        if staged is not None and not staged.exists():
            return  # moved into place already
        if live.exists():
            kept = log.gen_dir(old.gid if old is not None else f"displaced-{version}") / name
            if not kept.exists():
                kept.parent.mkdir(parents=True, exist_ok=True)
                os.rename(live, kept)
        if staged is not None:
            os.rename(staged, live)

    def settled(self) -> None:
        return None


def fingerprint(folder: Path) -> str:
    """A digest of every file under `folder` (path, size, mtime): a rename keeps all three, so a
    generation moved into place keeps its fingerprint; another writer's files change it."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            st = path.stat()
            digest.update(f"{path.relative_to(folder)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def count_rows(folder: Path) -> int:
    """Rows in the Parquet files under `folder`, from their footers (no Spark job)."""
    import pyarrow.parquet as pq

    return sum(
        pq.read_metadata(Path(dirpath) / name).num_rows
        for dirpath, _, filenames in os.walk(folder)
        for name in filenames
        if not name.startswith((".", "_"))
    )


def folder_text(name: str) -> str | None:
    """The partition value text of a folder `col=value` (Hive escaping undone)."""
    _, sep, value = name.partition("=")
    return unquote(value) if sep else None


class UnreadableFolders(Exception):
    """Known partition folders that no longer read as partitions (the format raises it as the
    config error it is; this module imports nothing of the package, see test_folder_switch)."""


class FolderLog:
    """The log of one folder table. `key_of` maps a partition value's text to its key (None: not a
    partition of this table, such as the null partition)."""

    def __init__(
        self, root: str, column: str, key_of: Callable[[str], str | None], placement: Placement | None = None
    ) -> None:
        self.placement: Placement = placement or RenamePlacement()
        self.root = Path(root)
        self.meta = self.root / META
        self.log_dir = self.meta / "log"
        self.column = column
        self.key_of = key_of
        self._cache: dict[int, Version] = {}
        self._moving = 0  # depth of `moving()` blocks this object holds (it is reentrant)

    # ---- reading the log ----------------------------------------------------------------------

    def has_log(self) -> bool:
        return self.log_dir.is_dir() and any(self.log_dir.glob("*.json"))

    def versions(self) -> list[int]:
        if not self.log_dir.is_dir():
            return []
        return sorted(int(p.stem) for p in self.log_dir.glob("*.json") if p.stem.isdigit())

    def get(self, version: int) -> Version:
        if version not in self._cache:
            self._cache[version] = Version.from_json((self.log_dir / f"{version:020d}.json").read_text())
        return self._cache[version]

    def all(self) -> list[Version]:
        return [self.get(v) for v in self.versions()]

    def latest(self) -> Version | None:
        versions = self.versions()
        return self.get(versions[-1]) if versions else None

    def gen_dir(self, gid: str) -> Path:
        return self.meta / "gen" / gid

    def where(self, name: str, folder: Folder, current: Version) -> Path:
        """Where a folder's data lies now: its own location, or at the root if it is current and
        in its generation folder if not."""
        if folder.location is not None:
            return Path(folder.location)
        now = current.folders.get(name)
        return self.root / name if now is not None and now.gid == folder.gid else self.gen_dir(folder.gid) / name

    # ---- folders on disk ----------------------------------------------------------------------

    def partition_folders(self, base: Path) -> Iterator[tuple[Path, str]]:
        if not base.is_dir():
            return
        for child in sorted(base.iterdir()):
            name = child.name
            if not child.is_dir() or name.startswith(("_", ".")) or not name.startswith(f"{self.column}="):
                continue
            text = folder_text(name)
            key = self.key_of(text) if text is not None else None
            if key is not None:
                yield child, key

    def has_folders(self) -> bool:
        return next(self.partition_folders(self.root), None) is not None

    def staged(self, gid: str) -> dict[str, Folder]:
        """The partition folders a write left in generation folder `gid`."""
        return self.scan({child.name: child for child, _ in self.partition_folders(self.gen_dir(gid))}, gid)

    def scan(self, paths: Mapping[str, Path], gid: str, known: Mapping[str, Folder] | None = None) -> dict[str, Folder]:
        """Folders `name -> path` as generation `gid`; a folder whose fingerprint matches `known`
        is that known folder (no footers read)."""
        out: dict[str, Folder] = {}
        for name, path in sorted(paths.items()):
            text = folder_text(name)
            key = self.key_of(text) if text is not None else None
            if key is None:
                continue
            fp = fingerprint(path)
            was = (known or {}).get(name)
            location = str(path) if self.placement.located else None
            out[name] = (
                was if was is not None and was.fingerprint == fp else Folder(key, gid, fp, count_rows(path), location)
            )
        return out

    # ---- writing the log ----------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One writer (or settler) of this table at a time, across processes; the kernel releases
        the lock when its holder dies, so a killed writer never blocks the next one."""
        self.meta.mkdir(parents=True, exist_ok=True)
        with open(self.meta / "lock", "a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextmanager
    def _readers_lock(self, mode: int) -> Iterator[None]:
        self.meta.mkdir(parents=True, exist_ok=True)
        with open(self.meta / "readers", "a+") as handle:
            fcntl.flock(handle.fileno(), mode)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextmanager
    def moving(self) -> Iterator[None]:
        """Held while folders are journaled, moved or deleted: waits until no pinned reader is
        reading, and holds new pins off until done. Taken after `locked()`, never before, by
        writers; pinned readers never take `locked()` while pinned, so the two cannot deadlock.
        Reentrant on this object (a commit settles inside its own block)."""
        if self._moving:
            self._moving += 1
            try:
                yield
            finally:
                self._moving -= 1
            return
        with self._readers_lock(fcntl.LOCK_EX):
            self._moving = 1
            try:
                yield
            finally:
                self._moving = 0

    @contextmanager
    def pinned(self) -> Iterator[Version]:
        """The newest version, with every folder of every version staying where it lies now
        until the block ends (a switch or `gc` of another process waits for it).

        Settles first, then pins, then checks that no version was journaled in between (one
        whose switch is waiting for another pin): if one was, the pin is let go, so that its
        switch can finish, and taken again. The caller must not write this table inside."""
        for _ in range(PIN_ATTEMPTS):
            with self.locked():
                self.sync()
            with self._readers_lock(fcntl.LOCK_SH):
                latest = self.latest()
                if latest is not None and self.applied(latest.version):
                    yield latest
                    return
        raise TimeoutError(f"{self.root}: other writers kept switching folders; could not pin a version")

    def _write_exclusive(self, version: Version) -> None:
        """Create the version's file atomically and only if no other writer made that version."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.log_dir / f".{uuid.uuid4().hex}.tmp"
        with open(tmp, "w") as out:
            out.write(version.to_json())
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, self.log_dir / f"{version.version:020d}.json")
        finally:
            tmp.unlink()

    def applied(self, version: int) -> bool:
        return (self.log_dir / f"{version:020d}.applied").exists()

    def commit(self, version: Version) -> Version:
        """Journal `version`, switch the folders to it, mark it applied (caller holds the lock)."""
        with self.moving():
            self._write_exclusive(version)
            self._cache[version.version] = version
            self.settle()
        return version

    def settle(self) -> None:
        """Finish the newest version's switch if a killed writer left it half done (idempotent)."""
        versions = self.versions()
        if not versions or self.applied(versions[-1]):
            return
        new = self.get(versions[-1])
        old = self.get(versions[-2]) if len(versions) > 1 else None
        before = old.folders if old is not None else {}
        touched = set(new.touched)
        names = {n for n, f in before.items() if f.key in touched} | {
            n for n, f in new.folders.items() if f.key in touched
        }
        with self.moving():
            for name in sorted(names):
                self.placement.switch(self, name, before.get(name), new.folders.get(name), new.version)
            self.placement.settled()
            (self.log_dir / f"{new.version:020d}.applied").touch()

    def sync(self, build_first: Callable[[dict[str, Folder]], Version] | None = None) -> Version | None:
        """Settle, then adopt folders that changed behind the log as a version by another writer;
        the table's newest version (None: no log and `build_first` not given). Caller holds the lock."""
        self.settle()
        latest = self.latest()
        if latest is None:
            if build_first is None:
                return None
            return self.commit(build_first(self.scan(self.placement.current(self, None), "v0")))
        if latest.partition_columns[:1] != [self.column]:
            return latest  # partitioned otherwise than the config says: the caller names that
        current = self.placement.current(self, latest)
        found = self.scan(current, f"ext{latest.version + 1}", latest.folders)
        self._refuse_unreadable(current, found, latest)
        folders = dict(latest.folders)
        touched: set[str] = set()
        for name in set(found) | set(folders):
            now, was = found.get(name), folders.get(name)
            if now is None and was is not None:
                touched.add(was.key)
                del folders[name]
            elif now is not None and now != was:
                touched.add(now.key)
                folders[name] = now
        if not touched:
            return latest
        adopted = Version(
            latest.version + 1,
            now_ms(),
            "WRITE (another writer)",
            {},
            sorted(touched),
            latest.schema,
            latest.partition_columns,
            latest.table_id,
            folders,
        )
        return self.commit(adopted)

    def _refuse_unreadable(self, current: Mapping[str, Path], found: Mapping[str, Folder], latest: Version) -> None:
        """A folder the log knows that is still there but no longer reads as a partition is a
        config that changed (partition.type or format), not a folder another writer deleted:
        adopting it as deleted would move live data out of the table."""
        unreadable = sorted(name for name in current if name in latest.folders and name not in found)
        if unreadable:
            raise UnreadableFolders(
                f"partition folder {unreadable[0]!r} of {str(self.root)!r} is not a partition of this config "
                f"({len(unreadable)} such folder(s)): check partition.type and partition.format; nothing was changed"
            )

    def next_version(
        self,
        latest: Version,
        operation: str,
        properties: Mapping[str, str],
        keys: Sequence[str],
        staged: Mapping[str, Folder],
    ) -> Version:
        """`latest` with the folders of `keys` replaced by `staged` (keys absent from it cleared)."""
        wanted = set(keys)
        folders = {n: f for n, f in latest.folders.items() if f.key not in wanted}
        folders.update(staged)
        return Version(
            latest.version + 1,
            now_ms(),
            operation,
            dict(properties),
            sorted(wanted),
            latest.schema,
            latest.partition_columns,
            latest.table_id,
            folders,
        )

    # ---- garbage --------------------------------------------------------------------------------

    def expired(self, older_than_ms: int, now: int | None = None) -> list[Path]:
        """Kept partition folders replaced before `older_than_ms`, and staged generations
        abandoned before it (a write killed before its commit, or refused by a conflict).

        A folder's age is counted from the commit that *replaced* it, not from the one that
        wrote it: a version stays whole while the version after it is younger than the
        retention, so a promotion's rollback target (the version before it) lives for the
        retention after the promotion, however old the table's data was. `now`: the clock."""
        versions = self.all()
        if not versions:
            return []
        current = versions[-1]
        in_use = {self.where(n, f, current) for n, f in current.folders.items()}
        for older, newer in itertools.pairwise(versions):
            if newer.timestamp_ms >= older_than_ms:  # `older` was still current within the retention
                in_use |= {self.where(n, f, current) for n, f in older.folders.items()}
        out = {
            path
            for v in versions
            for n, f in v.folders.items()
            if (path := self.where(n, f, current)) not in in_use and path.exists()
        }
        known = {f.gid for v in versions for f in v.folders.values()}
        gen = self.meta / "gen"
        grace = min(older_than_ms, (now_ms() if now is None else now) - STAGING_GRACE_MS)
        for generation in sorted(gen.iterdir()) if gen.is_dir() else []:
            # not committed: abandoned, or being written right now by another process
            if generation.name not in known and generation.stat().st_mtime * 1000 < grace:
                out.add(generation)
        return sorted(out)

    def delete(self, folders: Sequence[Path]) -> None:
        """Delete kept folders, never while a pinned reader may be reading them."""
        with self.moving():
            for d in folders:
                shutil.rmtree(d, ignore_errors=True)
                parent = d.parent
                if parent.parent.name == "gen" and parent.is_dir() and not any(p.is_dir() for p in parent.iterdir()):
                    shutil.rmtree(parent, ignore_errors=True)  # a generation with no folder left


def now_ms() -> int:
    return int(time.time() * 1000)
