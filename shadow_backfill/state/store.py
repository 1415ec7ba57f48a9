"""The state store: what happened to every partition, in one SQL database.

SQLite beside the warehouse by default; any SQLAlchemy URL (PostgreSQL) for a shared store.
The URL is checked before anything connects, so a typo is a config error, not a driver traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from shadow_backfill.errors import ConfigError, StateStoreError, WriteError, os_reason
from shadow_backfill.state.audit import AuditTrail
from shadow_backfill.state.db import first_line
from shadow_backfill.state.leases import Leases
from shadow_backfill.state.partitions import Partitions, Runs
from shadow_backfill.state.schema import metadata
from shadow_backfill.state.verdicts import VerdictStore

# The upserts exist in these dialects only (SQLite's and PostgreSQL's ON CONFLICT).
SUPPORTED_DIALECTS = ("sqlite", "postgresql")


class StateStore(Runs, Partitions, VerdictStore, AuditTrail, Leases):
    """All reads and writes of run and partition state go through here."""

    def __init__(self, url: str) -> None:
        parsed = parse_state_url(url)
        self.url = url
        self.shown_url = _shown(url, parsed)
        _make_sqlite_folder(parsed, self.shown_url)
        try:
            self.engine = create_engine(parsed, future=True)
        except ImportError as exc:  # the dialect's driver package is not installed
            raise ConfigError(
                f"state.url {self.shown_url}: its database driver is not installed ({exc}); "
                "pip install it, or use sqlite:/// or postgresql+psycopg://"
            ) from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            metadata.create_all(self.engine)
        except DBAPIError as exc:
            self.engine.dispose()
            raise StateStoreError(f"cannot open the state store {self.shown_url}: {first_line(exc)}") from exc

    def close(self) -> None:
        self.engine.dispose()


def parse_state_url(url: str) -> URL:
    """The URL, refused before anything connects unless it names a dialect we can upsert in."""
    try:
        parsed = make_url(url)
    except Exception:  # ArgumentError, ValueError: not a URL at all
        raise ConfigError(
            f"state.url {url!r} is not a database URL (e.g. sqlite:///path/state.db or "
            "postgresql+psycopg://user@host/db)"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_DIALECTS:
        raise ConfigError(
            f"state.url {_shown(url, parsed)}: database {backend!r} is not supported "
            f"as a state store; supported: {', '.join(SUPPORTED_DIALECTS)}"
        )
    try:
        parsed.get_dialect()
    except Exception:  # NoSuchModuleError: an unknown driver name such as postgresql+nosuch
        raise ConfigError(
            f"state.url {_shown(url, parsed)}: unknown driver {parsed.drivername!r} for {backend}"
        ) from None
    return parsed


def _shown(url: str, parsed: URL) -> str:
    """The URL as the user wrote it, unless it holds a password."""
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def _make_sqlite_folder(parsed: URL, shown: str) -> None:
    """SQLite creates the file but not its folder; a folder that cannot exist is named here."""
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return
    if str(parsed.query.get("uri", "")).lower() in ("true", "1") or database.startswith("file:"):
        return  # an SQLite URI (file:...?mode=ro): the user manages the file
    folder = Path(database).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(
            f"state store {shown}: cannot create folder {str(folder)!r}: {os_reason(folder, exc)}"
        ) from None


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
