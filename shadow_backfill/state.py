"""The state store: what happened to every partition, in one SQL database.

SQLite beside the warehouse by default; any SQLAlchemy URL (PostgreSQL) for a shared store.
Each transition is one short transaction, so a killed process leaves at worst a partition
marked `running`, which the next run treats as not written and redoes (the write itself is an
idempotent partition overwrite).
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError

from shadow_backfill.errors import ConfigError, StateStoreError, WriteError, os_reason

# The upserts below exist in these dialects only (SQLite's and PostgreSQL's ON CONFLICT).
SUPPORTED_DIALECTS = ("sqlite", "postgresql")

PENDING, RUNNING, WRITTEN, FAILED = "pending", "running", "written", "failed"

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("shadow_table", String(512), nullable=False, index=True),
    Column("live_table", String(512), nullable=False),
    Column("config_hash", String(64)),
    Column("code_fingerprint", String(64)),
    Column("status", String(16), nullable=False),
    Column("user", String(128)),
    Column("host", String(255)),
    Column("args", Text),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
)

partitions = Table(
    "partitions",
    metadata,
    Column("shadow_table", String(512), primary_key=True),
    Column("partition", String(64), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("rows", BigInteger),
    Column("shadow_version", BigInteger),
    Column("code_fingerprint", String(64)),
    Column("run_id", String(64)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("duration_s", Float),
    Column("updated_at", DateTime(timezone=True)),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("shadow_table", String(512), primary_key=True),
    Column("partition", String(64), primary_key=True),
    Column("verdict", String(8), nullable=False),
    Column("checks", Text, nullable=False),  # JSON list of checks (observed vs threshold)
    Column("metrics", Text, nullable=False),  # JSON: rows, per-column drift, key diff, schema
    Column("shadow_version", BigInteger),  # shadow table version that was read
    Column("partition_version", BigInteger),  # the commit that wrote this partition
    Column("live_version", BigInteger),  # live table version that was read
    Column("validation_id", String(64)),
    Column("validated_at", DateTime(timezone=True)),
)

promotions = Table(
    "promotions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # promote | rollback
    Column("live_table", String(512), nullable=False, index=True),
    Column("shadow_table", String(512)),
    Column("partitions", Text, nullable=False),  # JSON list of keys
    Column("live_version_before", BigInteger),
    Column("live_version_after", BigInteger),
    Column("shadow_versions", Text),  # JSON {partition: validated shadow version}
    Column("validation_ids", Text),  # JSON list
    Column("target", String(64)),  # for a rollback: the promotion (or rollback) it undoes
    Column("to_version", BigInteger),  # for a whole-table rollback
    Column("config_hash", String(64)),
    Column("code_fingerprint", String(64)),
    Column("user", String(128)),
    Column("host", String(255)),
    Column("at", DateTime(timezone=True)),
    Column("undone_by", String(64)),
)

locks = Table(
    "locks",
    metadata,
    Column("resource", String(700), primary_key=True),  # e.g. recompute:<shadow>:<partition>
    Column("owner", String(255), nullable=False),  # host:pid:run-id
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("acquired_at", DateTime(timezone=True)),
)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _aware(v: dt.datetime | None) -> dt.datetime | None:
    # SQLite drops the zone; everything we store is UTC.
    return v.replace(tzinfo=dt.timezone.utc) if v is not None and v.tzinfo is None else v


@dataclass(frozen=True)
class PartitionRecord:
    shadow_table: str
    partition: str
    status: str
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
        d = dict(self.__dict__)
        for k in ("started_at", "finished_at"):
            d[k] = d[k].isoformat() if d[k] else None
        return d


class _Db:
    """Every transaction goes through here, so a database that refuses (corrupt, read-only,
    unreachable) becomes one StateStoreError naming the store instead of a driver traceback."""

    engine: Engine
    shown_url: str

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as c:
                yield c
        except DBAPIError as exc:
            if isinstance(exc, IntegrityError):  # a broken invariant, not a broken database
                raise
            raise StateStoreError(f"state store {self.shown_url}: {_first_line(exc)}") from exc

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as c:
                yield c
        except DBAPIError as exc:
            raise StateStoreError(f"state store {self.shown_url}: {_first_line(exc)}") from exc


def _first_line(exc: DBAPIError) -> str:
    text = str(exc.orig if exc.orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc.orig or exc).__name__


def _insert(engine: Engine, table: Table) -> Any:
    """An INSERT that updates on key conflict, in the dialect at hand."""
    if engine.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


@dataclass(frozen=True)
class VerdictRecord:
    partition: str
    verdict: str
    checks: list[dict[str, Any]]
    metrics: dict[str, Any]
    shadow_version: int | None
    partition_version: int | None
    live_version: int | None
    validation_id: str | None
    validated_at: dt.datetime | None

    @property
    def reasons(self) -> list[dict[str, Any]]:
        rank = {"fail": 0, "warn": 1}
        return sorted((c for c in self.checks if c["status"] != "pass"), key=lambda c: rank[c["status"]])


class _VerdictStore(_Db):
    """Mixed into StateStore: verdicts bound to the versions they were computed from."""

    def save_verdicts(self, shadow_table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        now = utcnow()
        values = [
            {
                "shadow_table": shadow_table,
                "partition": r["partition"],
                "verdict": r["verdict"],
                "checks": json.dumps(r["checks"], default=str),
                "metrics": json.dumps(r["metrics"], default=str),
                "shadow_version": r.get("shadow_version"),
                "partition_version": r.get("partition_version"),
                "live_version": r.get("live_version"),
                "validation_id": r.get("validation_id"),
                "validated_at": now,
            }
            for r in rows
        ]
        stmt = _insert(self.engine, verdicts).values(values)
        update_cols = {c: stmt.excluded[c] for c in values[0] if c not in ("shadow_table", "partition")}
        with self._begin() as c:
            c.execute(stmt.on_conflict_do_update(index_elements=["shadow_table", "partition"], set_=update_cols))

    def verdicts(self, shadow_table: str) -> dict[str, VerdictRecord]:
        with self._connect() as c:
            rows = c.execute(select(verdicts).where(verdicts.c.shadow_table == shadow_table)).mappings().all()
        return {
            r["partition"]: VerdictRecord(
                partition=r["partition"],
                verdict=r["verdict"],
                checks=json.loads(r["checks"]),
                metrics=json.loads(r["metrics"]),
                shadow_version=r["shadow_version"],
                partition_version=r["partition_version"],
                live_version=r["live_version"],
                validation_id=r["validation_id"],
                validated_at=_aware(r["validated_at"]),
            )
            for r in rows
        }


@dataclass(frozen=True)
class PromotionRecord:
    id: str
    kind: str
    live_table: str
    shadow_table: str | None
    partitions: list[str]
    live_version_before: int | None
    live_version_after: int | None
    shadow_versions: dict[str, int]
    validation_ids: list[str]
    target: str | None
    to_version: int | None
    config_hash: str | None
    code_fingerprint: str | None
    user: str | None
    host: str | None
    at: dt.datetime | None
    undone_by: str | None

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["at"] = self.at.isoformat() if self.at else None
        return d


def _promotion(r: Any) -> PromotionRecord:
    return PromotionRecord(
        id=r["id"],
        kind=r["kind"],
        live_table=r["live_table"],
        shadow_table=r["shadow_table"],
        partitions=json.loads(r["partitions"]),
        live_version_before=r["live_version_before"],
        live_version_after=r["live_version_after"],
        shadow_versions=json.loads(r["shadow_versions"] or "{}"),
        validation_ids=json.loads(r["validation_ids"] or "[]"),
        target=r["target"],
        to_version=r["to_version"],
        config_hash=r["config_hash"],
        code_fingerprint=r["code_fingerprint"],
        user=r["user"],
        host=r["host"],
        at=_aware(r["at"]),
        undone_by=r["undone_by"],
    )


class _AuditTrail(_Db):
    """Mixed into StateStore: every promotion and rollback, and which undid which."""

    def record_promotion(self, rec: PromotionRecord) -> None:
        """Insert a promotion/rollback and, for a rollback, mark its target undone: one transaction."""
        with self._begin() as c:
            c.execute(
                promotions.insert().values(
                    id=rec.id,
                    kind=rec.kind,
                    live_table=rec.live_table,
                    shadow_table=rec.shadow_table,
                    partitions=json.dumps(rec.partitions),
                    live_version_before=rec.live_version_before,
                    live_version_after=rec.live_version_after,
                    shadow_versions=json.dumps(rec.shadow_versions),
                    validation_ids=json.dumps(rec.validation_ids),
                    target=rec.target,
                    to_version=rec.to_version,
                    config_hash=rec.config_hash,
                    code_fingerprint=rec.code_fingerprint,
                    user=rec.user or current_user(),
                    host=rec.host or socket.gethostname(),
                    at=rec.at or utcnow(),
                    undone_by=None,
                )
            )
            if rec.target is not None:
                c.execute(update(promotions).where(promotions.c.id == rec.target).values(undone_by=rec.id))
                # Undoing a rollback brings its promotion back: that promotion is live again.
                inner = c.execute(select(promotions.c.kind, promotions.c.target).where(promotions.c.id == rec.target))
                row = inner.first()
                if row is not None and row.kind == "rollback" and row.target is not None:
                    c.execute(update(promotions).where(promotions.c.id == row.target).values(undone_by=None))

    def promotions(self, live_table: str) -> list[PromotionRecord]:
        with self._connect() as c:
            rows = (
                c.execute(select(promotions).where(promotions.c.live_table == live_table).order_by(promotions.c.at))
                .mappings()
                .all()
            )
        return [_promotion(r) for r in rows]

    def promotion(self, promotion_id: str) -> PromotionRecord | None:
        with self._connect() as c:
            row = c.execute(select(promotions).where(promotions.c.id == promotion_id)).mappings().first()
        return _promotion(row) if row else None


def lock_owner(run_id: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{run_id}"


def _holder_is_dead(owner: str) -> bool:
    """A holder on this host whose process is gone has died: its leases need not wait out the TTL."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class _Leases(_Db):
    """Mixed into StateStore: leases on resources, so two runs never work on the same partition
    and two promotions never write the same live partition at once. A lease expires after its
    TTL, or at once when its holder's process is known to be dead."""

    def acquire(self, resources: Sequence[str], owner: str, ttl_s: float) -> tuple[list[str], dict[str, str]]:
        """Take every free (or expired, or own) lease; returns (acquired, {resource: other owner})."""
        if not resources:
            return [], {}
        now = utcnow()
        expires = now + dt.timedelta(seconds=ttl_s)
        wanted = list(dict.fromkeys(resources))
        with self._begin() as c:
            held = c.execute(select(locks.c.resource, locks.c.owner).where(locks.c.resource.in_(wanted))).all()
            dead = [r.resource for r in held if r.owner != owner and _holder_is_dead(r.owner)]
            if dead:
                c.execute(locks.delete().where(locks.c.resource.in_(dead)))
            stmt = _insert(self.engine, locks).values(
                [{"resource": r, "owner": owner, "expires_at": expires, "acquired_at": now} for r in wanted]
            )
            stmt = stmt.on_conflict_do_update(
                index_elements=["resource"],
                set_={"owner": owner, "expires_at": expires, "acquired_at": now},
                where=(locks.c.expires_at < now) | (locks.c.owner == owner),
            )
            c.execute(stmt)
            rows = c.execute(select(locks.c.resource, locks.c.owner).where(locks.c.resource.in_(wanted))).all()
        mine = [r.resource for r in rows if r.owner == owner]
        others = {r.resource: r.owner for r in rows if r.owner != owner}
        return mine, others

    def renew(self, owner: str, ttl_s: float) -> None:
        with self._begin() as c:
            c.execute(
                update(locks).where(locks.c.owner == owner).values(expires_at=utcnow() + dt.timedelta(seconds=ttl_s))
            )

    def release(self, owner: str, resources: Sequence[str] | None = None) -> None:
        with self._begin() as c:
            q = locks.delete().where(locks.c.owner == owner)
            if resources is not None:
                q = q.where(locks.c.resource.in_(list(resources)))
            c.execute(q)


