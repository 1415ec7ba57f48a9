"""What `shadow-backfill suggest --json` prints: an `expected_changes` block derived from the
observed changes, and what it left out. Published as docs/suggest.schema.json."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BoundsDoc(BaseModel):
    """A suggested bound of one change metric (`warn`, `fail`), with what it was derived from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str
    metric: str = Field(description="mean_change_pct for a number, changed_share otherwise")
    warn: float
    fail: float
    typical: float = Field(description="the median of the metric over the partitions used")
    spread: float = Field(description="1.4826 x their median absolute deviation (at least the metric's floor)")
    partitions: int = Field(description="how many partitions the bounds were derived from")
    consistent: bool = Field(description="the config already judges this column by `consistent`; kept")


class LeftOutDoc(BaseModel):
    """A partition whose changes the bounds were not derived from, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: str
    column: str | None = Field(description="the column whose change was unlike the range's; null: the whole partition")
    why: str


class AbstainedDoc(BaseModel):
    """A column with no suggested bounds (too few partitions to say what is typical)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str
    why: str


class SuggestionDoc(BaseModel):
    """Bounds for `validation.expected_changes`, from the last validation of every partition:
    paste `yaml`'s block into the config and edit it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shadow_table: str
    validated: int = Field(description="partitions with a stored verdict")
    bounds: list[BoundsDoc]
    left_out: list[LeftOutDoc]
    abstained: list[AbstainedDoc]
    yaml: str = Field(description="the block as the config writes it, with the left-out partitions as comments")
