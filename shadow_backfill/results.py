"""What the steps of a command return, as typed values: one table's run, validation and main
job. They hold no engine and no store (plain data and the rules read from it), so the CLI, the
reports, the exit codes (`outcome`) and an integration read the same objects, and the rules are
tested without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadow_backfill.state.leases import describe_owner
from shadow_backfill.vocabulary import VERDICTS, CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.canary import CanaryResult
    from shadow_backfill.promote import PromotionPlan
    from shadow_backfill.state import PromotionRecord
    from shadow_backfill.validate.judge import PartitionVerdict


@dataclass
class RunResult:
    run_id: str
    requested: list[str]
    skipped: list[str]
    written: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    """partition -> its whole error where `failed` keeps one line of it (a UDF's traceback, an
    engine's stack): for the log file, never the terminal."""
    chunks: list[list[str]] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)  # partition -> the run holding its lease
    shadow_version: int | None = None
    peak_parallel: int = 0
    code_fingerprint: str = ""
    stopped: str | None = None
    """Why the run stopped starting chunks (its time box, SIGTERM); None if it did not."""
    not_started: list[str] = field(default_factory=list)
    """Partitions of chunks the stop kept from starting: a later run resumes them."""

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def complete(self) -> bool:
        """Nothing requested was left undone: none failed, none was left to another run, and no
        stop kept a chunk from starting."""
        return not self.failed and not self.held and not self.not_started

    @property
    def finished(self) -> list[str]:
        """The requested partitions this run left written: none failed, held or not started
        (what a stopped job judges with `--promote-partial`)."""
        left = set(self.not_started) | set(self.failed) | set(self.held)
        return [k for k in self.requested if k not in left]

    def held_summary(self, limit: int = 3) -> str:
        """One line naming the partitions another run holds (the first few and a count) and who."""
        keys = sorted(self.held)
        shown = ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
        who = ", ".join(describe_owner(o) for o in sorted(set(self.held.values())))
        return (
            f"{len(keys)} partition(s) are being recomputed by another run, {who}: {shown}; "
            "they were left to it (rerun once it finishes)"
        )

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "requested": len(self.requested),
            "skipped": len(self.skipped),
            "written": len(self.written),
            "failed": len(self.failed),
            "held_by_other_runs": len(self.held),
            "chunks": len(self.chunks),
            "not_started": len(self.not_started),
            "stopped": self.stopped,
            "shadow_version": self.shadow_version,
            "code_fingerprint": self.code_fingerprint,
        }


@dataclass
class ValidationResult:
    """One validation run: the versions it read (bound into every stored verdict) and its verdicts."""

    validation_id: str
    shadow_version: int | None
    live_version: int | None
    verdicts: list[PartitionVerdict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(map(str, VERDICTS), 0)
        for v in self.verdicts:
            out[str(v.verdict)] += 1
        return out

    @property
    def ok(self) -> bool:
        return not any(v.verdict == CheckStatus.FAIL for v in self.verdicts)


@dataclass
class BackfillResult:
    """What the main job did, step by step: the CLI renders it, a script can inspect it."""

    run: RunResult
    validation: ValidationResult
    promotion_plan: PromotionPlan | None
    promotion: PromotionRecord | None
    reports: dict[str, Path]
    promote_requested: bool
    already_live: dict[str, str] = field(default_factory=dict)
    """Passing partitions live already holds from this shadow (partition -> promotion id): not
    promoted again."""
    canary: CanaryResult | None = None
    """With `promote.canary`: the canary's steps (then `promotion` is the last step made)."""

    @property
    def ok(self) -> bool:
        """Everything requested was recomputed and every partition passed the gate."""
        return self.run.complete and self.validation.ok

    @property
    def held(self) -> list[str]:
        """Partitions that wait for a human: validated `warn`, so not promoted (the CLI exits 3)."""
        promoted = set(self.promotion.partitions) if self.promotion else set()
        if self.canary is not None and self.canary.canary is not None and self.canary.rolled_back is None:
            promoted |= set(self.canary.canary.partitions)
        promoted |= set(self.already_live)
        warned = [v.partition for v in self.validation.verdicts if v.verdict == CheckStatus.WARN]
        return [k for k in warned if k not in promoted]

    @property
    def refused(self) -> dict[str, str]:
        """Passing partitions the promotion did not take (live changed under its commit): a
        promotion asked for and not made in full is not a success."""
        return dict(self.promotion_plan.refused) if self.promotion_plan is not None else {}


__all__ = ["BackfillResult", "RunResult", "ValidationResult"]
