"""What a scheduler's task makes of the tool (`integrations.scheduling`), pure code: the outcome
of each exit code under each option, the argv a task runs, and the summary it hands on."""

from __future__ import annotations

import json

import pytest

from shadow_backfill.command_result import CommandResult
from shadow_backfill.documents.command import DatasetDoc
from shadow_backfill.integrations.scheduling import (
    Selection,
    TaskOutcome,
    command_line,
    outcome_of,
    read_result,
    summary_of,
)
from shadow_backfill.outcome import Ending
from shadow_backfill.vocabulary import CheckStatus

S, F, R, K, D = (TaskOutcome.SUCCESS, TaskOutcome.FAIL, TaskOutcome.RETRY, TaskOutcome.SKIP, TaskOutcome.RESCHEDULE)


@pytest.mark.parametrize(
    ("code", "options", "expected"),
    [
        (0, {}, S),
        (1, {}, F),  # a data failure: retrying the same code on the same data fails again
        (1, {"on_failure": "retry"}, R),
        (2, {"on_failure": "retry"}, F),  # the task's own mistake: no retry fixes it
        (3, {}, K),
        (3, {"on_held": "fail"}, F),
        (3, {"on_held": "success"}, S),
        (4, {}, D),
        (4, {"on_stopped": "retry"}, R),
        (4, {"on_stopped": "fail"}, F),
        (130, {}, R),
        (-9, {}, R),  # killed
    ],
)
def test_each_exit_code_means_one_task_outcome(code: int, options: dict[str, str], expected: TaskOutcome) -> None:
    assert outcome_of(code, **options) == expected  # type: ignore[arg-type]


def test_the_argv_names_only_what_was_given_each_value_one_argument() -> None:
    window = Selection(last=3, lag="2d", as_of="2024-01-12 00:00:00+00:00")
    argv = command_line(["sb"], "backfill", "/etc/b.yaml", window, max_duration="4h")
    assert argv == [
        "sb", "backfill", "/etc/b.yaml", "--lag", "2d", "--last", "3",
        "--as-of", "2024-01-12 00:00:00+00:00", "--max-duration", "4h", "--json",
    ]  # fmt: skip
    named = Selection(partitions=["2024-01-01", "2024-01-02"], as_of="2024-01-12")
    reason = "spend +2%; it's the fix"
    argv = command_line(["sb"], "approve", "p.yaml", named, pipeline=True, reason=reason, by="alice")
    assert argv == [
        "sb", "pipeline", "approve", "p.yaml", "--partitions", "2024-01-01,2024-01-02",
        "--reason", reason, "--by", "alice", "--json",
    ], "--as-of goes only with --last; a reason is one argument, unquoted"  # fmt: skip
    assert command_line(["sb"], "report", "c.yaml", Selection())[-1] == "c.yaml", "no --json: report has no result"


def test_the_summary_says_what_the_command_did() -> None:
    result = CommandResult(
        "backfill",
        "table",
        "db.features",
        Ending(1, "1 partition(s) failed validation: 2024-01-03"),
        selected=("2024-01-01", "2024-01-02", "2024-01-03"),
        written=("2024-01-01", "2024-01-02", "2024-01-03"),
        judged={"2024-01-01": CheckStatus.PASS, "2024-01-02": CheckStatus.WARN, "2024-01-03": CheckStatus.FAIL},
        promoted=("2024-01-01",),
        held={"2024-01-02": "verdict warn: waits for approval", "2024-01-03": "verdict fail"},
        promotion_id="promote-1",
        reports={"html": "/r/report.html"},
    )
    doc = result.document().model_copy(update={"outputs": [DatasetDoc(namespace="file", name="/w/features")]})
    read = read_result(json.dumps(doc.model_dump(mode="json")))
    summary = summary_of(read, "backfill", "c.yaml", 1, TaskOutcome.FAIL)
    assert (summary.target, summary.exit_code, summary.outcome, summary.line) == (
        "db.features",
        1,
        TaskOutcome.FAIL,
        "1 partition(s) failed validation: 2024-01-03",
    )
    assert (summary.promoted, summary.failed, summary.warned) == (["2024-01-01"], ["2024-01-03"], ["2024-01-02"])
    assert summary.counts == {
        "selected": 3, "written": 3, "skipped": 0, "failed": 0, "pass": 1, "warn": 1, "fail": 1,
        "promoted": 1, "held": 2, "refused": 0,
    }  # fmt: skip
    assert (summary.promotion_id, summary.report, summary.outputs[0].name) == (
        "promote-1",
        "/r/report.html",
        "/w/features",
    )


def test_a_command_that_printed_no_result_is_summarised_from_its_exit_code() -> None:
    assert read_result("Traceback (most recent call last):\n") is None
    summary = summary_of(None, "backfill", "c.yaml", -9, TaskOutcome.RETRY, "killed")
    assert (summary.command, summary.target, summary.exit_code, summary.line, summary.promoted) == (
        "backfill",
        "c.yaml",
        -9,
        "killed",
        [],
    )
