"""The message `notify-test` posts: a made-up backfill that ended with every kind of partition a
real alert lists (promoted, failed, held), flagged `sample`, so a user sees how the channel
shows a real one without running a job."""

from __future__ import annotations

import datetime as dt
import uuid

from shadow_backfill.announce.told import Told
from shadow_backfill.command_result import WARN_HELD, CommandResult
from shadow_backfill.outcome import EXIT_FAILED, Ending
from shadow_backfill.vocabulary import CheckStatus

_DAYS = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05")


def sample_told(target: str, kind: str = "table") -> Told:
    """A sample ending of `backfill` on `target`: 3 promoted, 1 failed, 1 held, exit 1."""
    promoted = _DAYS[:3]
    judged = {k: CheckStatus.PASS for k in promoted} | {_DAYS[4]: CheckStatus.WARN}
    line = "1 of 5 partition(s) failed (sample)"
    result = CommandResult(
        "backfill",
        "pipeline" if kind == "pipeline" else "table",
        target,
        Ending(EXIT_FAILED, line),
        selected=_DAYS,
        written=(*promoted, _DAYS[4]),
        failed={_DAYS[3]: "ValueError: a sample failure (notify-test)"},
        judged=judged,
        promoted=promoted,
        held={_DAYS[4]: WARN_HELD},
        run_id="notify-test",
        promotion_id="promote-sample",
    )
    now = dt.datetime.now(dt.timezone.utc)
    run = str(uuid.uuid4())
    return Told("backfill", result.kind, target, EXIT_FAILED, run, now, now, result=result, error=line, sample=True)
