"""What a command did, in one typed value for one table and a pipeline alike: what it selected,
recomputed, judged, promoted, held, refused and why it stopped, with how it ended.

The steps return their own results (`results`, `pipeline.results`, the promotion plan and
record, the canary's steps); each carries what its step needs. A reader of the whole command (the
CLI's exit, an alert, a lineage event, a scheduler's operator) needs one shape whatever ran, so
the builders below read each step's result into a `CommandResult`, and its `ending` is computed
by the rules in `outcome`: the exit code stays a function of the result, decided in one place.
Pure code: no engine, no store. `documents.command` publishes it as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from shadow_backfill.documents.command import CommandDoc
from shadow_backfill.outcome import (
    DONE,
    Ending,
    backfill_outcome,
    canary_outcome,
    canary_rolled_back,
    pipeline_backfill_outcome,
    pipeline_promotion_outcome,
    pipeline_run_outcome,
    pipeline_validation_outcome,
    promotion_outcome,
    run_outcome,
    validation_outcome,
)
from shadow_backfill.vocabulary import CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.canary import CanaryResult
    from shadow_backfill.pipeline.results import PipelineBackfill, PipelinePromotion, PipelineRun, PipelineValidation
    from shadow_backfill.promote import PromotionPlan
    from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
    from shadow_backfill.state import PromotionRecord

Kind = Literal["table", "pipeline"]

# A promotion plan refuses a partition for its verdict with these words (`promote.Promoter`):
# such a partition is held for its verdict; any other refusal (live or the shadow changed under
# the promotion) is a promotion asked for and not made.
VERDICT_REFUSALS = ("not validated", "verdict fail", "verdict warn")
WARN_HELD = "verdict warn: waits for approval (promote --allow-warn)"
NOT_ASKED = "not promoted (--no-promote)"


@dataclass(frozen=True)
class CommandResult:
    """One command's account. Partitions appear in the order the command selected them; every
    mapping says why per partition. `held`: partitions the command did not carry to its end
    (written for `run`, promoted for `promote`/`backfill`, approved for `validate`), with why: a
    verdict (a `warn` not allowed, a `fail`), a stop, another run's lease, an upstream layer,
    the options (a recompute that failed is in `failed` instead). `refused`: a promotion asked
    for and not made (live or the shadow changed under it).
    `layers`: a pipeline's tables upstream first, each its recompute as a table's `run` (with
    its own ending, by the table's rule; the pipeline's `ending` is the pipeline's)."""

    command: str
    kind: Kind
    target: str
    ending: Ending = DONE
    selected: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    judged: Mapping[str, CheckStatus] = field(default_factory=dict)
    promoted: tuple[str, ...] = ()
    already_live: Mapping[str, str] = field(default_factory=dict)
    held: Mapping[str, str] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)
    stopped: str | None = None
    run_id: str | None = None
    validation_id: str | None = None
    promotion_id: str | None = None
    reports: Mapping[str, str] = field(default_factory=dict)
    layers: tuple[CommandResult, ...] = ()

    @property
    def code(self) -> int:
        return self.ending.code

    @property
    def counts(self) -> dict[str, int]:
        """How many partitions went where: what an alert's one line says."""
        judged = list(self.judged.values())
        return {
            "selected": len(self.selected),
            "written": len(self.written),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            **{str(s): judged.count(s) for s in (CheckStatus.PASS, CheckStatus.WARN, CheckStatus.FAIL)},
            "promoted": len(self.promoted),
            "already_live": len(self.already_live),
            "held": len(self.held),
            "refused": len(self.refused),
        }

    def document(self) -> CommandDoc:
        """The published JSON document of this result (docs/command.schema.json)."""
        return CommandDoc(
            command=self.command,
            kind=self.kind,
            target=self.target,
            exit_code=self.ending.code,
            line=self.ending.line,
            selected=list(self.selected),
            written=list(self.written),
            skipped=list(self.skipped),
            failed=dict(self.failed),
            judged=dict(self.judged),
            promoted=list(self.promoted),
            already_live=dict(self.already_live),
            held=dict(self.held),
            refused=dict(self.refused),
            stopped=self.stopped,
            run_id=self.run_id,
            validation_id=self.validation_id,
            promotion_id=self.promotion_id,
            reports=dict(self.reports),
            layers=[layer.document() for layer in self.layers],
        )


def rollback(kind: Kind, target: str, rollback_id: str, partitions: Iterable[str]) -> CommandResult:
    """A rollback that committed: the partitions it restored, under its own id."""
    return CommandResult("rollback", kind, target, promoted=tuple(partitions), promotion_id=rollback_id)


