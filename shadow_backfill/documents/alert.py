"""What a `json` webhook receives when a command ends (`announce.alerts`): the one-line text a
chat shows, the outcome the webhook was configured for, and the command's whole account
(`CommandDoc`). Published as docs/alert.schema.json; Slack and Teams get the same facts laid out
as their formats want (`announce.alerts.slack`, `.teams`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shadow_backfill.documents.command import CommandDoc


class AlertDoc(BaseModel):
    """One command's ending, as a `json` webhook is told it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    text: str = Field(
        description="one line: target, range, counts and exit code "
        "(e.g. 'local.demo.features 2024-01-01..2024-02-29: 57 promoted, 3 failed, 0 held — exit 1')"
    )
    outcome: Literal["failure", "held", "stopped", "success"] = Field(
        description="the ending, as `notify.on` names it: exit 1 or 2, 3, 4 or 130, 0"
    )
    error: str | None = Field(description="the command's error line, for a command that ended in one")
    run: str = Field(description="this command's run id (the OpenLineage run's, when lineage is on)")
    sample: bool = Field(default=False, description="true for `notify-test`'s message: no command ran")
    result: CommandDoc | None = Field(
        description="what the command did; absent when it stopped before a result (a refusal, an error)"
    )
