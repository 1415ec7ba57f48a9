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


@dataclass
class PartitionProfile:
    """Everything measured for one partition; `metrics` is what reports and verdicts read."""

    key: str
    live_rows: int = 0
    shadow_rows: int = 0
    shadow_aggs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)
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
