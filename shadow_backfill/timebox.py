"""Time boxes: a backfill gives way to the daily pipelines.

A backfill has a lower priority than the jobs that produce today's data, so its operator runs it
at night (`--until 06:00`), for a bounded time (`--max-duration 3h`), or lets the scheduler stop
it (SIGTERM). In every case the run stops *starting* chunks, lets the chunks in flight finish
(their partitions are written, not half-done), and says what remains; a later run resumes. A
second SIGTERM, or Ctrl-C, stops at once as before.

The clock starts at `SHADOW_BACKFILL_NOW` when it is set and runs at real speed from there, so a
test or a rehearsal can put "now" two seconds before a deadline instead of waiting for it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from zoneinfo import ZoneInfo

from shadow_backfill.errors import UsageError
from shadow_backfill.windows import current_time, parse_duration

Clock = Callable[[], dt.datetime]
_UNTIL = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def running_clock(zone: ZoneInfo, environ: dict[str, str] | None = None) -> Clock:
    """Now (aware): from `SHADOW_BACKFILL_NOW` if set, else the system clock, advancing in real
    time (monotonic: a clock change on the machine does not move a deadline)."""
    # In UTC: a datetime of a ZoneInfo zone adds a timedelta on the wall clock (wrong across DST).
    start, started = current_time(zone, environ).astimezone(dt.timezone.utc), time.monotonic()
    return lambda: start + dt.timedelta(seconds=time.monotonic() - started)


def next_wall_clock(text: str, now: dt.datetime, zone: ZoneInfo) -> dt.datetime:
    """The next time the wall clock of `zone` shows `HH:MM` after `now` (tomorrow's if today's has
    passed): `--until 06:00` started at 22:00 runs through the night."""
    match = _UNTIL.match(text.strip())
    if match is None:
        raise UsageError(f"--until {text!r} is not a wall-clock time HH:MM (e.g. 06:00)")
    local = now.astimezone(zone)
    at = local.replace(hour=int(match[1]), minute=int(match[2]), second=0, microsecond=0, tzinfo=None)
    if at.replace(tzinfo=zone) <= local:
        at += dt.timedelta(days=1)
    return at.replace(tzinfo=zone)


class TimeBox:
    """When a run must stop starting chunks: a deadline passed, or a stop asked (a signal)."""

    def __init__(self, deadline: dt.datetime | None, clock: Clock, why: str = "its time box") -> None:
        self.deadline = deadline
        self._clock = clock
        self._why = why
        self._stopped: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_options(
        cls, until: str | None, max_duration: str | None, zone: ZoneInfo, environ: dict[str, str] | None = None
    ) -> TimeBox:
        """The box of `--until HH:MM` and `--max-duration D`: the earlier limit wins."""
        clock = running_clock(zone, environ)
        now = clock()
        limits: list[tuple[dt.datetime, str]] = []
        if until is not None:
            limits.append((next_wall_clock(until, now, zone), f"--until {until.strip()}"))
        if max_duration is not None:
            limits.append((now + parse_duration(max_duration, "--max-duration"), f"--max-duration {max_duration}"))
        if not limits:
            return cls(None, clock)
        deadline, why = min(limits, key=lambda limit: limit[0])
        return cls(deadline, clock, why)

    def stop(self, reason: str) -> None:
        """Stop starting chunks from now on (the first reason given is kept)."""
        with self._lock:
            self._stopped = self._stopped or reason

    @property
    def reason(self) -> str | None:
        """Why no chunk may start now (None: chunks may start)."""
        if self._stopped is None and self.deadline is not None and self._clock() >= self.deadline:
            self.stop(f"{self._why} (at {self.deadline.isoformat(timespec='seconds')})")
        return self._stopped


@contextlib.contextmanager
def stop_on_sigterm(box: TimeBox) -> Iterator[TimeBox]:
    """While the block runs, a first SIGTERM stops the box (chunks in flight finish) and puts the
    default action back, so a second SIGTERM ends the process at once. Outside the main thread
    (where Python cannot set handlers) nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield box
        return

    def graceful(signum: int, _frame: object) -> None:
        box.stop("SIGTERM")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    previous = signal.signal(signal.SIGTERM, graceful)
    try:
        yield box
    finally:
        signal.signal(signal.SIGTERM, previous)
