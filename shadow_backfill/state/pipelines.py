"""Pipeline promotions in the store: one record for a set of layer promotions made together,
so the set is rolled back as one."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select, update

from shadow_backfill.records import plain
from shadow_backfill.state.audit import PROMOTE, ROLLBACK, Approval
from shadow_backfill.state.db import Db, aware, from_row, stamped
from shadow_backfill.state.schema import pipeline_promotions

# A pipeline promotion is written before its first layer commits and is `promoting` until its
# last layer has: one still `promoting` when no command holds the pipeline was cut off.
# A set being undone after a refused layer is `undoing` until its record is dropped: a kill in
# between leaves it for the next command to finish undoing, not to finish promoting.
PROMOTING, UNDOING, DONE = "promoting", "undoing", "done"


@dataclass(frozen=True, kw_only=True)
class PipelineRecord:
    """A pipeline promotion (its members: each layer's promotion, upstream first) or the
    rollback of one (its members: each layer's rollback, downstream first)."""

    id: str
    pipeline: str
    kind: str
    partitions: list[str]
    members: list[tuple[str, str]] = field(default_factory=list)  # (layer, promotion id)
    target: str | None = None
    state: str = DONE
    user: str | None = None
    host: str | None = None
    at: dt.datetime | None = None
    undone_by: str | None = None
    approved_by: str | None = None  # `pipeline approve`: who, and why (each member records it too)
    approval_reason: str | None = None

    @property
    def approval(self) -> Approval | None:
        """The approval the set's members carry (a cut-off set finishes with it)."""
        return Approval(self.approved_by, self.approval_reason or "") if self.approved_by else None

    def as_dict(self) -> dict[str, Any]:
        out = plain(self)
        out["members"] = [{"table": layer, "promotion": pid} for layer, pid in self.members]
        return out


def _record(r: Any) -> PipelineRecord:
    return from_row(
        PipelineRecord,
        r,
        partitions=json.loads(r["partitions"]),
        members=[(str(a), str(b)) for a, b in json.loads(r["members"])],
        at=aware(r["at"]),
    )


class PipelineTrail(Db):
    """Mixed into StateStore: pipeline promotions and their rollbacks."""

    def record_pipeline(self, rec: PipelineRecord) -> None:
        """Insert a pipeline promotion or rollback; a rollback marks its target undone, in one
        transaction."""
        with self._begin() as c:
            # JSON writes a (layer, promotion id) pair as the list `_record` reads back
            c.execute(pipeline_promotions.insert().values(stamped(rec, ("partitions", "members"), undone_by=None)))
            if rec.target is not None:
                c.execute(
                    update(pipeline_promotions).where(pipeline_promotions.c.id == rec.target).values(undone_by=rec.id)
                )

    def add_pipeline_member(self, record_id: str, layer: str, promotion_id: str) -> None:
        """A layer of a pipeline promotion has committed: name its promotion, in commit order."""
        with self._begin() as c:
            row = c.execute(select(pipeline_promotions.c.members).where(pipeline_promotions.c.id == record_id)).first()
            members = [*json.loads(row.members if row is not None else "[]"), [layer, promotion_id]]
            c.execute(
                update(pipeline_promotions)
                .where(pipeline_promotions.c.id == record_id)
                .values(members=json.dumps(members))
            )

    def set_pipeline_state(self, record_id: str, state: str) -> None:
        with self._begin() as c:
            c.execute(update(pipeline_promotions).where(pipeline_promotions.c.id == record_id).values(state=state))

    def drop_pipeline(self, record_id: str) -> None:
        """A pipeline promotion that was undone before it finished leaves no record (its layers'
        promotions and rollbacks stay in each layer's history)."""
        with self._begin() as c:
            c.execute(delete(pipeline_promotions).where(pipeline_promotions.c.id == record_id))

    def pipeline_records(self, pipeline: str) -> list[PipelineRecord]:
        q = select(*self._present(pipeline_promotions)).where(pipeline_promotions.c.pipeline == pipeline)
        return [_record(r) for r in self._rows(q.order_by(pipeline_promotions.c.at))]

    def pipeline_record(self, record_id: str) -> PipelineRecord | None:
        row = self._first(select(*self._present(pipeline_promotions)).where(pipeline_promotions.c.id == record_id))
        return _record(row) if row else None


__all__ = ["DONE", "PROMOTE", "PROMOTING", "ROLLBACK", "UNDOING", "PipelineRecord", "PipelineTrail"]
