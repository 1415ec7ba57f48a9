"""The typed measurements a validation hands from its Spark jobs to its judge.

The jobs (`profile_job`, `facts_job`, `expectations`) fill these in; the judge (`verdict`) and
the reports read only these. Nothing here imports PySpark, so grading is pure code, tested
without a JVM (the unit tier).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ColumnPlan:
    """Which columns get which drift metrics (derived from the two schemas)."""

    numeric: list[str]
    categorical: list[str]
    compared: list[str]  # same name and type on both sides: key-diff comparison
    added: list[str]
    removed: list[str]
    retyped: list[tuple[str, str, str]]


@dataclass(frozen=True)
class ColumnDiff:
    """One compared column over a partition's matched keys: how many changed beyond the
    tolerance and, for a numeric column counted by the key grouping, the largest and the mean
    |shadow - live| (`abs_diffs`; None where nothing was counted)."""

    changed: int
    abs_diffs: tuple[float | None, float | None] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The published form (report.json's `keys.by_column`)."""
        if self.abs_diffs is None:
            return {"changed": self.changed}
        return {"changed": self.changed, "max_abs_diff": self.abs_diffs[0], "mean_abs_diff": self.abs_diffs[1]}


@dataclass(frozen=True)
class KeyDiff:
    """Shadow against live by key over one partition: keys only in shadow (`added`), only in
    live (`removed`), on both sides (`matched`), matched keys with any compared column changed
    beyond tolerance (`changed`), rows beyond the first of a repeated key (`duplicates`), and
    each compared column's changes."""

    added: int = 0
    removed: int = 0
    matched: int = 0
    changed: int = 0
    duplicates: int = 0
    by_column: dict[str, ColumnDiff] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The published form (report.json's `keys`), `changed_by_column` included."""
        return {
            "added": self.added,
            "removed": self.removed,
            "matched": self.matched,
            "changed": self.changed,
            "duplicates": self.duplicates,
            "changed_by_column": {c: d.changed for c, d in self.by_column.items()},
            "by_column": {c: d.as_dict() for c, d in self.by_column.items()},
        }


@dataclass
class PartitionProfile:
    """Everything measured for one partition; `metrics` is what reports and verdicts read."""

    key: str
    live_rows: int = 0
    shadow_rows: int = 0
    shadow_aggs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: KeyDiff | None = None  # None: no key columns configured, so no key diff
    unique: dict[str, tuple[int, int]] = field(default_factory=dict)  # column -> (non-null, not unique)
    samples: list[dict[str, Any]] = field(default_factory=list)  # changed values, largest first

    @property
    def live_missing(self) -> bool:
        return self.live_rows == 0


@dataclass(frozen=True)
class Outcome:
    """One expectation on one partition."""

    expectation: str
    success: bool
    observed: Any
    detail: str
    severity: str  # what a failure means for the verdict: "fail" or "warn"