def _ordered(selected: Iterable[str], why: Mapping[str, str]) -> dict[str, str]:
    """`why` in the order of the selection (what a reader of the result scans first)."""
    return {k: why[k] for k in selected if k in why}


def _union(*groups: Iterable[str]) -> tuple[str, ...]:
    """Every partition of the groups once, in the order first seen."""
    return tuple(dict.fromkeys(k for group in groups for k in group))


# ---- one table ---------------------------------------------------------------------------------


def _run_held(run: RunResult) -> dict[str, str]:
    """The partitions a run left undone with no failure: another run's, or a stop's."""
    why = {k: f"recomputed by another run ({owner})" for k, owner in run.held.items()}
    why |= {k: f"not started: stopped by {run.stopped}" for k in run.not_started}
    return _ordered(run.requested, why)


def table_run(run: RunResult, target: str = "", command: str = "run") -> CommandResult:
    return CommandResult(
        command,
        "table",
        target,
        run_outcome(run),
        selected=tuple(run.requested),
        written=tuple(k for k in run.requested if k in run.written),
        skipped=tuple(run.skipped),
        failed=_ordered(run.requested, run.failed),
        held=_run_held(run),
        stopped=run.stopped,
        run_id=run.run_id,
    )


def _validation(kind: Kind, target: str, judged: dict[str, CheckStatus], ending: Ending) -> CommandResult:
    """`validate` of a table or a pipeline: it selected what it judged, and holds each `warn`."""
    held = {k: WARN_HELD for k, v in judged.items() if v == CheckStatus.WARN}
    return CommandResult("validate", kind, target, ending, selected=tuple(judged), judged=judged, held=held)


def table_validation(result: ValidationResult, target: str = "") -> CommandResult:
    judged = {v.partition: v.verdict for v in result.verdicts}
    checked = _validation("table", target, judged, validation_outcome(result))
    return replace(checked, validation_id=result.validation_id or None)


