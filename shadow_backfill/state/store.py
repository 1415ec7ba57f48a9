"""The state store: what happened to every partition, in one SQL database.

SQLite beside the warehouse by default; any SQLAlchemy URL (PostgreSQL) for a shared store.
The URL is checked before anything connects, so a typo is a config error, not a driver traceback.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from shadow_backfill.errors import (
    SECRET_NAME,
    ConfigError,
    StateStoreError,
    WriteError,
    keep_secret,
    os_reason,
    redact,
)
from shadow_backfill.state.audit import AuditTrail
from shadow_backfill.state.db import first_line
from shadow_backfill.state.leases import Leases
from shadow_backfill.state.migrate import add_new_columns
from shadow_backfill.state.partitions import Partitions, Runs
from shadow_backfill.state.pipelines import PipelineTrail
from shadow_backfill.state.schema import metadata
from shadow_backfill.state.verdicts import VerdictStore

# The upserts exist in these dialects only (SQLite's and PostgreSQL's ON CONFLICT).
SUPPORTED_DIALECTS = ("sqlite", "postgresql")
# The userinfo as SQLAlchemy reads it (`user:password@`), and the query parameters whose value
# is a secret (libpq's password and sslpassword, other drivers' tokens and keys).
_USERINFO = re.compile(r"^(?P<user>[^:/]*):(?P<password>[^@]*)@")
_SECRET_PARAM = SECRET_NAME


class StateStore(Runs, Partitions, VerdictStore, AuditTrail, PipelineTrail, Leases):
    """All reads and writes of run and partition state go through here."""

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        """`migrate=False` opens the store as it is, creating and altering nothing (`reading`)."""
        self.shown_url = shown_url(url)
        parsed = parse_state_url(url)
        self.url = url
        if migrate:
            _make_sqlite_file(parsed, self.shown_url)
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
        if not migrate:
            return
        try:
            metadata.create_all(self.engine)
            add_new_columns(self.engine)
        except DBAPIError as exc:
            self.engine.dispose()
            raise StateStoreError(f"cannot open the state store {self.shown_url}: {first_line(exc)}") from exc

    def close(self) -> None:
        self.engine.dispose()


def parse_state_url(url: str) -> URL:
    """The URL, refused before anything connects unless it names a dialect we can upsert in."""
    shown = shown_url(url)
    try:
        parsed = make_url(url)
    except Exception:  # ArgumentError, ValueError: not a URL at all
        raise ConfigError(
            f"state.url {shown!r} is not a database URL (e.g. sqlite:///path/state.db or "
            "postgresql+psycopg://user@host/db)"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_DIALECTS:
        raise ConfigError(
            f"state.url {shown}: database {backend!r} is not supported "
            f"as a state store; supported: {', '.join(SUPPORTED_DIALECTS)}"
        )
    if backend == "sqlite" and (parsed.username or parsed.password or parsed.host or parsed.port):
        # SQLAlchemy refuses these only once the engine is made, after the file would exist.
        raise ConfigError(
            f"state.url {shown}: a SQLite URL names a file only, with no user, password or host "
            "(sqlite:///path/state.db)"
        )
    try:
        parsed.get_dialect()
    except Exception:  # NoSuchModuleError: an unknown driver name such as postgresql+nosuch
        raise ConfigError(f"state.url {shown}: unknown driver {parsed.drivername!r} for {backend}") from None
    return parsed


def shown_url(url: str) -> str:
    """The state URL as it may be printed: the user's own spelling with every secret as `***`
    (the password in the userinfo or in a query parameter). Each secret found is remembered
    (`keep_secret`), so no other message can print it either."""
    try:
        parsed = make_url(url)
    except Exception:  # not a URL: where its secret ends cannot be told
        return _shown_unparsed(url)
    scheme, sep, rest = url.partition("//")
    if not sep:
        return url
    userinfo = _USERINFO.match(rest)
    if parsed.password is not None and userinfo is not None:
        # SQLAlchemy ends the password at the first @; one with an @ of its own (unescaped)
        # would show its tail as the host, so the mask runs to the last @ before the query.
        at = rest.partition("?")[0].rfind("@")
        keep_secret(str(parsed.password), userinfo.group("password"), rest[userinfo.end("user") + 1 : at])
        rest = f"{userinfo.group('user')}:***@{rest[at + 1 :]}"
    return f"{scheme}//{_masked_query(rest)}"


def _shown_unparsed(url: str) -> str:
    """A URL that does not parse, masked from the scheme's `//` up to the host (the text after the
    last `@`), or everything after `//` when no host can be told apart from a userinfo."""
    scheme, sep, rest = url.partition("//")
    if not sep:
        before, colon, after = url.partition(":")
        keep_secret(after)
        if colon:
            return f"{before}:***"
        return "***" if "@" in url or "=" in url else url
    at = rest.rfind("@")
    if at < 0:
        keep_secret(rest, _masked_query(rest))  # and the query's secrets, one by one
        return f"{scheme}//***"
    userinfo = rest[:at]
    keep_secret(userinfo, userinfo.partition(":")[2])
    return f"{scheme}//***@{_masked_query(rest[at + 1 :])}"


def _masked_query(rest: str) -> str:
    """`host/db?query` with the value of every secret-looking query parameter as `***`; pairs
    are split on `&` as SQLAlchemy splits them, so a value is masked whole."""
    head, mark, query = rest.partition("?")
    if not mark:
        return rest
    pairs = []
    for pair in query.split("&"):
        key, eq, value = pair.partition("=")
        if eq and _SECRET_PARAM.search(unquote_plus(key)):
            keep_secret(value, unquote_plus(value))
            pair = f"{key}=***"
        pairs.append(pair)
    return f"{head}?{'&'.join(pairs)}"


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
        raise StateStoreError(f"cannot open the state store {store.shown_url}: {first_line(exc)}") from exc
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
