"""What a folder log records: one `Version` per commit, the table's whole state, each partition
folder's data a `Folder`.

Kept apart from the log that writes them because more than the log reads them: the placements
that point readers at a version's folders, the Parquet format that builds the versions it
commits (adopted, created, widened), and the tests that journal a version by hand. They are
plain records, serialized as the log's `<version>.json`, so their fields are the log's format on
disk and change only with it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field


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


def now_ms() -> int:
    return int(time.time() * 1000)
