"""What any scheduler's task needs of the tool, as pure code (no Airflow, no Spark): the command
line it runs, what the exit code means for the task, and the small summary it hands on.

Why an outcome table rather than "non-zero is red": the exit codes say different things.
1 is a data failure (validation failed, a recompute broke): retrying the same code on the same
data fails again, so by default it fails without retry, as a circuit breaker does. 2 is a
mistake in the task's own options or config: no retry can fix it. 3 is partitions held for a
person's approval: nothing is wrong, the task is skipped so an approval task can follow. 4 is
a time box (or the scheduler's SIGTERM) that stopped the run between chunks: the next try
resumes it, so it is rescheduled. Anything else (130, a killed process) is retryable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from shadow_backfill.documents.command import CommandDoc
from shadow_backfill.documents.task import TaskOutcome, TaskSummaryDoc

OnHeld = Literal["skip", "fail", "success"]
OnFailure = Literal["fail", "retry"]
OnStopped = Literal["reschedule", "retry", "fail"]
# The commands whose `--json` prints their result (docs/command.schema.json).
RESULT_COMMANDS = frozenset({"run", "validate", "promote", "approve", "rollback", "backfill"})


def outcome_of(
    code: int, *, on_held: OnHeld = "skip", on_failure: OnFailure = "fail", on_stopped: OnStopped = "reschedule"
) -> TaskOutcome:
    """The task's outcome for exit `code` (the table in the module's docstring)."""
    if code == 0:
        return TaskOutcome.SUCCESS
    if code == 1:
        return TaskOutcome.FAIL if on_failure == "fail" else TaskOutcome.RETRY
    if code == 2:
        return TaskOutcome.FAIL
    if code == 3:
        return TaskOutcome(on_held)
    if code == 4:
        return TaskOutcome(on_stopped)
    return TaskOutcome.RETRY


class Selection(BaseModel):
    """The partitions a task names: a range, a list, or a window counted from `as_of`."""

    model_config = ConfigDict(frozen=True)

    start: str | None = None
    end: str | None = None
    partitions: str | Sequence[str] | None = None
    last: int | None = None
    lag: str | None = None
    as_of: str | None = None


def command_line(
    cli: Sequence[str],
    command: str,
    target: str,
    chosen: Selection,
    *,
    pipeline: bool = False,
    until: str | None = None,
    max_duration: str | None = None,
    reason: str | None = None,
    by: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argv of one command: only the options given, each a separate argument (no shell,
    nothing quoted: a partition or a reason reaches the tool as it was written). `--as-of` goes
    only with `--last`, the one window it moves; `--json` with every command that has a result."""
    argv = [*cli, *(["pipeline"] if pipeline else []), command, target]
    parts = chosen.partitions
    names = parts if isinstance(parts, str) or parts is None else ",".join(parts)
    options = {"--start": chosen.start, "--end": chosen.end, "--partitions": names, "--lag": chosen.lag}
    options |= {"--last": None if chosen.last is None else str(chosen.last)}
    options |= {"--as-of": chosen.as_of if chosen.last is not None else None}
    options |= {"--until": until, "--max-duration": max_duration, "--reason": reason, "--by": by}
    for option, value in options.items():
        if value not in (None, ""):
            argv += [option, str(value)]
    argv += list(extra)
    if command in RESULT_COMMANDS and "--json" not in extra:
        argv.append("--json")
    return argv


def read_result(stdout: str) -> CommandDoc | None:
    """The command's `--json` document from its stdout (None: it printed none, e.g. a crash)."""
    try:
        return CommandDoc.model_validate(json.loads(stdout))
    except (ValueError, ValidationError):
        return None


def summary_of(
    doc: CommandDoc | None, command: str, target: str, code: int, outcome: TaskOutcome, line: str = ""
) -> TaskSummaryDoc:
    """The task's summary of the command's result, or of its exit code and last error line
    when it printed no result."""
    if doc is None:
        empty: list[str] = []
        return TaskSummaryDoc(
            command=command,
            target=target,
            exit_code=code,
            outcome=outcome,
            line=line,
            counts={},
            selected=empty,
            promoted=empty,
            failed=empty,
            held=empty,
            warned=empty,
            promotion_id=None,
            report=None,
            run_id=None,
            validation_id=None,
            outputs=[],
        )
    verdicts = [str(v) for v in doc.judged.values()]
    failed = [*doc.failed, *(k for k, v in doc.judged.items() if v == "fail" and k not in doc.failed)]
    counts = {"selected": len(doc.selected), "written": len(doc.written), "skipped": len(doc.skipped)}
    counts |= {"failed": len(doc.failed), **{s: verdicts.count(s) for s in ("pass", "warn", "fail")}}
    counts |= {"promoted": len(doc.promoted), "held": len(doc.held), "refused": len(doc.refused)}
    return TaskSummaryDoc(
        command=doc.command,
        target=doc.target or target,
        exit_code=code,
        outcome=outcome,
        line=doc.line or line,
        counts=counts,
        selected=list(doc.selected),
        promoted=list(doc.promoted),
        failed=failed,
        held=list(doc.held),
        warned=[k for k, v in doc.judged.items() if v == "warn"],
        promotion_id=doc.promotion_id,
        report=doc.reports.get("html"),
        run_id=doc.run_id,
        validation_id=doc.validation_id,
        outputs=list(doc.outputs),
    )


__all__ = ["Selection", "TaskOutcome", "TaskSummaryDoc", "command_line", "outcome_of", "read_result", "summary_of"]
