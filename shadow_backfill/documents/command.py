"""What a command did, as a JSON document (`command_result.CommandResult`): the one summary an
alert posts, a lineage event's facet carries and a scheduler's operator reads, for one table
and a pipeline alike. Published as docs/command.schema.json.

Partitions keep the order the command selected them in (JSON objects keep their keys' order);
`exit_code` and `line` are the command's ending, the same code and line the CLI exits with.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shadow_backfill.vocabulary import CheckStatus

Reasons = dict[str, str]


class DatasetDoc(BaseModel):
    """A table as the command's OpenLineage events name it (`namespace`, `name`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str
    name: str


class CommandDoc(BaseModel):
    """One command's account; `layers`: a pipeline's tables, each its own account."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(description="run, validate, promote, approve, rollback or backfill")
    kind: Literal["table", "pipeline"]
    target: str = Field(description="the table or the pipeline the command ran on; empty if not named")
    exit_code: int = Field(description="0 done, 1 failed, 3 held for approval, 4 stopped (docs: exit codes)")
    line: str = Field(description="the one line that says why the exit code is not 0; empty for 0")
    selected: list[str]
    written: list[str]
    skipped: list[str] = Field(description="already written, not recomputed")
    failed: Reasons = Field(description="partition -> why its recompute failed")
    judged: dict[str, CheckStatus] = Field(description="partition -> its verdict")
    promoted: list[str]
    already_live: Reasons = Field(description="partition -> the promotion that made it live already")
    held: Reasons = Field(description="partition -> why the command did not carry it to its end")
    refused: Reasons = Field(description="partition -> why the promotion asked for did not take it")
    stopped: str | None = Field(description="what stopped the command starting work (a time box, SIGTERM)")
    run_id: str | None
    validation_id: str | None
    promotion_id: str | None
    reports: dict[str, str] = Field(description="report kind -> its path")
    layers: list[CommandDoc] = Field(description="a pipeline's tables, upstream first; empty for a table")
    outputs: list[DatasetDoc] = Field(
        default_factory=list,
        description="`--json` of a command that started its engine: its live tables, named as its "
        "OpenLineage events name them (a scheduler's lineage of the task); else empty",
    )
