"""How readers are pointed at a version's partition folders: the part of a folder log's switch
that differs by where the table is read from.

A path dataset is read from its folders, so its switch renames them into place
(`RenamePlacement`); a table by name is read through the metastore, so its switch changes
partition locations and moves no data (`parquet_metastore.MetastorePlacement`). The log journals
and settles a switch the same way for both and calls a placement only to move one folder, so a
placement sees the log through `PlacedLog`, the few things it needs of it, and does not import
the log that imports it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Protocol

from shadow_backfill.formats.folder_files import FileStore
from shadow_backfill.formats.folder_versions import Folder, Version


class PlacedLog(Protocol):
    """What a placement needs of the folder log it switches for (`folder_log.FolderLog`)."""

    root: str
    meta: str
    files: FileStore

    def gen_dir(self, gid: str) -> str: ...

    def partition_folders(self, base: str) -> Iterator[tuple[str, str]]: ...


class Placement(Protocol):
    """How readers are pointed at a partition folder's data: by renaming folders into place under
    the root (path datasets), or by a metastore partition's location (tables by name)."""

    located: bool  # folders keep their own location (recorded in the log) instead of moving

    def current(self, log: PlacedLog, latest: Version | None) -> dict[str, str]:
        """Each partition folder readers see now, and where its data is."""

    def switch(self, log: PlacedLog, name: str, old: Folder | None, new: Folder | None, version: int) -> None:
        """Point readers of folder `name` from `old` to `new` (None: no such partition); idempotent."""

    def settled(self) -> None:
        """Called after a switch finished (a metastore table's cached listings are refreshed)."""


class RenamePlacement:
    """Path datasets: the current data of `ds=X` is `<root>/ds=X`; a switch renames the current
    folder into its generation folder and the new one into place."""

    located = False

    def current(self, log: PlacedLog, latest: Version | None) -> dict[str, str]:
        return {posixpath.basename(child): child for child, _ in log.partition_folders(log.root)}

    def switch(self, log: PlacedLog, name: str, old: Folder | None, new: Folder | None, version: int) -> None:
        files = log.files
        live = posixpath.join(log.root, name)
        if old is not None and new is not None and old.gid == new.gid:
            return
        staged = posixpath.join(log.gen_dir(new.gid), name) if new is not None else None
        if staged is not None and not files.exists(staged):
            return  # moved into place already
        if files.exists(live):
            kept = posixpath.join(log.gen_dir(old.gid if old is not None else f"displaced-{version}"), name)
            if not files.exists(kept):
                files.make_dirs(posixpath.dirname(kept))
                files.rename(live, kept)
        if staged is not None:
            files.rename(staged, live)

    def settled(self) -> None:
        return None
