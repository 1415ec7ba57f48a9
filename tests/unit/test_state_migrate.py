"""A state store made by an earlier version of the tool keeps working, on SQLite and on a real
PostgreSQL server: the columns this version added (`promotions.schema_change`) are added when
the store is opened, and what was recorded before reads back with them empty."""

from __future__ import annotations

import uuid
from pathlib import Path

from sqlalchemy import inspect, text

from shadow_backfill.state import PromotionRecord, StateStore
from shadow_backfill.state.migrate import add_new_columns


def _promotion(pid: str, live: str, schema_change: list[str] | None = None) -> PromotionRecord:
    return PromotionRecord.promotion(
        pid,
        live_table=live,
        shadow_table=live + "_v2",
        partitions=["2024-01-01"],
        live_version_before=1,
        shadow_versions={"2024-01-01": 3},
        validation_ids=["v1"],
        config_hash="h",
        code_fingerprint="f",
        schema_change=schema_change,
    )


def test_an_older_store_gains_the_new_column_and_keeps_its_rows(state_url: str) -> None:
    live = f"lake.events_{uuid.uuid4().hex[:8]}"
    store = StateStore(state_url)
    store.record_promotion(_promotion("promote-old-" + live, live))
    with store.engine.begin() as c:  # the store as the version before `schema_change` made it
        c.execute(text("ALTER TABLE promotions DROP COLUMN schema_change"))
    assert "schema_change" not in {c["name"] for c in inspect(store.engine).get_columns("promotions")}
    store.close()

    store = StateStore(state_url)
    store.record_promotion(_promotion("promote-new-" + live, live, ["+plane_year", "-cat"]))
    recorded = {r.id.split("-")[1]: r.schema_change for r in store.promotions(live)}
    assert recorded == {"old": [], "new": ["+plane_year", "-cat"]}
    assert add_new_columns(store.engine) == [], "a store of this version needs nothing added"
    store.close()


def test_a_dry_run_reads_an_older_store_without_the_newest_columns(tmp_path: Path) -> None:
    """A dry run opens the store as it is (`reading`: nothing altered), so a store made before
    `approved_by` and `approval_reason` must still read, the missing columns as null."""
    from shadow_backfill.state import reading

    url = f"sqlite:///{tmp_path / 'state.db'}"
    live = "lake.events"
    store = StateStore(url)
    store.record_promotion(_promotion("promote-old", live))
    with store.engine.begin() as c:  # the store as the version before approvals made it
        for column in ("approved_by", "approval_reason"):
            c.execute(text(f"ALTER TABLE promotions DROP COLUMN {column}"))
    store.close()
    dry = reading(url)
    [old] = dry.promotions(live)
    assert (old.id, old.approved_by, old.approval_reason) == ("promote-old", None, None)
    assert dry.promotion("promote-old") == old
    assert "approved_by" not in {c["name"] for c in inspect(dry.engine).get_columns("promotions")}, "nothing altered"
    dry.close()
