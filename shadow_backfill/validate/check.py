"""One check: an observed value against a threshold, with its status and a readable message.

The one definition shared by the validator (which makes checks), the state store (which stores
them as JSON and reads them back) and the reports (which render them). It imports nothing from
the tool, so the state store can use it without pulling in Spark or the validator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

PASS, WARN, FAIL = "pass", "warn", "fail"
# A check that could not be judged (too few rows): shown, never passes, warns or fails.
SKIPPED = "skipped"
RANK = {SKIPPED: -1, PASS: 0, WARN: 1, FAIL: 2}


@dataclass(frozen=True)
class Check:
    name: str  # a drift metric ("psi", "null_rate_change", ...) or an expectation id (suite/index:type)
    column: str | None
    status: str
    observed: Any
    threshold: str
    message: str

    @property
    def id(self) -> str:
        return f"{self.name}[{self.column}]" if self.column else self.name

    def as_dict(self) -> dict[str, Any]:
        """The stored and reported form, `{name, column, status, observed, threshold, message}`."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Check:
        """Back from the stored form; tolerant of a missing field, so any stored verdict reads."""
        return cls(
            name=str(d.get("name", "")),
            column=d.get("column"),
            status=str(d.get("status", PASS)),
            observed=d.get("observed"),
            threshold=str(d.get("threshold", "")),
            message=str(d.get("message", "")),
        )


def worst(statuses: Iterable[str]) -> str:
    """The verdict of a set of checks; skipped checks do not count."""
    return max((s for s in statuses if s != SKIPPED), key=lambda s: RANK[s], default=PASS)


def reasons(checks: Iterable[Check]) -> list[Check]:
    """The checks that made a verdict worse than pass, failures first."""
    return sorted((c for c in checks if c.status in (WARN, FAIL)), key=lambda c: -RANK[c.status])
