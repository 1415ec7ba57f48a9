"""One pipeline command at a time per table: a lease in the state store on every layer's live
table, held for the length of a pipeline's run, validation, promotion or rollback.

Why: two pipeline runs over one table would each chain their layers on shadows the other is
rewriting, and their promotions could interleave layer by layer. The partition leases of a
single-table run only make the second run skip partitions; here the second command is refused
before any work, naming who holds the table. A lease expires after `TTL_S` unless renewed (a
thread renews it while the command lives), and at once when its holder is a dead process on
this host, so a killed run does not block the rerun that finishes it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from shadow_backfill.errors import RefusedError
from shadow_backfill.state import StateStore, describe_owner, lock_owner, new_id

TTL_S = 300.0


def resource(live_table: str) -> str:
    return f"pipeline:{live_table}"


@contextmanager
def holding_tables(store: StateStore, live_tables: Sequence[str]) -> Iterator[None]:
    """Hold every table's pipeline lease, or refuse at once naming the table and its holder."""
    owner = lock_owner(new_id("pipeline"))
    wanted = [resource(t) for t in live_tables]
    _, others = store.acquire(wanted, owner, TTL_S)
    stop = threading.Event()
    try:
        if others:
            taken = sorted(others)[0]
            raise RefusedError(
                f"table {taken.removeprefix('pipeline:')} is in another pipeline command, "
                f"{describe_owner(others[taken])}; nothing was done, try again when it has finished"
            )
        renewer = threading.Thread(target=_renew, args=(store, owner, stop), daemon=True)
        renewer.start()
        yield
    finally:
        stop.set()
        store.release(owner)


def _renew(store: StateStore, owner: str, stop: threading.Event) -> None:
    while not stop.wait(TTL_S / 3):
        try:
            store.renew(owner, TTL_S)
        except Exception:  # a missed renewal only shortens the lease; the next may succeed
            continue