class StateStore(_VerdictStore, _AuditTrail, _Leases):
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
            raise StateStoreError(f"cannot open the state store {self.shown_url}: {_first_line(exc)}") from exc

    def close(self) -> None:
        self.engine.dispose()

    # ---- runs ---------------------------------------------------------------------------------

    def start_run(
        self,
        run_id: str,
        *,
        shadow_table: str,
        live_table: str,
        config_hash: str,
        code_fingerprint: str,
        args: Mapping[str, Any],
    ) -> None:
        with self._begin() as c:
            c.execute(
                runs.insert().values(
                    run_id=run_id,
                    shadow_table=shadow_table,
                    live_table=live_table,
                    config_hash=config_hash,
                    code_fingerprint=code_fingerprint,
                    status=RUNNING,
                    user=current_user(),
                    host=socket.gethostname(),
                    args=json.dumps(dict(args), default=str),
                    started_at=utcnow(),
                )
            )

    def finish_run(self, run_id: str, status: str) -> None:
        with self._begin() as c:
            c.execute(update(runs).where(runs.c.run_id == run_id).values(status=status, finished_at=utcnow()))

    # ---- partitions ---------------------------------------------------------------------------

    def records(self, shadow_table: str, keys: Iterable[str] | None = None) -> dict[str, PartitionRecord]:
        q = select(partitions).where(partitions.c.shadow_table == shadow_table)
        wanted = set(keys) if keys is not None else None
        with self._connect() as c:
            rows = c.execute(q).mappings().all()
        out = {}
        for r in rows:
            if wanted is not None and r["partition"] not in wanted:
                continue
            out[r["partition"]] = PartitionRecord(
                shadow_table=r["shadow_table"],
                partition=r["partition"],
                status=r["status"],
                rows=r["rows"],
                shadow_version=r["shadow_version"],
                code_fingerprint=r["code_fingerprint"],
                run_id=r["run_id"],
                attempts=r["attempts"] or 0,
                error=r["error"],
                started_at=_aware(r["started_at"]),
                finished_at=_aware(r["finished_at"]),
                duration_s=r["duration_s"],
            )
        return out

    def mark_pending(self, shadow_table: str, keys: Sequence[str], run_id: str) -> None:
        """Register partitions a run intends to write, without touching ones already known."""
        if not keys:
            return
        now = utcnow()
        with self._begin() as c:
            stmt = _insert(self.engine, partitions).values(
                [
                    {
                        "shadow_table": shadow_table,
                        "partition": k,
                        "status": PENDING,
                        "run_id": run_id,
                        "attempts": 0,
                        "updated_at": now,
                    }
                    for k in keys
                ]
            )
            c.execute(stmt.on_conflict_do_nothing(index_elements=["shadow_table", "partition"]))

    def mark_running(self, shadow_table: str, keys: Sequence[str], run_id: str, fingerprint: str) -> None:
        now = utcnow()
        with self._begin() as c:
            c.execute(
                update(partitions)
                .where(partitions.c.shadow_table == shadow_table, partitions.c.partition.in_(list(keys)))
                .values(
                    status=RUNNING,
                    run_id=run_id,
                    code_fingerprint=fingerprint,
                    error=None,
                    started_at=now,
                    finished_at=None,
                    updated_at=now,
                    attempts=partitions.c.attempts + 1,
                )
            )

    def mark_written(
        self,
        shadow_table: str,
        rows_by_key: Mapping[str, int],
        version: int,
        run_id: str,
        fingerprint: str,
        duration_s: float,
    ) -> None:
        now = utcnow()
        with self._begin() as c:
            for k, n in rows_by_key.items():
                c.execute(
                    update(partitions)
                    .where(partitions.c.shadow_table == shadow_table, partitions.c.partition == k)
                    .values(
                        status=WRITTEN,
                        rows=n,
                        shadow_version=version,
                        run_id=run_id,
                        code_fingerprint=fingerprint,
                        error=None,
                        finished_at=now,
                        updated_at=now,
                        duration_s=duration_s,
                    )
                )

    def mark_failed(self, shadow_table: str, keys: Sequence[str], error: str, run_id: str) -> None:
        now = utcnow()
        with self._begin() as c:
            c.execute(
                update(partitions)
                .where(partitions.c.shadow_table == shadow_table, partitions.c.partition.in_(list(keys)))
                .values(status=FAILED, error=error[:4000], run_id=run_id, finished_at=now, updated_at=now)
            )


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


def current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"
