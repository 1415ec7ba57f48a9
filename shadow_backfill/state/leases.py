"""Leases on resources, so two runs never work on the same partition and two promotions never
write the same live partition at once."""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid
from collections.abc import Sequence

from sqlalchemy import select, update

from shadow_backfill.state.db import Db, upsert, utcnow
from shadow_backfill.state.schema import locks


def new_id(kind: str) -> str:
    """A run, promotion or rollback id that sorts by time and reads well in `history`."""
    return f"{kind}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def lock_owner(run_id: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{run_id}"


def describe_owner(owner: str) -> str:
    """'host:pid:run-id' (see `lock_owner`) as words."""
    host, _, rest = owner.partition(":")
    pid, _, run_id = rest.partition(":")
    return f"{run_id} (pid {pid} on {host})" if run_id and pid.isdigit() else owner


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


class Leases(Db):
    """Mixed into StateStore. A lease expires after its TTL, or at once when its holder's
    process is known to be dead."""

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
            stmt = upsert(self.engine, locks).values(
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

    def renew(self, owner: str, ttl_s: float) -> int:
        """Extend every lease of `owner`; how many it still held."""
        with self._begin() as c:
            done = c.execute(
                update(locks).where(locks.c.owner == owner).values(expires_at=utcnow() + dt.timedelta(seconds=ttl_s))
            )
        return int(done.rowcount or 0)

    def release(self, owner: str, resources: Sequence[str] | None = None) -> None:
        with self._begin() as c:
            q = locks.delete().where(locks.c.owner == owner)
            if resources is not None:
                q = q.where(locks.c.resource.in_(list(resources)))
            c.execute(q)

    def holders(self, name: str, exact: bool = False) -> dict[str, str]:
        """Live leases on `name` (exact) or on resources starting with it: {resource: owner}.
        Expired leases and those of holders known to be dead are not counted."""
        now = utcnow()
        match = locks.c.resource == name if exact else locks.c.resource.startswith(name, autoescape=True)
        with self._begin() as c:
            rows = c.execute(select(locks.c.resource, locks.c.owner).where(match, locks.c.expires_at >= now)).all()
        # SQLite's LIKE ignores case: the prefix is checked again here
        mine = [r for r in rows if (r.resource == name if exact else r.resource.startswith(name))]
        return {r.resource: r.owner for r in mine if not _holder_is_dead(r.owner)}
