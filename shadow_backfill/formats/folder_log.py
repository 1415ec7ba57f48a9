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
the validated shadow version) *pins* the table: a shared lock on `<root>/_shadow_backfill/readers`
that every switch and every `gc` deletion waits for exclusively. A folder is therefore never
moved or deleted while a pinned job lists or reads it.

Every file operation goes through a `folder_files.FileStore` (`LocalFiles` on a disk,
`object_files.S3Files` on a bucket), and every move of a folder through a
`folder_placements.Placement`: this module holds only the log's order of steps and its locks.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from shadow_backfill.formats.folder_files import LOCAL_FILES, FileStore, count_rows, fingerprint, folder_text
from shadow_backfill.formats.folder_placements import Placement, RenamePlacement
from shadow_backfill.formats.folder_versions import Folder, Version, now_ms

META = "_shadow_backfill"
PIN_ATTEMPTS = 20  # a pin waits for at most this many other writers' switches to finish
STAGING_GRACE_MS = 6 * 3600 * 1000  # an uncommitted generation younger than this may be in flight


class UnreadableFolders(Exception):
    """Known partition folders that no longer read as partitions (the format raises it as the
    config error it is: the log leaves what a refusal means, and its exit code, to its caller)."""


class FolderLog:
    """The log of one folder table. `key_of` maps a partition value's text to its key (None: not a
    partition of this table, such as the null partition)."""

    def __init__(
        self,
        root: str,
        column: str,
        key_of: Callable[[str], str | None],
        placement: Placement | None = None,
        files: FileStore = LOCAL_FILES,
    ) -> None:
        self.placement: Placement = placement or RenamePlacement()
        self.files = files
        self.root = root if "://" in root else str(Path(root))  # spelled as `Path` always spelled it
        self.meta = posixpath.join(self.root, META)
        self.log_dir = posixpath.join(self.meta, "log")
        self.column = column
        self.key_of = key_of
        self._cache: dict[int, Version] = {}
        self._moving = 0  # depth of `moving()` blocks this object holds (it is reentrant)

    # ---- reading the log ----------------------------------------------------------------------

    def _log_file(self, version: int, suffix: str) -> str:
        return posixpath.join(self.log_dir, f"{version:020d}.{suffix}")

    def has_log(self) -> bool:
        return any(name.endswith(".json") for name, _ in self.files.children(self.log_dir))

    def versions(self) -> list[int]:
        stems = [name.removesuffix(".json") for name, _ in self.files.children(self.log_dir) if name.endswith(".json")]
        return sorted(int(stem) for stem in stems if stem.isdigit())

    def get(self, version: int) -> Version:
        if version not in self._cache:
            self._cache[version] = Version.from_json(self.files.read_text(self._log_file(version, "json")))
        return self._cache[version]

    def all(self) -> list[Version]:
        return [self.get(v) for v in self.versions()]

    def latest(self) -> Version | None:
        versions = self.versions()
        return self.get(versions[-1]) if versions else None

    def gen_dir(self, gid: str) -> str:
        return posixpath.join(self.meta, "gen", gid)

    def where(self, name: str, folder: Folder, current: Version) -> str:
        """Where a folder's data lies now: its own location, or at the root if it is current and
        in its generation folder if not."""
        if folder.location is not None:
            return folder.location
        now = current.folders.get(name)
        base = self.root if now is not None and now.gid == folder.gid else self.gen_dir(folder.gid)
        return posixpath.join(base, name)

    # ---- folders on disk ----------------------------------------------------------------------

    def partition_folders(self, base: str) -> Iterator[tuple[str, str]]:
        for name, is_dir in self.files.children(base):
            if not is_dir or name.startswith(("_", ".")) or not name.startswith(f"{self.column}="):
                continue
            text = folder_text(name)
            key = self.key_of(text) if text is not None else None
            if key is not None:
                yield posixpath.join(base, name), key

    def has_folders(self) -> bool:
        return next(self.partition_folders(self.root), None) is not None

    def staged(self, gid: str) -> dict[str, Folder]:
        """The partition folders a write left in generation folder `gid`."""
        folders = self.partition_folders(self.gen_dir(gid))
        return self.scan({posixpath.basename(child): child for child, _ in folders}, gid)

    def scan(self, paths: Mapping[str, str], gid: str, known: Mapping[str, Folder] | None = None) -> dict[str, Folder]:
        """Folders `name -> path` as generation `gid`; a folder whose fingerprint matches `known`
        is that known folder (no footers read)."""
        out: dict[str, Folder] = {}
        for name, path in sorted(paths.items()):
            text = folder_text(name)
            key = self.key_of(text) if text is not None else None
            if key is None:
                continue
            fp = fingerprint(path, self.files)
            was = (known or {}).get(name)
            location = path if self.placement.located else None
            if was is not None and was.fingerprint == fp:
                out[name] = was
            else:
                out[name] = Folder(key, gid, fp, count_rows(path, self.files), location)
        return out

    # ---- writing the log ----------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One writer (or settler) of this table at a time, across processes; a killed writer's
        lock goes with it (`FileStore.lock`), so it never blocks the next one."""
        self.files.make_dirs(self.meta)
        with self.files.lock(posixpath.join(self.meta, "lock"), exclusive=True):
            yield

    def _readers_lock(self, exclusive: bool) -> AbstractContextManager[None]:
        self.files.make_dirs(self.meta)
        return self.files.lock(posixpath.join(self.meta, "readers"), exclusive)

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
        with self._readers_lock(exclusive=True):
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
            with self._readers_lock(exclusive=False):
                latest = self.latest()
                if latest is not None and self.applied(latest.version):
                    yield latest
                    return
        raise TimeoutError(f"{self.root}: other writers kept switching folders; could not pin a version")

    def _write_exclusive(self, version: Version) -> None:
        """Create the version's file atomically and only if no other writer made that version."""
        self.files.make_dirs(self.log_dir)
        self.files.create_new(self._log_file(version.version, "json"), version.to_json())

    def applied(self, version: int) -> bool:
        return self.files.exists(self._log_file(version, "applied"))

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
            self.files.touch(self._log_file(new.version, "applied"))

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

    def _refuse_unreadable(self, current: Mapping[str, str], found: Mapping[str, Folder], latest: Version) -> None:
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

    def expired(self, older_than_ms: int, now: int | None = None) -> list[str]:
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
            if (path := self.where(n, f, current)) not in in_use and self.files.exists(path)
        }
        known = {f.gid for v in versions for f in v.folders.values()}
        gen = posixpath.join(self.meta, "gen")
        grace = min(older_than_ms, (now_ms() if now is None else now) - STAGING_GRACE_MS)
        for name, _ in self.files.children(gen):
            # not committed: abandoned, or being written right now by another process
            generation = posixpath.join(gen, name)
            if name not in known and self.files.modified_ms(generation) < grace:
                out.add(generation)
        return sorted(out, key=lambda path: path.split("/"))  # as `Path`s sort: by their parts

    def delete(self, folders: Sequence[str]) -> None:
        """Delete kept folders, never while a pinned reader may be reading them."""
        with self.moving():
            for d in folders:
                self.files.delete_tree(d)
                parent = posixpath.dirname(d)
                in_gen = posixpath.basename(posixpath.dirname(parent)) == "gen" and self.files.is_dir(parent)
                if in_gen and not any(is_dir for _, is_dir in self.files.children(parent)):
                    self.files.delete_tree(parent)  # a generation with no folder left
