"""What every part of the store shares: one transaction boundary, the upsert, and the stamps
(time, user) written on rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import getpass
import json
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Column, Engine, Select, Table, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import DBAPIError, IntegrityError

from shadow_backfill import errors
from shadow_backfill.errors import StateStoreError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def aware(v: dt.datetime | None) -> dt.datetime | None:
    # SQLite drops the zone; everything we store is UTC.
    return v.replace(tzinfo=dt.timezone.utc) if v is not None and v.tzinfo is None else v


def current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


class Db:
    """Every transaction goes through here, so a database that refuses (corrupt, read-only,
    unreachable) becomes one StateStoreError naming the store instead of a driver traceback."""

    engine: Engine
    shown_url: str

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        # An IntegrityError is a broken invariant, not a broken database: it stays as it is.
        with self._named_errors(IntegrityError), self.engine.begin() as c:
            yield c

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        with self._named_errors(), self.engine.connect() as c:
            yield c

    def _present(self, table: Table) -> list[Column[Any]]:
        """`table`'s columns the database has: all of them in a migrated store; in one opened as
        it is (`reading`, a dry run's), an older version's store may lack a column added since,
        and selecting it would fail the command (`from_row` reads a missing one as null)."""
        if getattr(self, "migrated", True):
            return list(table.columns)
        with self._connect() as c:
            have = {col["name"] for col in inspect(c).get_columns(table.name)}
        return [col for col in table.columns if col.name in have]

    def _rows(self, query: Select[Any]) -> Sequence[RowMapping]:
        with self._connect() as c:
            return c.execute(query).mappings().all()

    def _first(self, query: Select[Any]) -> RowMapping | None:
        with self._connect() as c:
            return c.execute(query).mappings().first()

    @contextmanager
    def _named_errors(self, *kept: type[DBAPIError]) -> Iterator[None]:
        try:
            yield
        except DBAPIError as exc:
            if isinstance(exc, kept):
                raise
            raise StateStoreError(f"state store {self.shown_url}: {first_line(exc)}") from exc


def first_line(exc: DBAPIError) -> str:
    """The driver's own error (SQLAlchemy wraps it in pages of SQL and parameters)."""
    return errors.first_line(exc.orig if exc.orig is not None else exc)


def from_row(cls: type[R], row: Mapping[str, Any], **converted: Any) -> R:
    """A record from a row whose columns are named like its fields; `converted`: the fields
    that need more than a copy (JSON, time zones). A column the row lacks reads as null: a store
    opened without migrating (a dry run's) may predate a column added later."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{n: converted[n] if n in converted else row.get(n) for n in names})


def stamped(record: Any, json_fields: Iterable[str], **overrides: Any) -> dict[str, Any]:
    """A trail record's row to insert, as every trail writes it: the JSON fields as text, and
    who wrote it from where and when (the record's own when it has them: one rebuilt from a
    commit's properties names that commit's writer). `overrides`: what a new row starts as
    whatever the record holds (not undone yet, a canary not checked yet)."""
    return {
        **record.__dict__,
        **{name: json.dumps(getattr(record, name)) for name in json_fields},
        "user": record.user or current_user(),
        "host": record.host or socket.gethostname(),
        "at": record.at or utcnow(),
        **overrides,
    }


def upsert(engine: Engine, table: Table) -> Any:
    """An INSERT that updates on key conflict, in the dialect at hand."""
    if engine.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)
