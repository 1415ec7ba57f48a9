"""What a scheduler's task hands on (`integrations.scheduling`): the outcome it made of the
command's exit code, and a small summary of the command's result. Published as
docs/task-summary.schema.json."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from shadow_backfill.documents.command import DatasetDoc


class TaskOutcome(str, Enum):
    """What the task does with the command's exit code (`outcome_of`)."""

    SUCCESS = "success"
    FAIL = "fail"  # failed, no retry
    RETRY = "retry"  # failed, retried as the task's retries allow
    SKIP = "skip"
    RESCHEDULE = "reschedule"  # tried again later; the tool resumes where it stopped


class TaskSummaryDoc(BaseModel):
    """What a task hands on (Airflow: the XCom `shadow_backfill`), pushed before the task
    fails or is skipped, so the next task, an alert or a person reads what happened. Published
    as docs/task-summary.schema.json; the whole result is the command's `--json` document."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    target: str
    exit_code: int
    outcome: TaskOutcome = Field(description="what the task did with the exit code")
    line: str = Field(description="the command's one line saying why it did not exit 0; empty for 0")
    counts: dict[str, int] = Field(
        description="selected, written, skipped, failed, pass, warn, fail, promoted, held, refused"
    )
    selected: list[str] = Field(description="the partitions the command worked on (a window: as resolved)")
    promoted: list[str]
    failed: list[str] = Field(description="partitions whose recompute failed or whose verdict is fail")
    held: list[str] = Field(description="partitions held back (a warn waiting for approval, a stop)")
    warned: list[str] = Field(description="partitions whose verdict is warn: what `approve` takes")
    promotion_id: str | None
    report: str | None = Field(description="the HTML report's path, when the command wrote one")
    run_id: str | None
    validation_id: str | None
    outputs: list[DatasetDoc] = Field(description="live tables as the tool's OpenLineage events name them")
