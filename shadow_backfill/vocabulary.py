"""The words every layer shares: how a check or a partition's verdict came out, one check's
record, where a partition's recompute stands and how a run ended.

This module sits at the bottom of the package and imports nothing from the tool, so the state
store, the judge, the promoter and the reports can all use it without importing each other (it
is what ends the old `validate` -> `state` -> `validate` import cycle). The members are `str`
enums: they compare equal to, and serialise as, the plain words stored in the state store and
published in report.json, so stored verdicts from earlier versions read back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

# The change metrics of one column (the checks a declared change is bounded by, `mean_change_pct:
# {warn: 3, fail: 5}`): the judge names them, and the report plots the columns they judged.
CHANGE_METRICS = ("mean_change", "mean_change_pct", "sum_change_pct", "changed_share", "max_abs_diff", "mean_abs_diff")


class _Word(str, Enum):
    """A word of the vocabulary: a `str` (equal to, hashed and serialised as its value), printed
    and formatted as the plain word on every supported Python (`enum.StrEnum` is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)


class CheckStatus(_Word):
    """How one check, or a partition's verdict (its worst check), came out."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    # Could not be judged (too few rows): shown, never passes, warns or fails a partition.
    SKIPPED = "skipped"

    @property
    def rank(self) -> int:
        """Order of severity: skipped < pass < warn < fail."""
        return _RANK[self]


_RANK = {CheckStatus.SKIPPED: -1, CheckStatus.PASS: 0, CheckStatus.WARN: 1, CheckStatus.FAIL: 2}

# Verdict statuses, worst last, as reports count and show them.
VERDICTS = (CheckStatus.PASS, CheckStatus.WARN, CheckStatus.FAIL)

# The one palette of verdicts (and a pipeline partition's `blocked`), so a partition has the
# same colour in the HTML report, the pipeline's report and the terminal: hex for the reports,
# Rich styles for the terminal; a partition with no verdict is grey in both.
VERDICT_COLOURS = {"pass": "#2e9e5b", "warn": "#e0a400", "fail": "#d64545", "blocked": "#6a1b9a"}
NO_VERDICT_COLOUR = "#e4e4e4"
VERDICT_STYLES = {"pass": "green", "warn": "yellow", "fail": "bold red", "blocked": "magenta"}


def worst(statuses: Iterable[str]) -> CheckStatus:
    """The verdict of a set of check statuses; skipped checks do not count, none at all passes."""
    judged = [CheckStatus(s) for s in statuses if s != CheckStatus.SKIPPED]
    return max(judged, key=lambda s: s.rank, default=CheckStatus.PASS)


@dataclass(frozen=True)
class Check:
    """One check: an observed value against a threshold, with its status and a readable message.
    The validator makes them, the state store keeps them as JSON, the reports render them."""

    name: str  # a drift metric ("psi", "null_rate_change", ...) or an expectation id (suite/index:type)
    column: str | None
    status: CheckStatus
    observed: Any
    threshold: str
    message: str

    def __post_init__(self) -> None:
        # A status given as its plain word (from JSON, or by an API user) becomes the enum.
        object.__setattr__(self, "status", CheckStatus(self.status))

    @property
    def id(self) -> str:
        return f"{self.name}[{self.column}]" if self.column else self.name

    def as_dict(self) -> dict[str, Any]:
        """The stored and reported form, `{name, column, status, observed, threshold, message}`."""
        return {**asdict(self), "status": str(self.status)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Check:
        """Back from the stored form; tolerant of a missing field, so any stored verdict reads."""
        return cls(
            name=str(d.get("name", "")),
            column=d.get("column"),
            status=CheckStatus(str(d.get("status", CheckStatus.PASS))),
            observed=d.get("observed"),
            threshold=str(d.get("threshold", "")),
            message=str(d.get("message", "")),
        )


def reasons(checks: Iterable[Check]) -> list[Check]:
    """The checks that made a verdict worse than pass, failures first."""
    bad = (c for c in checks if c.status in (CheckStatus.WARN, CheckStatus.FAIL))
    return sorted(bad, key=lambda c: -c.status.rank)


class PartitionStatus(_Word):
    """Where one partition's recompute into the shadow table stands (the state store's word)."""

    PENDING = "pending"
    RUNNING = "running"
    WRITTEN = "written"
    FAILED = "failed"


class RunStatus(_Word):
    """How one `run` (a recompute of a range) stands in the state store's run log."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    """Stopped starting chunks (a time box, SIGTERM); what it wrote is kept, a rerun resumes."""
