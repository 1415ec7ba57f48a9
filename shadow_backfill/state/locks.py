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

A lease has no fencing token: a holder stalled past its TTL (the store unreachable, a long
pause) may find the lock taken by another. Its renewer then marks the hold lost, and the hold
raises `LockLost` when its block ends, so the command fails instead of going on as if it held.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shadow_backfill.state.leases import Leases, describe_owner, lock_owner

TTL_S = 60.0  # a dead holder on another machine is waited out for at most this long
WAIT_S = 1800.0  # how long a hold waits for others before it gives up, naming the holder
POLL_S = 0.1


class LockTimeout(TimeoutError):
    """Another holder kept the lock for longer than a hold waits."""


class LockLost(RuntimeError):
    """A hold's lease could not be renewed before it ran out: another holder may have taken the
    lock meanwhile, so the command stops rather than write on (a lease has no fencing token)."""


class LeaseLocks:
    """`hold(name, exclusive)`: the lock service a format asks for (`TableFormat.use_locks`)."""

    def __init__(self, leases: Leases, ttl_s: float = TTL_S, wait_s: float = WAIT_S) -> None:
        self.leases = leases
        self.ttl_s = ttl_s
        self.wait_s = wait_s
        # Called with the lock's name each time a hold finds it taken and waits, and each time a
        # renewer renewed its lease: a test asserts what another hold did while it waited, or
        # that a lease outlived its TTL, on these events instead of on sleeps.
        self.waited: Callable[[str], None] | None = None
        self.renewed: Callable[[str], None] | None = None

    @contextmanager
    def hold(self, name: str, exclusive: bool = True) -> Iterator[None]:
        """The renewer runs from the first lease taken, also while an exclusive hold waits for
        readers: a lease that ran out while waiting would let new readers in beside it."""
        owner = lock_owner(f"lock-{uuid.uuid4().hex[:12]}")
        stop, held, lost = threading.Event(), threading.Event(), threading.Event()
        renewer = threading.Thread(target=self._renew, args=(name, owner, stop, held, lost), daemon=True)
        renewer.start()
        try:
            self._take_exclusive(name, owner) if exclusive else self._take_shared(name, owner)
            held.set()
            yield
            if lost.is_set():
                raise LockLost(f"the lock on {name} could not be renewed in time; run the command again")
        finally:
            stop.set()
            renewer.join()
            self.leases.release(owner)

    def _take_exclusive(self, name: str, owner: str) -> None:
        deadline = time.monotonic() + self.wait_s
        self._wait_for(lambda: self._acquired(name, owner), name, deadline)
        self._wait_for(lambda: not self.leases.holders(f"{name}#reader#"), name, deadline)

    def _take_shared(self, name: str, owner: str) -> None:
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

    def _acquired(self, resource: str, owner: str) -> bool:
        got, _ = self.leases.acquire([resource], owner, self.ttl_s)
        return bool(got)

    def _wait_for(self, ready: Callable[[], bool], name: str, deadline: float) -> None:
        while not ready():
            if time.monotonic() > deadline:
                held = self.leases.holders(name, exact=True) or self.leases.holders(f"{name}#reader#")
                who = ", ".join(describe_owner(o) for o in held.values()) or "another process"
                raise LockTimeout(f"{name} is held by {who}; gave up after {self.wait_s:.0f} s")
            if self.waited is not None:
                self.waited(name)
            time.sleep(POLL_S)

    def _renew(
        self, name: str, owner: str, stop: threading.Event, held: threading.Event, lost: threading.Event
    ) -> None:
        """Every third of the TTL. A failed renewal (the store unreachable for a moment) is tried
        again at the next tick; one that fails past the TTL, or finds no lease left once the
        lock is held (another holder took it after it ran out), marks the hold lost."""
        renewed = time.monotonic()
        while not stop.wait(self.ttl_s / 3):
            try:
                kept = self.leases.renew(owner, self.ttl_s)
            except Exception:
                if time.monotonic() - renewed > self.ttl_s:
                    lost.set()
                continue
            renewed = time.monotonic()
            if kept == 0 and held.is_set():
                lost.set()
            elif self.renewed is not None:
                self.renewed(name)
