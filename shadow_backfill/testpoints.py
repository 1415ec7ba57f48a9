"""Named points in a command where a test stops it: between a canary's commit and its checks,
say, a place no timing can hit reliably.

`SHADOW_BACKFILL_PAUSE_AT=<point>=<file>`: a process reaching `<point>` writes `<file>` and
waits there for good, so a kill test sends `kill -9` exactly there (and never to a process that
is elsewhere). `HOOKS[<point>]`: a function an in-process test runs there (it may raise to cut
the command off). Neither is set outside the tests; a point nobody named costs one dict lookup.

`SHADOW_BACKFILL_STOP_AT=<point>=<file>`: the first process reaching `<point>` while `<file>`
does not exist writes it and stops itself as a scheduler's SIGTERM would (its time box stops
after the chunks in flight, exit 4); later processes pass. A scheduler's test forces "stopped by
the time box, then resumed by the next try" exactly there, with no clock involved.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

PAUSE_AT = "SHADOW_BACKFILL_PAUSE_AT"
STOP_AT = "SHADOW_BACKFILL_STOP_AT"
HOOKS: dict[str, Callable[[], None]] = {}

CANARY_BEFORE_CHECKS = "canary.before_checks"
# A promotion's commit has two sides a crash can fall on (tests/e2e/test_kill.py): after the
# locks and any column added for it, before live's data commit; and after that commit, before
# its audit row. A rollback's commit has the second as `rollback.after_commit`.
PROMOTE_BEFORE_COMMIT = "promote.before_commit"
PROMOTE_AFTER_COMMIT = "promote.after_commit"
# A recompute chunk committed to the shadow, not yet recorded as written in the state store.
RECOMPUTE_AFTER_COMMIT = "recompute.after_commit"
# A pipeline's set after a layer's commit is named in its record, before the next layer's.
PIPELINE_AFTER_LAYER = "pipeline.after_layer"
# A local folder log's writer found its lock held and starts to wait for it.
FOLDER_LOCK_WAITS = "folder_log.lock_waits"


def reached(point: str) -> None:
    """Run the test's hook for `point`, or pause here for a kill when the environment names it."""
    hook = HOOKS.get(point)
    if hook is not None:
        hook()
    _stop_once(point)
    named, _, marker = os.environ.get(PAUSE_AT, "").partition("=")
    if named != point or not marker:
        return
    Path(marker).write_text(str(os.getpid()))
    threading.Event().wait()  # until the test kills the process


def _stop_once(point: str) -> None:
    """`STOP_AT`: the first process here sends itself SIGTERM (the module's docstring)."""
    named, _, marker = os.environ.get(STOP_AT, "").partition("=")
    if named != point or not marker:
        return
    try:
        with Path(marker).open("x") as f:  # exactly one process wins, whatever runs beside it
            f.write(str(os.getpid()))
    except FileExistsError:
        return
    signal.raise_signal(signal.SIGTERM)
