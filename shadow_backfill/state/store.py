"""The state store: what happened to every partition, in one SQL database.

SQLite beside the warehouse by default; any SQLAlchemy URL (PostgreSQL) for a shared store.
The URL is checked before anything connects, so a typo is a config error, not a driver traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from shadow_backfill.errors import ConfigError, StateStoreError, WriteError, os_reason, redact
from shadow_backfill.state.audit import AuditTrail
from shadow_backfill.state.canaries import CanaryTrail
from shadow_backfill.state.db import first_line
from shadow_backfill.state.leases import Leases
from shadow_backfill.state.migrate import add_new_columns
from shadow_backfill.state.partitions import Partitions, Runs
from shadow_backfill.state.pipelines import PipelineTrail
from shadow_backfill.state.schema import metadata
from shadow_backfill.state.urls import SUPPORTED_DIALECTS, parse_state_url, server_name, shown_url
from shadow_backfill.state.verdicts import VerdictStore

__all__ = ["SUPPORTED_DIALECTS", "StateStore", "parse_state_url", "reading", "shown_url"]


class StateStore(Runs, Partitions, VerdictStore, AuditTrail, CanaryTrail, PipelineTrail, Leases):
    """All reads and writes of run and partition state go through here."""

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        """`migrate=False` opens the store as it is, creating and altering nothing (`reading`)."""
        self.shown_url = shown_url(url)
        parsed = parse_state_url(url)
        self.url = url
        self.parsed = parsed
        try:
            self.engine = create_engine(parsed, future=True)
        except ImportError as exc:  # the dialect's driver package is not installed
            raise ConfigError(
                f"state.url {self.shown_url}: its database driver is not installed ({exc}); "
                "pip install it, or use sqlite:/// or postgresql+psycopg://"
            ) from None
        except ArgumentError as exc:  # a form the dialect refuses (sqlite://user:pw@/x.db)
            raise ConfigError(f"state.url {self.shown_url}: {redact(str(exc).strip().splitlines()[0])}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self.migrated = migrate
        if not migrate:
            return
        _make_sqlite_file(parsed, self.shown_url)  # after every refusal of the URL: exit 2 creates nothing
        try:
            metadata.create_all(self.engine)
            add_new_columns(self.engine)
        except DBAPIError as exc:
            self.engine.dispose()
            raise self.open_error(exc) from exc

    def open_error(self, exc: DBAPIError) -> StateStoreError:
        """Why the store could not be opened. A server that never answered (refused, no route,
        no such host: no SQLSTATE) is named as parsed, `host:port (dialect)`, and nothing of
        the user info; a server that answered (a wrong password, no such database) or a file
        that refused is named by the masked URL."""
        orig = exc.orig
        answered = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        if isinstance(exc, OperationalError) and self.engine.dialect.name != "sqlite" and not answered:
            return StateStoreError(f"cannot reach the state store at {server_name(self.parsed)}: {first_line(exc)}")
        return StateStoreError(f"cannot open the state store {self.shown_url}: {first_line(exc)}")

    def close(self) -> None:
        self.engine.dispose()


def reading(url: str) -> StateStore:
    """The store for a command that must write nothing (a dry run): opened as it is, without
    creating its file or tables or adding columns; an empty in-memory store when it does not
    exist yet (no SQLite file, or a server database without the tool's tables)."""
    parsed = parse_state_url(url)
    database = parsed.database or ""
    plain_file = parsed.get_backend_name() == "sqlite" and database not in ("", ":memory:")
    if plain_file and not database.startswith("file:") and not Path(database).exists():
        return StateStore("sqlite://")
    store = StateStore(url, migrate=False)
    try:
        present = inspect(store.engine).has_table("partitions")
    except DBAPIError as exc:
        store.close()
        raise store.open_error(exc) from exc
    if present:
        return store
    store.close()
    return StateStore("sqlite://")


def _make_sqlite_file(parsed: URL, shown: str) -> None:
    """Create the SQLite file, and the folder it needs, readable by its owner only (0600 file,
    0700 folder): the store holds user and host names, partition lists and sampled data values,
    and SQLite would create it world-readable (its -wal and -shm files take the file's mode). An
    existing file or folder keeps its mode. A folder that cannot exist is named here."""
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return
    if str(parsed.query.get("uri", "")).lower() in ("true", "1") or database.startswith("file:"):
        return  # an SQLite URI (file:...?mode=ro): the user manages the file
    path = Path(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise WriteError(
            f"state store {shown}: cannot create folder {str(path.parent)!r}: {os_reason(path.parent, exc)}"
        ) from None
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError as exc:
        raise WriteError(f"state store {shown}: cannot create file {str(path)!r}: {os_reason(path, exc)}") from None


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
