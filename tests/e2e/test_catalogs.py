"""Tables where users keep them: in a catalog they already have, reached by name.

Each catalog setup below is a real catalog: Iceberg tables in Iceberg's HiveCatalog (`hms`) and
Delta tables by name in the session catalog through delta-spark's DeltaCatalog, both over the
test session's Hive metastore (Spark's embedded Hive 2.3 over Derby, `support.metastore_conf`);
and Iceberg tables in a REST catalog (`rest`: Iceberg's own REST catalog server from its test
fixtures, on loopback, `conftest.rest_catalog` fixture). The whole loop runs on each: seed by name,
recompute into a shadow created by name in the same catalog and namespace, validate, promote,
roll back, and the catalog itself (plain `spark.table(name)`) sees every commit. The change
adds a column (declared), so each catalog also shows the schema change a promotion makes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from support import DRIFT, QUIET, TEST_CONF, factory, metastore_conf

from shadow_backfill import Backfill
from shadow_backfill.config import parse_config
from shadow_backfill.formats import format_class
from shadow_backfill.session import session_settings

pytestmark = pytest.mark.classic

# setup -> (format, live table name, the statement that makes its namespace, as its owner would)
# The embedded Hive 2.3 metastore has no lock tables, so Iceberg commits there without a lock;
# Hive 2.3 cannot check the expected metadata location either, so two concurrent commits would
# overwrite each other's pointer (a real metastore locks). Recompute chunks run one at a time
# there: the fixture's limit, not the tool's.
ONE_WRITER = {"iceberg-hms"}
CATALOGS = {
    "iceberg-hms": ("iceberg", "hms.{ns}.events", "CREATE NAMESPACE IF NOT EXISTS hms.{ns}"),
    "iceberg-rest": ("iceberg", "rest.{ns}.events", "CREATE NAMESPACE IF NOT EXISTS rest.{ns}"),
    "delta-by-name": ("delta", "{ns}.events", "CREATE DATABASE IF NOT EXISTS {ns}"),
    "parquet-by-name": ("parquet", "{ns}.events", "CREATE DATABASE IF NOT EXISTS {ns}"),
}


@pytest.fixture(params=list(CATALOGS))
def named(request: pytest.FixtureRequest, spark: Any, tmp_path: Path, warehouse: Path) -> Backfill:
    """A seeded live table reached by name, recomputed with a change that adds a column (declared)
    and fails on DRIFT."""
    fmt, live, ddl = CATALOGS[request.param]
    conf = {**TEST_CONF, **metastore_conf(warehouse)}
    if request.param == "iceberg-rest":
        conf.update(request.getfixturevalue("rest_catalog"))
    ns = "c" + uuid.uuid4().hex[:10]
    spark.sql(ddl.format(ns=ns))
    make = factory(fmt, tmp_path, warehouse, spark)
    return make(
        live_table=live.format(ns=ns),
        spark={"conf": conf},
        transform={"function": "sb_test_transforms:with_plane_year"},
        validation={**QUIET, "expected_schema_changes": {"added": ["plane_year"]}},
        **({"run": {"max_parallel": 1}} if request.param in ONE_WRITER else {}),
    )


def _same(a: DataFrame, b: DataFrame) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _by_name(bf: Backfill, table: str, keys: list[str]) -> DataFrame:
    """The table as the catalog serves it to any Spark job, by name."""
    bf.spark.catalog.refreshTable(table)
    values = [bf.scheme.value(k) for k in keys]
    return bf.spark.table(table).filter(F.col(bf.scheme.column).isin(values))


def test_backfill_promote_and_roll_back_a_table_in_a_catalog(named: Backfill) -> None:
    bf = named
    keys = bf.scheme.expand("2024-01-01", "2024-01-10")
    before = bf.spark.createDataFrame(_by_name(bf, bf.live_table, keys).collect(), bf.read_live().schema)
    run = bf.run(keys[0], keys[-1])
    assert run.ok, run.failed
    live_ns = bf.live_table.rsplit(".", 1)[0]
    assert bf.shadow_table == f"{bf.live_table}_v2" and bf.shadow_table.rsplit(".", 1)[0] == live_ns
    assert bf.spark.catalog.tableExists(bf.shadow_table), "the shadow is created by name, beside live"
    _same(_by_name(bf, bf.shadow_table, keys), bf.read_shadow(keys))

    verdicts = {v.partition: v.verdict for v in bf.validate().verdicts}
    assert verdicts[DRIFT] == "fail" and sum(s == "pass" for s in verdicts.values()) == 9

    _, rec = bf.promote()
    assert rec is not None and DRIFT not in rec.partitions and len(rec.partitions) == 9
    # the catalog serves the new column: the promoted values, null where nothing was promoted
    _same(_by_name(bf, bf.live_table, rec.partitions), bf.read_shadow(rec.partitions))
    before = before.withColumn("plane_year", F.lit(None).cast("int"))
    _same(_by_name(bf, bf.live_table, [DRIFT]), before.filter(F.col(bf.scheme.column) == bf.scheme.value(DRIFT)))

    bf.rollback(rec.id)
    _same(_by_name(bf, bf.live_table, keys), before)


def test_a_catalog_the_user_configured_is_used_as_it_is(tmp_path: Path) -> None:
    """The embedded Hadoop catalog is added only under a name the user has not configured."""
    cfg = {"live_table": "local.db.events", "format": "iceberg", "partition": {"column": "ds"}}
    cfg["transform"] = {"function": "m:f"}
    own = format_class("iceberg").session_conf(session_settings(parse_config(cfg, base_dir=tmp_path)))
    assert own["spark.sql.catalog.local.type"] == "hadoop"
    users = {"spark.sql.catalog.local": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.local.type": "rest"}
    theirs_config = parse_config({**cfg, "spark": {"conf": users}}, base_dir=tmp_path)
    theirs = format_class("iceberg").session_conf(session_settings(theirs_config))
    assert not any(k.startswith("spark.sql.catalog.local") for k in theirs)
