"""Named locks across processes and machines, made of the state store's leases, for storage that
has no lock of its own: the folder log of a Parquet table on an object store (a bucket has no
`flock` and no exclusive create; see docs/design/decisions.md, Parquet on object storage).

A lock is a lease row held under an owner made for that one hold (threads of one process
exclude each other too), renewed by a thread while the block runs, and released at its end. A
holder that dies is let go at once when it ran on this host (its pid is gone), else when its
lease runs out: so a killed writer never blocks the next one for longer than the TTL.

Shared holds (readers pinning a version) are rows of their own, `<name>#reader#<id>`: an
exclusive hold takes `<name>` first, so no new reader starts, then waits for the readers it
found to finish. A team's PostgreSQL store makes the locks hold across machines.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar

from shadow_backfill.state.leases import Leases, describe_owner, lock_owner
from shadow_backfill.state.store import StateStore

TTL_S = 60.0  # a dead holder on another machine is waited out for at most this long
WAIT_S = 1800.0  # how long a hold waits for others before it gives up, naming the holder
POLL_S = 0.1


class LockTimeout(TimeoutError):
    """Another holder kept the lock for longer than a hold waits."""


class LeaseLocks:
    """`hold(name, exclusive)`: the lock service a format asks for (`TableFormat.use_locks`)."""

    def __init__(self, leases: Leases, ttl_s: float = TTL_S, wait_s: float = WAIT_S) -> None:
        self.leases = leases
        self.ttl_s = ttl_s
        self.wait_s = wait_s

    @contextmanager
    def hold(self, name: str, exclusive: bool = True) -> Iterator[None]:
        owner = lock_owner(f"lock-{uuid.uuid4().hex[:12]}")
        mine = self._take_exclusive(name, owner) if exclusive else self._take_shared(name, owner)
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(owner, stop), daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            self.leases.release(owner, [mine])

    def _take_exclusive(self, name: str, owner: str) -> str:
        deadline = time.monotonic() + self.wait_s
        self._wait_for(lambda: self._acquired(name, owner), name, deadline)
        try:
            self._wait_for(lambda: not self.leases.holders(f"{name}#reader#"), name, deadline)
        except LockTimeout:
            self.leases.release(owner, [name])
            raise
        return name

    def _take_shared(self, name: str, owner: str) -> str:
        mine = f"{name}#reader#{uuid.uuid4().hex}"

        def taken() -> bool:
            if self.leases.holders(name, exact=True):
                return False  # a writer holds it or waits for readers: start after it
            if not self._acquired(mine, owner):
                return False
            if self.leases.holders(name, exact=True):  # a writer came in between: let it go first
                self.leases.release(owner, [mine])
                return False
            return True

        self._wait_for(taken, name, time.monotonic() + self.wait_s)
        return mine

    def _acquired(self, resource: str, owner: str) -> bool:
        got, _ = self.leases.acquire([resource], owner, self.ttl_s)
        return bool(got)

    def _wait_for(self, ready: Callable[[], bool], name: str, deadline: float) -> None:
        while not ready():
            if time.monotonic() > deadline:
                held = self.leases.holders(name, exact=True) or self.leases.holders(f"{name}#reader#")
                who = ", ".join(describe_owner(o) for o in held.values()) or "another process"
                raise LockTimeout(f"{name} is held by {who}; gave up after {self.wait_s:.0f} s")
            time.sleep(POLL_S)

    def _renew(self, owner: str, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 3):
            self.leases.renew(owner, self.ttl_s)


class ProcessLocks:
    """The same locks within this process only: what a dry run takes before its state store
    exists. A dry run creates no store, and the empty one it reads lives in memory, where each
    thread sees a database of its own; no other process can hold a lease of a store that does
    not exist yet, so excluding this process's own threads is what is left to do."""

    _guard: ClassVar[threading.Condition] = threading.Condition()
    _readers: ClassVar[dict[str, int]] = {}
    _writers: ClassVar[set[str]] = set()

    @contextmanager
    def hold(self, name: str, exclusive: bool = True) -> Iterator[None]:
        cls = type(self)
        with cls._guard:
            cls._guard.wait_for(lambda: name not in cls._writers and not (exclusive and cls._readers.get(name)))
            if exclusive:
                cls._writers.add(name)
            else:
                cls._readers[name] = cls._readers.get(name, 0) + 1
        try:
            yield
        finally:
            with cls._guard:
                if exclusive:
                    cls._writers.discard(name)
                else:
                    cls._readers[name] -= 1
                cls._guard.notify_all()


def locks_of(store: StateStore) -> LeaseLocks | ProcessLocks:
    """The locks a format takes from `store`: its leases, or this process's own locks for the
    empty in-memory store a dry run reads before the real one exists (`ProcessLocks`)."""
    url = store.engine.url
    in_memory = url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")
    return ProcessLocks() if in_memory else LeaseLocks(store)
