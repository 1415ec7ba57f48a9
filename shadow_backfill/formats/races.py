"""Reads and writes that lost a race with another commit of this process, told apart from
real failures so they are tried again.

Iceberg 1.11 on Spark 4.1 checks that the snapshot a scan plans against is the snapshot the
table resolved to, and fails the query ("Failed to enforce scan consistency") when a commit lands
in between. A pipeline runs chunks of one layer side by side, so one chunk reads its shadow's
`refs` or `snapshots` while another commits to it: seen in CI on Spark Connect. Reading again
sees the new snapshot, if the query is built anew: a classic DataFrame keeps the snapshot it
resolved, so `read` must build its query inside. No PySpark here: the unit tier tests it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
SCAN_RACE = "Failed to enforce scan consistency"
ATTEMPTS = 4  # each attempt loses only to a commit landing within its own few milliseconds


def read_again_on_commit_race(read: Callable[[], T], attempts: int = ATTEMPTS) -> T:
    """`read()` (which builds its query each time), repeated while it fails only because a
    commit landed during its scan."""
    for attempt in range(1, attempts + 1):
        try:
            return read()
        except Exception as exc:
            if SCAN_RACE not in str(exc) or attempt == attempts:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


DELTA_COMMIT_RACES = (
    "Failed to commit transaction",  # delta-rs (Sail): another writer took the version
    # delta-rs (Sail) listed the log while a commit of this process wrote its checkpoint: seen
    # once in CI ("Missing commit file: expected version 0, found 8") on a resumed recompute,
    # whose log was whole afterwards (versions 0-10, checkpoint at 10)
    "Missing commit file",
)


def is_delta_commit_race(exc: BaseException) -> bool:
    """A Delta write that lost to another commit, so nothing of it landed and planning it
    again is safe: delta-spark's Concurrent*Exception, or delta-rs's messages above."""
    text = f"{type(exc).__name__}: {exc}"
    return ("Concurrent" in text and "Exception" in text) or any(race in text for race in DELTA_COMMIT_RACES)
