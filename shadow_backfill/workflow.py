"""The main job's rules between its steps, written once for one table (`api.Backfill.backfill`)
and a pipeline (`pipeline.runner.Pipeline.backfill`): which verdicts promote, what a stopped run
leaves to judge. Pure values and functions (no Spark, no store), so the rules are tested
without an engine and the two facades cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shadow_backfill.config import BackfillConfig
from shadow_backfill.timebox import TimeBox
from shadow_backfill.vocabulary import CheckStatus


@dataclass(frozen=True)
class PromotionPolicy:
    """How a command promotes, resolved once from the configs and the command's options.

    `allow_warn`: a `warn` verdict promotes too (else it waits for a human, exit 3); `canary`:
    that many partitions are promoted and checked on live before the rest; `partial`: a run its
    time box stopped is judged and promoted over the partitions it finished."""

    allow_warn: bool = False
    canary: int | None = None
    partial: bool = False

    @classmethod
    def of(
        cls, configs: Iterable[BackfillConfig], *, allow_warn: bool | None = None, partial: bool = False
    ) -> PromotionPolicy:
        """The policy of one table (one config) or a pipeline (its layers'): a `warn` promotes
        only where every layer allows it, since a pipeline's partition goes to live in every
        layer or in none. The canary is a single table's (a pipeline refuses it earlier)."""
        found = list(configs)
        allowed = all(c.promote.allow_warn for c in found) if allow_warn is None else allow_warn
        canary = found[0].promote.canary if len(found) == 1 else None
        return cls(allowed, canary or None, partial)

    @property
    def promotable(self) -> frozenset[CheckStatus]:
        """The verdicts that go to live."""
        return frozenset({CheckStatus.PASS, CheckStatus.WARN} if self.allow_warn else {CheckStatus.PASS})

    def passing(self, verdicts: Iterable[tuple[str, CheckStatus | str | None]]) -> list[str]:
        """The partitions of (partition, verdict) pairs this policy promotes, in their order."""
        return [k for k, verdict in verdicts if verdict in self.promotable]


def stop_of(stopped: str | None, timebox: TimeBox | None) -> str | None:
    """Why a run stopped: its own stop, or its time box's when the box said stop after the
    last chunk had started (the run finished, but the job must not go on to judge either)."""
    if stopped is None and timebox is not None:
        return timebox.reason
    return stopped


def to_judge(
    requested: Sequence[str], finished: Sequence[str], stopped: str | None, policy: PromotionPolicy
) -> list[str]:
    """The partitions the job validates after its run: every requested one; after a stop only
    those the run finished, and only with `policy.partial` ([]: judge nothing, the reports of
    earlier verdicts stay as they are)."""
    if stopped is None:
        return list(requested)
    return list(finished) if policy.partial else []


__all__ = ["PromotionPolicy", "stop_of", "to_judge"]
