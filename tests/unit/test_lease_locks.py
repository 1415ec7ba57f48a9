"""The locks a Parquet table's log takes on an object store, made of the state store's leases
(`state.locks`): on SQLite and on a real PostgreSQL server, with real threads and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from shadow_backfill.state import StateStore
from shadow_backfill.state.leases import lock_owner
from shadow_backfill.state.locks import LeaseLocks, LockTimeout

NAME = "s3://lake/hive/db.db/events/_shadow_backfill/lock"


def _locks(state_url: str, **kw: float) -> LeaseLocks:
    return LeaseLocks(StateStore(state_url), **kw)


def _in_thread(locks: LeaseLocks, exclusive: bool, events: list[str], tag: str) -> threading.Thread:
    def hold() -> None:
        with locks.hold(NAME, exclusive):
            events.append(f"{tag} in")
            time.sleep(0.3)
            events.append(f"{tag} out")

    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def test_an_exclusive_hold_keeps_every_other_out_until_it_ends(state_url: str) -> None:
    locks, events = _locks(state_url), []
    with locks.hold(NAME):
        other = _in_thread(locks, True, events, "b")
        reader = _in_thread(locks, False, events, "r")
        time.sleep(0.5)
        assert events == [], "neither a writer nor a reader of this process got in"
    other.join(10)
    reader.join(10)
    assert sorted(events) == ["b in", "b out", "r in", "r out"]
    assert events.index("b out") < events.index("r in") or events.index("r out") < events.index("b in")
    assert locks.leases.holders(NAME) == {}, "every lease was released"


def test_readers_share_and_a_writer_waits_for_them(state_url: str) -> None:
    locks, events = _locks(state_url), []
    with locks.hold(NAME, exclusive=False), locks.hold(NAME, exclusive=False):  # two readers at once
        writer = _in_thread(locks, True, events, "w")
        time.sleep(0.5)
        assert events == [], "the writer waits for the readers"
        assert NAME in locks.leases.holders(NAME, exact=True), "and holds new readers off while it waits"
    writer.join(10)
    assert events == ["w in", "w out"]


def test_a_dead_holder_on_this_host_is_let_go_at_once(state_url: str) -> None:
    """A killed writer's lease does not wait out its TTL."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = lock_owner("lock-killed")
    owner = owner.replace(f":{os.getpid()}:", f":{dead.stdout.strip()}:")
    locks = _locks(state_url, wait_s=5)
    assert locks.leases.acquire([NAME], owner, 3600)[0] == [NAME]
    started = time.monotonic()
    with locks.hold(NAME):
        pass
    assert time.monotonic() - started < 3


def test_a_hold_that_waits_too_long_names_the_holder(state_url: str) -> None:
    locks = _locks(state_url, wait_s=0.5)
    held_by = rf"{NAME} is held by lock-\w+ \(pid {os.getpid()} on "
    with locks.hold(NAME), pytest.raises(LockTimeout, match=held_by), locks.hold(NAME):
        pass
    assert locks.leases.holders(NAME) == {}, "the waiting hold took nothing"


def test_a_long_hold_is_renewed_past_its_ttl(state_url: str) -> None:
    locks = _locks(state_url, ttl_s=0.6, wait_s=0.3)
    with locks.hold(NAME):
        time.sleep(1.5)  # more than twice the TTL
        with pytest.raises(LockTimeout), _locks(state_url, wait_s=0.3).hold(NAME):
            pass


def test_a_writer_waiting_for_readers_keeps_its_lease_past_the_ttl(state_url: str) -> None:
    """While an exclusive hold waits for a reader longer than its TTL, its lease is renewed:
    no new reader gets in beside it."""
    locks, events = _locks(state_url, ttl_s=0.6), []
    with locks.hold(NAME, exclusive=False):
        writer = _in_thread(locks, True, events, "w")
        time.sleep(1.5)  # the writer has waited for more than twice its TTL
        late = _in_thread(locks, False, events, "late reader")
        time.sleep(0.5)
        assert events == [], "the waiting writer still holds new readers off"
    writer.join(10)
    late.join(10)
    assert events[:2] == ["w in", "w out"], events


def test_another_tables_lock_is_not_this_ones(state_url: str) -> None:
    """Lock names are paths: on SQLite, whose LIKE ignores case, a prefix differing only by case
    must not count as a reader of this table."""
    locks = _locks(state_url, wait_s=2)
    with locks.hold(NAME.upper(), exclusive=False):
        started = time.monotonic()
        with locks.hold(NAME):
            pass
        assert time.monotonic() - started < 1.5
