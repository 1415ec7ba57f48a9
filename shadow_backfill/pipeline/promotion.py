"""Promotion of a pipeline's layers as a set, and its rollback.

Each layer commits as a single table does (one commit bound to what was validated), upstream
first. The set's record is written before the first commit and stays `promoting` until the
last, naming each layer's promotion as it lands: a kill between two commits leaves a record
that says so, and the next pipeline command finishes that set before anything else (the
remaining layers' validations still hold, since only upstream live tables changed). If a
layer's commit is refused or fails, the layers committed before it are rolled back and the
record is dropped, so readers see a new upstream beside an old downstream only between two
commits.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

from shadow_backfill import testpoints
from shadow_backfill.api import Backfill
from shadow_backfill.errors import RefusedError, ShadowBackfillError, UsageError, first_line
from shadow_backfill.ledger import record_from_commit
from shadow_backfill.state import (
    PROMOTE,
    ROLLBACK,
    Approval,
    PipelineRecord,
    PromotionRecord,
    StateStore,
    new_id,
    utcnow,
)
from shadow_backfill.state.pipelines import DONE, PROMOTING, UNDOING


class SetPromotion:
    """Promotes, finishes and rolls back the sets of one pipeline (`pipeline`: its file's path)."""

    def __init__(self, layers: Mapping[str, Backfill], order: Sequence[str], store: StateStore, pipeline: str) -> None:
        self.layers = layers
        self.order = list(order)
        self.store = store
        self.pipeline = pipeline

    def not_yet_live(self, keys: list[str]) -> list[str]:
        """`keys` less those every layer's live already holds from its shadow (`already_live`):
        a nightly pipeline rerun over the same window promotes nothing again."""
        if not keys:
            return []
        everywhere = set(keys)
        for key in self.order:
            everywhere &= set(self.layers[key].promoter().already_live(keys))
        return [k for k in keys if k not in everywhere]

    def refused(self, keys: list[str], allow_warn: bool | None) -> dict[str, str]:
        """Partitions some layer's promotion would refuse (live changed after validation, already
        promoted, rewritten): left out before any layer commits, so one of them cannot make a
        later layer refuse the set after the earlier layers have committed."""
        refused: dict[str, str] = {}
        if not keys:
            return refused
        for key in self.order:
            for partition, why in self.layers[key].plan_promotion(keys, allow_warn=allow_warn).refused.items():
                refused.setdefault(partition, f"{key}: {why}")
        return refused

    def promote(self, keys: list[str], allow_warn: bool | None, approval: Approval | None = None) -> PipelineRecord:
        """Promote `keys` in every layer as one set; `approval`: the person's approval the set
        and each layer's promotion record (`pipeline approve`)."""
        record = PipelineRecord(
            id=new_id("pipeline"),
            pipeline=self.pipeline,
            kind=PROMOTE,
            partitions=keys,
            state=PROMOTING,
            at=utcnow(),
            approved_by=approval.by if approval else None,
            approval_reason=approval.reason if approval else None,
        )
        self.store.record_pipeline(record)
        return self._commit_layers(record, [], allow_warn)

    def _commit_layers(
        self, record: PipelineRecord, members: list[tuple[str, str]], allow_warn: bool | None
    ) -> PipelineRecord:
        """Commit every layer not yet in `members`, upstream first; on a refusal or a failure,
        roll back the members and drop the record."""
        landed = {key for key, _ in members}
        for key in self.order:
            if key in landed:
                continue
            try:
                plan, rec = self.layers[key].promote(record.partitions, allow_warn=allow_warn, approval=record.approval)
                if rec is None:
                    raise RefusedError(f"nothing promoted: {dict(plan.refused)}")
            except Exception as exc:
                undone = self._abandon(record, members)
                raise RefusedError(
                    f"pipeline promotion stopped at table {key!r}: {first_line(exc)}; "
                    f"the tables promoted before it were rolled back ({', '.join(undone) or 'none'})"
                ) from exc
            self.store.add_pipeline_member(record.id, key, rec.id)
            members.append((key, rec.id))
            testpoints.reached(testpoints.PIPELINE_AFTER_LAYER)
        self.store.set_pipeline_state(record.id, DONE)
        return dataclasses.replace(record, members=members, state=DONE)

    def _abandon(self, record: PipelineRecord, members: Sequence[tuple[str, str]]) -> list[str]:
        """Roll back the layers a set committed and drop its record; marked `undoing` first, so
        a kill half-way leaves it for the next command to finish undoing."""
        self.store.set_pipeline_state(record.id, UNDOING)
        undone = self.undo(members)
        self.store.drop_pipeline(record.id)
        return undone

    def cut_off(self) -> PipelineRecord | None:
        """A promotion of this pipeline a kill left `promoting` or `undoing` (the caller holds
        the pipeline's lease, so no command is working on it now)."""
        found = [r for r in self.store.pipeline_records(self.pipeline) if r.state in (PROMOTING, UNDOING)]
        return found[0] if found else None

    def finish(self, record: PipelineRecord) -> PipelineRecord | None:
        """Finish a cut-off set: commit the layers it had not committed yet (or roll it back if
        one is refused now, or if it was being undone). None: it was rolled back."""
        members = self._landed(record)
        for key, promotion_id in members:
            if (key, promotion_id) not in record.members:
                self.store.add_pipeline_member(record.id, key, promotion_id)
        if record.state == UNDOING:
            self._abandon(record, members)
            return None
        return self._commit_layers(record, members, allow_warn=True)

    def _landed(self, record: PipelineRecord) -> list[tuple[str, str]]:
        """The layers' promotions of the set: those it names, and any a kill cut off before it
        could name: the layer's latest promotion of the same partitions, not undone and named by
        no other pipeline promotion. Each layer's history is reconciled first, so a commit
        whose audit row the kill lost is found too."""
        members = list(record.members)
        named = {key for key, _ in members}
        elsewhere = {
            pid for r in self.store.pipeline_records(self.pipeline) if r.id != record.id for _, pid in r.members
        }
        for key in self.order:
            if key in named:
                continue
            bf = self.layers[key]
            bf.history()  # reconciles the store with live's log
            match = [
                p
                for p in bf.store.promotions(bf.live_table)
                if p.kind == PROMOTE
                and p.undone_by is None
                and p.id not in elsewhere
                and sorted(p.partitions) == sorted(record.partitions)
                and _not_before(p, record)
            ]
            if match:
                members.append((key, match[-1].id))
        return sorted(members, key=lambda m: self.order.index(m[0]))

    def undo(self, members: Sequence[tuple[str, str]]) -> list[str]:
        """Roll back layer promotions, downstream first; each one already undone is skipped, so
        a rollback cut off half-way is finished by running it again."""
        done = []
        for key, promotion_id in reversed(members):
            bf = self.layers[key]
            rec = bf.store.promotion(promotion_id)
            if rec is not None and rec.undone_by is None:
                bf.rollback(promotion_id)
            done.append(key)
        return done

    def rollback(self, promotion_id: str) -> PipelineRecord:
        """Undo a pipeline promotion: each layer's promotion, downstream first, then a check that
        the set is back where it was (`_unmoved`).

        A layer is back where the set found it when its promotion of the set was undone (by this
        rollback or an earlier one) and nothing has touched those partitions since: the undo
        restored them as they were at the version the layer's promotion records as its base,
        and a later commit on them (a single-table promote or run, another writer) means the
        layer holds something else now. That is checked before anything is undone, so a layer
        something moved refuses the whole rollback with nothing written, and again after, so a
        writer that slipped in meanwhile (one outside this tool, which the ownership leases do
        not bind) fails the command naming the layer instead of a success over a mixed set."""
        rec = self._to_roll_back(promotion_id)
        for key, layer_promotion in rec.members:
            self._unmoved(key, self._undone_or_not(key, layer_promotion), rec.id, "nothing was rolled back")
        members: list[tuple[str, str]] = []
        for key, layer_promotion in reversed(rec.members):
            bf = self.layers[key]
            layer_rec = bf.store.promotion(layer_promotion)
            try:
                if layer_rec is not None and layer_rec.undone_by is None:
                    members.append((key, bf.rollback(layer_promotion).id))
                elif layer_rec is not None and layer_rec.undone_by is not None:
                    members.append((key, layer_rec.undone_by))
            except ShadowBackfillError as exc:
                raise RefusedError(
                    f"pipeline rollback of {promotion_id} stopped at table {key!r}: {first_line(exc)}; "
                    f"the set is mixed: rolled back {', '.join(k for k, _ in members) or 'none'}, not {key!r} "
                    "and the tables upstream of it"
                ) from exc
        out = PipelineRecord(
            id=new_id("pipeline-rollback"),
            pipeline=rec.pipeline,
            kind=ROLLBACK,
            partitions=rec.partitions,
            members=members,
            target=rec.id,
        )
        self.store.record_pipeline(out)
        for key, rollback_id in members:
            self._unmoved(key, rollback_id, rec.id, f"the set is mixed although {out.id} rolled back every table")
        return out

    def _to_roll_back(self, promotion_id: str) -> PipelineRecord:
        """The set promotion `promotion_id`, if it can be rolled back."""
        rec = self.store.pipeline_record(promotion_id)
        if rec is None or rec.pipeline != self.pipeline:
            raise UsageError(f"no pipeline promotion {promotion_id!r} of this pipeline")
        if rec.kind != PROMOTE:
            raise UsageError(f"{promotion_id} is a rollback; roll back the promotions themselves")
        if rec.undone_by is not None:
            raise RefusedError(f"pipeline promotion {promotion_id} was already rolled back by {rec.undone_by}")
        if rec.state != DONE:
            raise RefusedError(f"pipeline promotion {promotion_id} is still {rec.state}: run `pipeline promote` first")
        return rec

    def _undone_or_not(self, key: str, layer_promotion: str) -> str:
        """The layer's last step of the set: the rollback that undid its promotion, or the promotion."""
        found = self.layers[key].store.promotion(layer_promotion)
        return found.undone_by if found is not None and found.undone_by else layer_promotion

    def _unmoved(self, key: str, step_id: str, set_id: str, then: str) -> None:
        """Refuse, naming the layer and the commit, when a commit after the layer's `step_id` (its
        promotion of the set, or the rollback of it) touched that step's partitions."""
        bf = self.layers[key]
        bf.history()  # reconciles the store with live's log: a commit whose audit row was lost counts
        step = bf.store.promotion(step_id)
        if step is None or step.live_version_after is None:
            raise RefusedError(f"table {key!r} has no record of {step_id} of pipeline promotion {set_id}; {then}")
        fmt = bf.table_format
        fmt.refresh(bf.live_table)
        moved = fmt.commits_touching(bf.live_table, step.live_version_after, step.partitions)
        if moved:
            commit, hit = moved[0]
            made = record_from_commit(commit, bf.live_table)
            by = f"{made.kind} {made.id}" if made is not None else "a writer other than shadow-backfill"
            raise RefusedError(
                f"table {key!r} ({bf.live_table}) moved since {step_id} of pipeline promotion {set_id}: "
                f"commit {commit.version} ({by}) changed partitions {hit[:5]}; {then}"
            )


# A layer's audit row is stamped by the same driver clock as the set's record; one recovered by
# reconcile carries its commit's time (the storage's clock), hence the margin.
CLOCK_MARGIN = dt.timedelta(minutes=5)


def _not_before(promotion: PromotionRecord, record: PipelineRecord) -> bool:
    """The promotion was made after the set's record was written (an older promotion of the same
    partitions is not one of its layers)."""
    if promotion.at is None or record.at is None:
        return False
    return promotion.at >= record.at - CLOCK_MARGIN
