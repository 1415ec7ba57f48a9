"""The validation gate: every shadow partition against its suites and the same live partition.

The pieces: `validator.py` runs the gate; `suites.py` loads and checks GX suites;
`expectations.py` compiles them to aggregates (`reference.py`: GX itself for the rest);
`drift.py` runs the two Spark jobs (`profile_job.py`, `facts_job.py` with `key_facts.py` and
`facts_spec.py`, with `stats.py` and `plan.py`); `verdict.py` turns measurements into checks (`check.py`) and a verdict.

The names below load on first use: the state store imports `check.py`, and an eager import of
the validator here (which imports the state store) would make that a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shadow_backfill.validate.validator import ValidationResult, Validator
    from shadow_backfill.validate.verdict import PartitionVerdict

__all__ = ["PartitionVerdict", "ValidationResult", "Validator"]


def __getattr__(name: str) -> Any:
    if name in ("ValidationResult", "Validator"):
        from shadow_backfill.validate import validator

        return getattr(validator, name)
    if name == "PartitionVerdict":
        from shadow_backfill.validate.verdict import PartitionVerdict

        return PartitionVerdict
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
