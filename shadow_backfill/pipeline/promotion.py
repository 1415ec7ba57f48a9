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

from shadow_backfill.api import Backfill
from shadow_backfill.errors import RefusedError, UsageError, first_line
from shadow_backfill.state import PROMOTE, ROLLBACK, PipelineRecord, PromotionRecord, StateStore, new_id, utcnow
from shadow_backfill.state.pipelines import DONE, PROMOTING, UNDOING


class SetPromotion:
    """Promotes, finishes and rolls back the sets of one pipeline (`pipeline`: its file's path)."""

    def __init__(self, layers: Mapping[str, Backfill], order: Sequence[str], store: StateStore, pipeline: str) -> None:
        self.layers = layers
        self.order = list(order)
        self.store = store
        self.pipeline = pipeline

    def promote(self, keys: list[str], allow_warn: bool | None) -> PipelineRecord:
        record = PipelineRecord(
            id=new_id("pipeline"), pipeline=self.pipeline, kind=PROMOTE, partitions=keys, state=PROMOTING, at=utcnow()
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
                plan, rec = self.layers[key].promote(record.partitions, allow_warn=allow_warn)
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
        """Undo a pipeline promotion: each layer's promotion, downstream first."""
        rec = self.store.pipeline_record(promotion_id)
        if rec is None or rec.pipeline != self.pipeline:
            raise UsageError(f"no pipeline promotion {promotion_id!r} of this pipeline")
        if rec.kind != PROMOTE:
            raise UsageError(f"{promotion_id} is a rollback; roll back the promotions themselves")
        if rec.undone_by is not None:
            raise RefusedError(f"pipeline promotion {promotion_id} was already rolled back by {rec.undone_by}")
        if rec.state != DONE:
            raise RefusedError(f"pipeline promotion {promotion_id} is still {rec.state}: run `pipeline promote` first")
        members = []
        for key, layer_promotion in reversed(rec.members):
            bf = self.layers[key]
            layer_rec = bf.store.promotion(layer_promotion)
            if layer_rec is not None and layer_rec.undone_by is None:
                members.append((key, bf.rollback(layer_promotion).id))
            elif layer_rec is not None and layer_rec.undone_by is not None:
                members.append((key, layer_rec.undone_by))
        out = PipelineRecord(
            id=new_id("pipeline-rollback"),
            pipeline=rec.pipeline,
            kind=ROLLBACK,
            partitions=rec.partitions,
            members=members,
            target=rec.id,
        )
        self.store.record_pipeline(out)
        return out


# A layer's audit row is stamped by the same driver clock as the set's record; one recovered by
# reconcile carries its commit's time (the storage's clock), hence the margin.
CLOCK_MARGIN = dt.timedelta(minutes=5)


def _not_before(promotion: PromotionRecord, record: PipelineRecord) -> bool:
    """The promotion was made after the set's record was written (an older promotion of the same
    partitions is not one of its layers)."""
    if promotion.at is None or record.at is None:
        return False
    return promotion.at >= record.at - CLOCK_MARGIN
