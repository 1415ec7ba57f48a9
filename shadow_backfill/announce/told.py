"""What a command's ending tells: one value the alerts and the lineage events are built from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from shadow_backfill.config.notify import Outcome
from shadow_backfill.outcome import EXIT_FAILED, EXIT_HELD, EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED, EXIT_USAGE

if TYPE_CHECKING:
    from shadow_backfill.announce.facts import TableFacts
    from shadow_backfill.command_result import CommandResult


_OUTCOMES: dict[int, Outcome] = {
    EXIT_OK: "success",
    EXIT_FAILED: "failure",
    EXIT_USAGE: "failure",
    EXIT_HELD: "held",
    EXIT_STOPPED: "stopped",
    EXIT_INTERRUPTED: "stopped",
}


def outcome_of(code: int) -> Outcome:
    """The ending a `notify.on` list names, by exit code: an exit code this table does not know
    (a crash of the interpreter) is a failure."""
    return _OUTCOMES.get(code, "failure")


@dataclass(frozen=True)
class Told:
    """One command's ending. `result`: its account, when it got as far as one (a refusal or an
    engine error ends a command before); `error`: the line it ended with (its `error:` line, or
    the result's line for exit 1, 3 and 4); `tables`: the facts of each table it worked on
    (one, or a pipeline's layers upstream first); `run_id`: a UUID naming this command's run
    (the OpenLineage run's id, and what an alert quotes)."""

    command: str
    kind: Literal["table", "pipeline"]
    target: str
    code: int
    run_id: str
    started: dt.datetime
    ended: dt.datetime
    result: CommandResult | None = None
    error: str | None = None
    tables: Sequence[TableFacts] = field(default_factory=tuple)
    sample: bool = False

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.code)
