"""The locks a Parquet table's log takes on an object store, made of the state store's leases
(`state.locks`): on SQLite and on a real PostgreSQL server, with real threads and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from shadow_backfill.state import StateStore
from shadow_backfill.state.leases import lock_owner
from shadow_backfill.state.locks import LeaseLocks, LockTimeout

NAME = "s3://lake/hive/db.db/events/_shadow_backfill/lock"


SAFETY_S = 60  # only a hang waits this long


def _locks(state_url: str, **kw: float) -> LeaseLocks:
    return LeaseLocks(StateStore(state_url), **kw)


class Seen:
    """Counts a lock's `waited` / `renewed` events per thread, so a test waits for "the other
    hold found the lock taken" or "the lease was renewed N times" instead of sleeping."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._cond = threading.Condition()

    def __call__(self, _name: str) -> None:
        with self._cond:
            who = threading.current_thread().name
            self.counts[who] = self.counts.get(who, 0) + 1
            self._cond.notify_all()

    def wait(self, *threads: str, times: int = 1) -> None:
        """Until every named thread (any thread, if none is named) saw the event `times` times."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: (
                    all(self.counts.get(n, 0) >= times for n in threads)
                    if threads
                    else sum(self.counts.values()) >= times
                ),
                SAFETY_S,
            )
        assert ok, f"never seen {times} time(s) by {threads or 'any thread'}: {self.counts}"


def _in_thread(locks: LeaseLocks, exclusive: bool, events: list[str], tag: str) -> threading.Thread:
    def hold() -> None:
        with locks.hold(NAME, exclusive):
            events.append(f"{tag} in")
            events.append(f"{tag} out")

    thread = threading.Thread(target=hold, name=tag)
    thread.start()
    return thread


def test_an_exclusive_hold_keeps_every_other_out_until_it_ends(state_url: str) -> None:
    locks, events, waited = _locks(state_url), [], Seen()
    locks.waited = waited
    with locks.hold(NAME):
        other = _in_thread(locks, True, events, "b")
        reader = _in_thread(locks, False, events, "r")
        waited.wait("b", "r")
        assert events == [], "neither a writer nor a reader of this process got in"
    other.join(SAFETY_S)
    reader.join(SAFETY_S)
    assert sorted(events) == ["b in", "b out", "r in", "r out"]
    assert events.index("b out") < events.index("r in") or events.index("r out") < events.index("b in")
    assert locks.leases.holders(NAME) == {}, "every lease was released"


def test_readers_share_and_a_writer_waits_for_them(state_url: str) -> None:
    locks, events, waited = _locks(state_url), [], Seen()
    locks.waited = waited
    with locks.hold(NAME, exclusive=False), locks.hold(NAME, exclusive=False):  # two readers at once
        writer = _in_thread(locks, True, events, "w")
        waited.wait("w")  # it waits for the readers, having taken the name itself
        assert events == [], "the writer waits for the readers"
        assert NAME in locks.leases.holders(NAME, exact=True), "and holds new readers off while it waits"
    writer.join(SAFETY_S)
    assert events == ["w in", "w out"]


def test_a_dead_holder_on_this_host_is_let_go_at_once(state_url: str) -> None:
    """A killed writer's lease does not wait out its TTL: the hold, allowed no wait at all,
    takes the lock at its first try."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = lock_owner("lock-killed")
    owner = owner.replace(f":{os.getpid()}:", f":{dead.stdout.strip()}:")
    locks = _locks(state_url, wait_s=0)
    assert locks.leases.acquire([NAME], owner, 3600)[0] == [NAME]
    with locks.hold(NAME):
        assert set(locks.leases.holders(NAME).values()) != {owner}, "the dead holder's lease is gone"


def test_a_hold_that_waits_too_long_names_the_holder(state_url: str) -> None:
    locks = _locks(state_url, wait_s=0.5)
    held_by = rf"{NAME} is held by lock-\w+ \(pid {os.getpid()} on "
    with locks.hold(NAME), pytest.raises(LockTimeout, match=held_by), locks.hold(NAME):
        pass
    assert locks.leases.holders(NAME) == {}, "the waiting hold took nothing"


def test_a_long_hold_is_renewed_past_its_ttl(state_url: str) -> None:
    locks, renewed = _locks(state_url, ttl_s=0.6), Seen()
    locks.renewed = renewed
    with locks.hold(NAME):
        renewed.wait(times=4)  # renewed every third of the TTL: held past it
        with pytest.raises(LockTimeout), _locks(state_url, wait_s=0).hold(NAME):
            pass


def test_a_writer_waiting_for_readers_keeps_its_lease_past_the_ttl(state_url: str) -> None:
    """While an exclusive hold waits for a reader longer than its TTL, its lease is renewed:
    no new reader gets in beside it."""
    readers, writers, events = _locks(state_url), _locks(state_url, ttl_s=0.6), []
    renewed, waited = Seen(), Seen()
    writers.renewed, readers.waited = renewed, waited
    with readers.hold(NAME, exclusive=False):
        writer = _in_thread(writers, True, events, "w")
        renewed.wait(times=4)  # the writer has waited for more than its TTL
        late = _in_thread(readers, False, events, "late reader")
        waited.wait("late reader", times=2)
        assert events == [], "the waiting writer still holds new readers off"
    writer.join(SAFETY_S)
    late.join(SAFETY_S)
    assert events[:2] == ["w in", "w out"], events


def test_another_tables_lock_is_not_this_ones(state_url: str) -> None:
    """Lock names are paths: on SQLite, whose LIKE ignores case, a prefix differing only by case
    must not count as a reader of this table: the hold, allowed no wait, takes it at once."""
    locks = _locks(state_url, wait_s=0)
    with locks.hold(NAME.upper(), exclusive=False), locks.hold(NAME):
        assert NAME in locks.leases.holders(NAME, exact=True)
