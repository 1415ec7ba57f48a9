"""The main job's rules between its steps, written once for one table (`api.Backfill.backfill`)
and a pipeline (`pipeline.runner.Pipeline.backfill`): which verdicts promote, what a stopped run
leaves to judge. Pure values and functions (no Spark, no store), so the rules are tested
without an engine and the two facades cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import UsageError
from shadow_backfill.records import Approval
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


def approval_refusals(keys: Sequence[str], verdicts: Mapping[str, CheckStatus | str | None]) -> dict[str, str]:
    """Why each of `keys` cannot be approved ({}: all can). Only a partition held for a person,
    verdict `warn`, can: a failed one must not reach live by a person's word (fix the change or
    its bounds, and validate again), and a passing one needs no approval (`promote` takes it),
    which the trail would otherwise record as approved."""
    why: dict[str, str] = {
        CheckStatus.FAIL: "verdict fail: it failed validation, which no approval overrides",
        CheckStatus.PASS: "verdict pass: it is not held for approval (promote promotes it)",
    }
    refused: dict[str, str] = {}
    for k in keys:
        verdict = verdicts.get(k)
        if verdict is None:
            refused[k] = "not validated"
        elif verdict != CheckStatus.WARN:
            refused[k] = why.get(str(verdict), f"verdict {verdict}: not held for approval")
    return refused


def check_approval(
    keys: Sequence[str], verdicts: Mapping[str, CheckStatus | str | None], reason: str, by: str | None
) -> None:
    """`approve`'s refusals, one line, exit 2, before anything is written: a reason is required
    (the trail's "why"), and every named partition must be held (`approval_refusals`)."""
    if not keys:
        raise UsageError("approve needs --partitions: name the held partitions a person approved")
    if not reason.strip():
        raise UsageError("--reason is empty: say why these partitions may go to live (it is kept in the audit trail)")
    if by is not None and not by.strip():
        raise UsageError("--by is empty: name who approved, or leave it out for the current user")
    refused = approval_refusals(keys, verdicts)
    if refused:
        first = next(iter(refused))
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise UsageError(f"cannot approve {first}: {refused[first]}{more}; nothing was promoted")


def approval_of(reason: str, by: str | None) -> Approval:
    """The approval `approve` records: `by`, or the user the command runs as."""
    from shadow_backfill.state.db import current_user  # SQLAlchemy: not for every command's start

    return Approval(by=(by or current_user()).strip(), reason=reason.strip())


__all__ = ["PromotionPolicy", "approval_of", "approval_refusals", "check_approval", "stop_of", "to_judge"]
