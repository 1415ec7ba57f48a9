"""Safety on Iceberg with real Spark: another writer's commit survives a promotion; a shadow
reached through a second catalog over the same warehouse is refused."""

from __future__ import annotations

import safety_cases as cases
from conftest import MakeBackfill


def test_concurrent_writer_commit_survives(make_backfill: MakeBackfill) -> None:
    cases.concurrent_writer_commit_survives(make_backfill)


def test_shadow_aliasing_live_through_another_catalog_is_refused(make_backfill: MakeBackfill) -> None:
    bf = make_backfill()
    spark = bf.spark
    for k, v in {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "hadoop",
        ".warehouse": spark.conf.get("spark.sql.catalog.local.warehouse"),
    }.items():
        spark.conf.set(f"spark.sql.catalog.other{k}", v)
    alias = "other." + bf.live_table.split(".", 1)[1]
    cases.shadow_aliasing_live_is_refused(bf, make_backfill, alias)
