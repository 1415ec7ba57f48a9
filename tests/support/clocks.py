"""A fake clock for time boxes: waiting for a real deadline would be slow."""

from __future__ import annotations

import datetime as dt
import threading

DEADLINE = dt.datetime(2024, 1, 12, 6, tzinfo=dt.timezone.utc)


class Ticks:
    """A clock before the deadline for its first `n` readings, then at it: the box is read once
    per chunk, as the chunk would start."""

    def __init__(self, n: int) -> None:
        self.left = n
        self._lock = threading.Lock()  # chunks of a pipeline read the box from several threads

    def __call__(self) -> dt.datetime:
        with self._lock:
            self.left -= 1
            return DEADLINE - dt.timedelta(minutes=1) if self.left >= 0 else DEADLINE
