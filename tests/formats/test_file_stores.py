"""The few file operations Parquet's version log stands on (`folder_files.FileStore`), kept alike by
the store on a disk (`LocalFiles`) and the one on S3 (`object_files.S3Files`, on the `s3` group's
real server, its locks leases in a real state store). No Spark: the log reaches files only
through these, so what they promise is tested here once per store."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.object_store import BUCKET

from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.folder_files import LOCAL_FILES, FileStore
from shadow_backfill.formats.object_files import S3Files
from shadow_backfill.state import StateStore
from shadow_backfill.state.locks import LeaseLocks


@pytest.fixture(params=["local", pytest.param("s3", marks=[pytest.mark.s3, pytest.mark.store])])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileStore, str]]:
    """A store and an empty folder of it."""
    if request.param == "local":
        yield LOCAL_FILES, str(tmp_path / "table")
        return
    server = request.getfixturevalue("object_store")
    locks = LeaseLocks(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))
    yield S3Files(server.filesystem(), lambda: locks), f"s3a://{BUCKET}/file-stores/{uuid.uuid4().hex}"


def _parquet(files: FileStore, path: str, rows: int) -> None:
    table = pa.table({"id": list(range(rows))})
    if isinstance(files, S3Files):
        pq.write_table(table, files._key(path), filesystem=files.client)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)


def test_a_version_file_is_created_once(store: tuple[FileStore, str]) -> None:
    files, root = store
    files.make_dirs(f"{root}/log")
    files.create_new(f"{root}/log/1.json", '{"version": 1}')
    assert files.read_text(f"{root}/log/1.json") == '{"version": 1}'
    with pytest.raises(FileExistsError):
        files.create_new(f"{root}/log/1.json", '{"version": "another writer"}')
    assert files.read_text(f"{root}/log/1.json") == '{"version": 1}', "the first version stays"


def test_listings_name_files_and_folders_sorted_and_nothing_when_absent(store: tuple[FileStore, str]) -> None:
    files, root = store
    assert files.children(root) == [] and files.files(root) == [] and not files.exists(root)
    _parquet(files, f"{root}/ds=2024-01-02/part-0.parquet", 3)
    _parquet(files, f"{root}/ds=2024-01-01/part-0.parquet", 2)
    files.touch(f"{root}/_SUCCESS")
    assert files.children(root) == [("_SUCCESS", False), ("ds=2024-01-01", True), ("ds=2024-01-02", True)]
    assert files.is_dir(f"{root}/ds=2024-01-01") and not files.is_dir(f"{root}/_SUCCESS")
    listed = files.files(root)
    assert [rel for rel, _, _ in listed] == ["_SUCCESS", "ds=2024-01-01/part-0.parquet", "ds=2024-01-02/part-0.parquet"]
    assert listed[0][1] == 0 and all(size > 0 and mtime > 0 for _, size, mtime in listed[1:])
    assert files.parquet_rows(root) == 5, "rows from the footers, markers skipped"
    assert files.parquet_rows(f"{root}/ds=2024-01-02") == 3


def test_a_folder_is_deleted_whole_and_deleting_it_again_is_fine(store: tuple[FileStore, str]) -> None:
    files, root = store
    before = time.time() * 1000
    _parquet(files, f"{root}/gen/a/ds=2024-01-01/part-0.parquet", 1)
    assert files.modified_ms(f"{root}/gen/a") >= before - 2000  # the clocks of two machines, roughly
    files.delete_tree(f"{root}/gen/a")
    assert not files.exists(f"{root}/gen/a") and files.files(f"{root}/gen/a") == []
    files.delete_tree(f"{root}/gen/a")


def test_an_exclusive_lock_keeps_another_holder_out(store: tuple[FileStore, str]) -> None:
    files, root = store
    files.make_dirs(root)
    events: list[str] = []

    def other() -> None:
        with files.lock(f"{root}/lock", exclusive=True):
            events.append("other in")

    with files.lock(f"{root}/lock", exclusive=True):
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.5)
        events.append("first out")
    thread.join(10)
    assert events == ["first out", "other in"]


@pytest.mark.s3
@pytest.mark.store
def test_a_bucket_without_the_state_stores_locks_refuses_to_lock(object_store: Any) -> None:
    """Never a lock that excludes no one: without the state store's leases, no log write starts."""
    files = S3Files(object_store.filesystem(), None)
    with pytest.raises(ConfigError, match="need the tool's state store"), files.lock(f"s3a://{BUCKET}/t/lock", True):
        pass
