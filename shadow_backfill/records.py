"""The state store's records as plain values, free of SQL: the store builds them, the documents
publish them. `status --json` is the partition record plus its verdict
(`documents.cli.StatusRowDoc` extends the record), so its fields are declared once, here, and
the CLI's start, which imports the documents, does not import SQLAlchemy.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import Enum
from typing import Any

from shadow_backfill.vocabulary import PartitionStatus


def plain(record: Any) -> dict[str, Any]:
    """A record's fields for JSON output, times as ISO text and statuses as plain words."""
    return {k: _plain_value(v) for k, v in record.__dict__.items()}


def _plain_value(v: Any) -> Any:
    """Times as ISO text, status words as plain `str` (a YAML or pickle user gets no enum)."""
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return v.value if isinstance(v, Enum) else v


@dataclass(frozen=True)
class PartitionRecord:
    """Where one shadow partition's recompute stands, as the state store holds it."""

    shadow_table: str
    partition: str
    status: PartitionStatus
    rows: int | None
    shadow_version: int | None
    code_fingerprint: str | None
    run_id: str | None
    attempts: int
    error: str | None
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    duration_s: float | None

    def as_dict(self) -> dict[str, Any]:
        return plain(self)


@dataclass(frozen=True)
class Approval:
    """A person's approval of partitions held for one (verdict `warn`): who, and why. The audit
    trail keeps both on the promotion that carries them (when: the promotion's time), so the
    question "who let this into live?" has an answer a year later."""

    by: str
    reason: str
