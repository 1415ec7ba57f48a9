"""The audit trail in the store: every promotion and rollback, and which undid which."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from sqlalchemy import select, update

from shadow_backfill.records import Approval, plain
from shadow_backfill.state.db import Db, aware, from_row, stamped, utcnow
from shadow_backfill.state.schema import promotions

if TYPE_CHECKING:
    from typing import Unpack

PROMOTE, ROLLBACK = "promote", "rollback"


class PromotionStart(TypedDict):
    """What a promotion knows before its commit: the record's fields it fills, each required, so
    a caller cannot forget the binding to the live version or the validations it promotes."""

    live_table: str
    shadow_table: str
    partitions: list[str]
    live_version_before: int | None
    shadow_versions: dict[str, int]
    validation_ids: list[str]
    config_hash: str | None
    code_fingerprint: str | None


class RollbackStart(TypedDict):
    """What a rollback knows before its commit: what it undoes (`target`, a promotion, or the
    whole table back to `to_version`) and the live version it read."""

    live_table: str
    partitions: list[str]
    live_version_before: int | None
    target: str | None
    to_version: int | None
    config_hash: str | None


@dataclass(frozen=True, kw_only=True)
class PromotionRecord:
    """One promotion or rollback. The defaults are what a kind leaves unset (a rollback has no
    shadow table); `promotion` and `rollback` build the two kinds, so callers name only what
    they know."""

    id: str
    kind: str
    live_table: str
    shadow_table: str | None = None
    partitions: list[str]
    live_version_before: int | None = None
    live_version_after: int | None = None
    shadow_versions: dict[str, int] = field(default_factory=dict)
    validation_ids: list[str] = field(default_factory=list)
    target: str | None = None
    to_version: int | None = None
    config_hash: str | None = None
    code_fingerprint: str | None = None
    user: str | None = None
    host: str | None = None
    at: dt.datetime | None = None
    undone_by: str | None = None
    schema_change: list[str] = field(default_factory=list)  # "+col" added to live, "-col" kept null
    step: str | None = None  # a canary promotion's step: "canary" or "rest"
    steps_of: str | None = None  # the canary's id, on both steps
    approved_by: str | None = None  # `approve`: who let these held partitions into live
    approval_reason: str | None = None  # ... and why, in their words

    @classmethod
    def promotion(
        cls,
        id: str,
        *,
        schema_change: list[str] | None = None,
        approval: Approval | None = None,
        **known: Unpack[PromotionStart],
    ) -> PromotionRecord:
        """Validated shadow partitions about to replace live ones, bound to the live version read;
        `schema_change`: the declared schema changes it applies to live (`+col`, `-col`);
        `approval`: a person's approval of held partitions (`approve`)."""
        return cls(
            id=id,
            kind=PROMOTE,
            at=utcnow(),
            schema_change=list(schema_change or []),
            approved_by=approval.by if approval else None,
            approval_reason=approval.reason if approval else None,
            **known,
        )

    @classmethod
    def rollback(cls, id: str, **known: Unpack[RollbackStart]) -> PromotionRecord:
        """Live partitions about to be restored: undoing `target`, or the whole table to `to_version`."""
        return cls(id=id, kind=ROLLBACK, at=utcnow(), **known)

    def as_dict(self) -> dict[str, Any]:
        return plain(self)


_JSON_FIELDS = ("partitions", "shadow_versions", "validation_ids", "schema_change")


def _promotion(r: Any) -> PromotionRecord:
    return from_row(
        PromotionRecord,
        r,
        partitions=json.loads(r["partitions"]),
        shadow_versions=json.loads(r["shadow_versions"] or "{}"),
        validation_ids=json.loads(r["validation_ids"] or "[]"),
        at=aware(r["at"]),
        schema_change=json.loads(r["schema_change"] or "[]"),
    )


class AuditTrail(Db):
    """Mixed into StateStore: every promotion and rollback, and which undid which."""

    def record_promotion(self, rec: PromotionRecord) -> None:
        """Insert a promotion/rollback and, for a rollback, mark its target undone: one transaction."""
        with self._begin() as c:
            c.execute(promotions.insert().values(stamped(rec, _JSON_FIELDS, undone_by=None)))
            if rec.target is not None:
                c.execute(update(promotions).where(promotions.c.id == rec.target).values(undone_by=rec.id))
                # Undoing a rollback brings its promotion back: that promotion is live again.
                inner = c.execute(select(promotions.c.kind, promotions.c.target).where(promotions.c.id == rec.target))
                row = inner.first()
                if row is not None and row.kind == ROLLBACK and row.target is not None:
                    c.execute(update(promotions).where(promotions.c.id == row.target).values(undone_by=None))

    def mark_step(self, promotion_id: str, step: str, steps_of: str) -> None:
        """Label a promotion as a step of a canary promotion (after its commit: the canary's id
        is known only then)."""
        with self._begin() as c:
            c.execute(update(promotions).where(promotions.c.id == promotion_id).values(step=step, steps_of=steps_of))

    def carried_columns(self, live_table: str) -> set[str]:
        """Columns a promotion into `live_table` added (`+col` in its schema change): live has
        them because of the tool, null where nothing was promoted."""
        # Only the column it needs: a store opened without migrating (a dry run) may predate others.
        with self._connect() as c:
            rows = c.execute(select(promotions.c.schema_change).where(promotions.c.live_table == live_table)).all()
        return {col[1:] for (change,) in rows for col in json.loads(change or "[]") if col.startswith("+")}

    def promotions(self, live_table: str) -> list[PromotionRecord]:
        q = select(*self._present(promotions)).where(promotions.c.live_table == live_table).order_by(promotions.c.at)
        return [_promotion(r) for r in self._rows(q)]

    def promotion(self, promotion_id: str) -> PromotionRecord | None:
        row = self._first(select(*self._present(promotions)).where(promotions.c.id == promotion_id))
        return _promotion(row) if row else None