def _split_refused(refused: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A plan's refusals as (held for their verdict, refused for a change under the promotion)."""
    held = {k: why for k, why in refused.items() if why.startswith(VERDICT_REFUSALS)}
    return held, {k: why for k, why in refused.items() if k not in held}


def table_promotion(
    plan: PromotionPlan, record: PromotionRecord | None, target: str = "", command: str = "promote"
) -> CommandResult:
    """A promotion, or an approval's promotion (`command` "approve")."""
    held, refused = _split_refused(plan.refused)
    return CommandResult(
        command,
        "table",
        target,
        promotion_outcome(plan, record),
        selected=_union(plan.partitions, plan.refused),
        promoted=tuple(record.partitions) if record is not None else (),
        held=held,
        refused=refused,
        promotion_id=record.id if record is not None else None,
    )


def _canary_promoted(result: CanaryResult) -> tuple[str, ...]:
    """What a canary promotion left live: nothing if it was rolled back."""
    if result.canary is None or result.rolled_back is not None:
        return ()
    return (*result.canary.partitions, *(result.rest.partitions if result.rest is not None else ()))


def table_canary(result: CanaryResult, target: str = "") -> CommandResult:
    held, refused = _split_refused(result.plan.refused)
    rolled_back = canary_rolled_back(result)
    if rolled_back is not None:
        held |= {k: "canary rolled back" for k in result.plan.partitions}
    return CommandResult(
        "promote",
        "table",
        target,
        canary_outcome(result),
        selected=_union(result.plan.partitions, result.plan.refused),
        promoted=_canary_promoted(result),
        held=held,
        refused=refused,
        promotion_id=result.canary.id if result.canary is not None else None,
    )


def _backfill_promoted(result: BackfillResult) -> tuple[str, ...]:
    if result.canary is not None:
        return _canary_promoted(result.canary)
    return tuple(result.promotion.partitions) if result.promotion is not None else ()


def _promotion_held(
    selected: Iterable[str],
    done: Mapping[str, str],
    gone: set[str],
    judged: Mapping[str, CheckStatus],
    stopped: str | None,
    otherwise: str,
) -> dict[str, str]:
    """Why each selected partition that neither failed nor was promoted, refused or already
    live (`gone`) was not promoted: the run's reasons (`done`: a lease, a stop), its verdict,
    else `otherwise` (the command's options, a rolled-back canary)."""
    why = dict(done)
    for k in selected:
        if k in why or k in gone:
            continue
        verdict = judged.get(k)
        if verdict is None:
            why[k] = f"not validated: stopped by {stopped}" if stopped else "not validated"
        elif verdict != CheckStatus.PASS:
            why[k] = WARN_HELD if verdict == CheckStatus.WARN else "verdict fail"
        else:
            why[k] = otherwise
    return _ordered(selected, why)


def table_backfill(result: BackfillResult, target: str = "") -> CommandResult:
    """The main job. Its rules live in `outcome.backfill_outcome`; a rolled-back canary is one
    of its failures."""
    problem = canary_rolled_back(result.canary) if result.canary is not None else None
    promoted = _backfill_promoted(result)
    run = table_run(result.run, target, "backfill")
    judged = {v.partition: v.verdict for v in result.validation.verdicts}
    record = result.canary.canary if result.canary is not None else result.promotion
    gone = set(promoted) | set(result.already_live) | set(result.refused) | set(run.failed)
    otherwise = NOT_ASKED if not result.promote_requested else "canary rolled back" if problem else "not promoted"
    return replace(
        run,
        ending=backfill_outcome(result, problem),
        judged=judged,
        promoted=promoted,
        already_live=_ordered(run.selected, result.already_live),
        held=_promotion_held(run.selected, run.held, gone, judged, run.stopped, otherwise),
        refused=_ordered(run.selected, result.refused),
        validation_id=result.validation.validation_id or None,
        promotion_id=record.id if record is not None else None,
        reports={kind: str(path) for kind, path in result.reports.items()},
    )


# ---- a pipeline --------------------------------------------------------------------------------


def _first_per_partition(layers: Iterable[CommandResult], field_of: str) -> dict[str, str]:
    """Each partition's reason in the first layer (upstream first) that gives one, named."""
    out: dict[str, str] = {}
    for layer in layers:
        for k, why in getattr(layer, field_of).items():
            out.setdefault(k, f"{layer.target}: {why}")
    return out


def _layer_runs(result: PipelineRun) -> tuple[CommandResult, ...]:
    """Each layer's recompute as a table's `run` (its own ending), with the partitions an
    upstream held back among its held ones."""
    layers = []
    for key, run in result.runs.items():
        blocked = {k: f"held back by upstream: {why}" for k, why in result.blocked.get(key, {}).items()}
        layer = table_run(run, key) if run is not None else CommandResult("run", "table", key)
        layers.append(replace(layer, held={**layer.held, **blocked}))
    return tuple(layers)


def pipeline_run(result: PipelineRun, target: str = "", command: str = "run") -> CommandResult:
    layers = _layer_runs(result)
    finished = result.finished
    written = {k for layer in layers for k in layer.written}
    return CommandResult(
        command,
        "pipeline",
        target,
        pipeline_run_outcome(result),
        selected=tuple(result.requested),
        written=tuple(k for k in finished if k in written),
        skipped=tuple(k for k in finished if k not in written),
        failed=_ordered(result.requested, _first_per_partition(layers, "failed")),
        held=_ordered(result.requested, _first_per_partition(layers, "held")),
        stopped=result.stopped,
        layers=layers,
    )


def pipeline_validation(result: PipelineValidation, target: str = "") -> CommandResult:
    judged = {v.partition: v.verdict for v in result.verdicts}
    return _validation("pipeline", target, judged, pipeline_validation_outcome(result))


def _set_promoted(promotion: PipelinePromotion | None) -> tuple[tuple[str, ...], str | None]:
    """The partitions a set promotion left live, and its id."""
    if promotion is None or promotion.record is None:
        return (), None
    return tuple(promotion.partitions), promotion.record.id


def pipeline_promotion(result: PipelinePromotion, target: str = "", command: str = "promote") -> CommandResult:
    """A set promotion, or an approval's (`command` "approve")."""
    promoted, promotion_id = _set_promoted(result)
    return CommandResult(
        command,
        "pipeline",
        target,
        pipeline_promotion_outcome(result),
        selected=_union(result.partitions, result.refused),
        promoted=promoted,
        refused=dict(result.refused),
        promotion_id=promotion_id,
    )


def pipeline_backfill(result: PipelineBackfill, target: str = "") -> CommandResult:
    """The main job over every layer; its rules live in `outcome.pipeline_backfill_outcome`."""
    run = pipeline_run(result.run, target, "backfill")
    judged = {v.partition: v.verdict for v in result.validation.verdicts}
    promoted, promotion_id = _set_promoted(result.promotion)
    refused = dict(result.promotion.refused) if result.promotion is not None else {}
    gone = set(promoted) | set(refused) | set(run.failed)
    return replace(
        run,
        ending=pipeline_backfill_outcome(result),
        judged=judged,
        promoted=promoted,
        held=_promotion_held(run.selected, run.held, gone, judged, run.stopped, "not promoted"),
        refused=_ordered(run.selected, refused),
        promotion_id=promotion_id,
        reports={kind: str(path) for kind, path in result.reports.items()},
    )
