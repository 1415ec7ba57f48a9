"""A state store made by an earlier version of the tool keeps working, on SQLite and on a real
PostgreSQL server: the columns this version added (`promotions.schema_change`) are added when
the store is opened, and what was recorded before reads back with them empty."""

from __future__ import annotations

import uuid

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
