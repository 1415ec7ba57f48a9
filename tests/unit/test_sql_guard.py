"""The SQL guard without Spark: a downstream query or a SQL layer is one read-only SELECT, and
reads only what it may. Every statement kind a hostile or careless query could be is tried."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shadow_backfill.config import load_config
from shadow_backfill.errors import ConfigError
from shadow_backfill.sql_guard import ReadOnlySelect, Refused, downstream_refusal, read_only_select, table_name

OTHER = "local.db.other"

REFUSED = [
    ("DROP TABLE local.db.features -- {table}", "is a DROP statement, not a SELECT"),
    ("INSERT INTO local.db.features SELECT * FROM {table}", "is an INSERT statement, not a SELECT"),
    ("INSERT OVERWRITE DIRECTORY '/tmp/x' SELECT * FROM {table}", "is an INSERT statement, not a SELECT"),
    ("FROM {table} INSERT INTO local.db.features SELECT *", "is an INSERT statement, not a SELECT"),
    ("WITH c AS (SELECT * FROM {table}) INSERT INTO z SELECT * FROM c", "is an INSERT statement, not a SELECT"),
    ("CREATE TABLE local.db.copy AS SELECT * FROM {table}", "is a CREATE statement, not a SELECT"),
    (
        "MERGE INTO local.db.features f USING {table} t ON f.id = t.id WHEN MATCHED THEN DELETE",
        "is a MERGE statement, not a SELECT",
    ),
    ("UPDATE local.db.features SET amount = 0 -- {table}", "is an UPDATE statement, not a SELECT"),
    ("DELETE FROM local.db.features -- {table}", "is a DELETE statement, not a SELECT"),
    ("CALL local.system.rollback_to_snapshot('db.features', 1) -- {table}", "is a CALL statement, not a SELECT"),
    ("SET spark.sql.ansi.enabled = false -- {table}", "is a SET statement, not a SELECT"),
    ("CACHE TABLE c AS SELECT * FROM {table}", "is a CACHE statement, not a SELECT"),
    ("TRUNCATE TABLE local.db.features -- {table}", "is a TRUNCATE statement, not a SELECT"),
    ("ALTER TABLE local.db.features ADD COLUMN x int -- {table}", "is an ALTER statement, not a SELECT"),
    ("SELECT * FROM {table}; DROP TABLE local.db.features", "holds 2 statements; one SELECT is allowed"),
    ("SELECT * FROM {table} INTO x", "does not parse as Spark SQL"),
    ("SELECT * INTO local.db.copy FROM {table}", "is a SELECT ... INTO, which writes a table"),
    # Spark nests bracketed comments: to it this is a DROP, and so it is to the guard
    ("/* /* */ SELECT * FROM {table} -- */ DROP TABLE local.db.features", "is a DROP statement, not a SELECT"),
    ("SELECT TRANSFORM(id) USING 'rm -rf /' AS (x) FROM {table}", "uses TRANSFORM ... USING, which runs a program"),
    ("SELECT reflect('java.lang.System', 'exit', 1) FROM {table}", "calls reflect, which runs a Java method"),
    ("SELECT * FROM {table}, read_files('/data/x')", "reads the table-valued function read_files(...), not a table"),
    ("SELECT * FROM {table}, IDENTIFIER('local.db.x')", "reads the table-valued function identifier(...)"),
    ("SELECT * FROM {table}, parquet.`/data/secret`", "reads parquet.`/data/secret`, which is not in its reads"),
    ("SELECT * FROM {table} JOIN local.db.features USING (id)", "reads local.db.features, which is not in its reads"),
    ("SELECT * FROM {table} WHERE id IN (SELECT id FROM db.dims)", "reads db.dims, which is not in its reads"),
    # reads names local.db.other: a shorter name resolves in the session's catalog and database
    ("SELECT * FROM {table} JOIN db.other USING (id)", "reads db.other, which is not in its reads"),
    ("SELECT * FROM {table} JOIN other USING (id)", "reads other, which is not in its reads"),
    ("SELECT * FROM {table} JOIN cat.db.other USING (id)", "reads cat.db.other, which is not in its reads"),
    # a CTE's own body cannot see its name (not RECURSIVE): the inner `dim` is the catalog's
    ("WITH dim AS (SELECT * FROM dim) SELECT * FROM {table} JOIN dim USING (id)", "reads dim, which is not"),
    # nor can an earlier CTE see a later one
    ("WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS id) SELECT * FROM {table} JOIN a USING (id)", "reads b, "),
    # a WITH inside a subquery defines its names there only: the outer `secret` is a table
    (
        "SELECT * FROM {table} JOIN secret JOIN (WITH secret AS (SELECT 1) SELECT * FROM secret) x",
        "reads secret, which is not in its reads",
    ),
    # the names the placeholders stand for at check time are not the placeholders when typed
    ("SELECT * FROM sb_table_under_test", "reads sb_table_under_test, which is not in its reads"),
    ("SELECT * FROM {table} JOIN sb_partition_value", "reads sb_partition_value, which is not in its reads"),
    ("SELECT 1 -- {table}", "never reads {table} (the table under test)"),
    ("-- {table}", "holds no statement"),
    ("SELEC * FROM {table}", "does not parse as Spark SQL: "),
    ("{table}", "is not a SELECT statement"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED, ids=[t[:40] for t, _ in REFUSED])
def test_anything_but_one_select_of_the_allowed_tables_is_refused(text: str, reason: str) -> None:
    found = downstream_refusal(text, [OTHER])
    assert found is not None and found.startswith(reason), found


ALLOWED = [
    "SELECT cat, count(*) AS n FROM {table} WHERE ds = :partition GROUP BY cat;",
    "WITH c AS (SELECT * FROM {table} WHERE ds = :partition) SELECT * FROM c JOIN local.db.other o USING (id)",
    "SELECT * FROM {table} WHERE id IN (SELECT id FROM `Local`.`DB`.Other)",  # quoting and case
    # a CTE name is seen by later CTEs, the main query, and subqueries within it
    "WITH a AS (SELECT 1 AS id), b AS (SELECT * FROM a) SELECT * FROM {table} JOIN b USING (id)",
    "WITH a AS (SELECT 1 AS id) SELECT * FROM {table} WHERE id IN (SELECT id FROM (SELECT * FROM a) s)",
    "WITH a AS (SELECT 1 AS id) SELECT * FROM {table} JOIN (WITH b AS (SELECT * FROM a) SELECT * FROM b) x",
    "WITH A AS (SELECT 1 AS id) SELECT * FROM {table} JOIN `a` USING (id)",  # case and quotes
    "WITH a AS (SELECT 1 AS id) SELECT id FROM {table} UNION ALL SELECT id FROM a",
    "SELECT id FROM {table} UNION ALL SELECT id FROM local.db.other",
    "(SELECT id FROM {table})",
    "SELECT * FROM {table} LATERAL VIEW explode(array(1, 2)) e AS x",
    "SELECT * FROM {table}, range(3) -- DROP TABLE local.db.features",
    "SELECT 'DROP TABLE x; INSERT INTO y' AS s FROM {table}",
]


@pytest.mark.parametrize("text", ALLOWED)
def test_a_read_only_select_of_allowed_tables_passes(text: str) -> None:
    assert downstream_refusal(text, [OTHER]) is None


def test_a_table_not_in_reads_is_named_and_reads_allows_it() -> None:
    text = "SELECT t.* FROM {table} t JOIN local.db.dims d ON t.id = d.id"
    assert downstream_refusal(text, []) == "reads local.db.dims, which is not in its reads"
    assert downstream_refusal(text, ["local.db.dims"]) is None
    assert downstream_refusal(text, ["LOCAL.DB.DIMS"]) is None
    assert downstream_refusal(text, ["`Local`.db.`dims`"]) is None
    assert downstream_refusal(text, ["db.dims"]) == "reads local.db.dims, which is not in its reads"
    assert downstream_refusal(text, ["dims"]) == "reads local.db.dims, which is not in its reads"
    assert downstream_refusal(text, ["other.db.dims"]) == "reads local.db.dims, which is not in its reads"


def test_cte_names_are_not_tables_but_qualified_names_are() -> None:
    checked = read_only_select("WITH dims AS (SELECT 1 AS id) SELECT * FROM dims JOIN db.dims USING (id)")
    assert isinstance(checked, ReadOnlySelect)
    assert [t.parts for t in checked.tables] == [("db", "dims")]
    checked = read_only_select("WITH dims AS (SELECT * FROM dims) SELECT * FROM dims")
    assert isinstance(checked, ReadOnlySelect)
    assert [t.parts for t in checked.tables] == [("dims",)]


def test_a_transform_with_its_parameter_parses() -> None:
    checked = read_only_select("SELECT * FROM staging s JOIN local.db.dims d USING (id) WHERE ds = :partition")
    assert isinstance(checked, ReadOnlySelect)
    assert [str(t) for t in checked.tables] == ["staging", "local.db.dims"]
    broken = read_only_select("SELECT * FROM staging WHERE ds = (:partition")
    assert isinstance(broken, Refused) and broken.reason.startswith("does not parse as Spark SQL: ")
    assert "\n" not in broken.reason


def test_table_names_as_configs_spell_them() -> None:
    named = table_name("`Local`.db.T")
    assert named is not None and named.parts == ("local", "db", "t")
    path = table_name("delta.`/data/t`")
    assert path is not None and path.parts == ("delta", "/data/t")
    assert table_name("a b") is None and table_name("x; DROP TABLE y") is None and table_name("") is None


def test_the_config_refuses_a_writing_query_naming_it(tmp_path: Path) -> None:
    """At load, before any engine: one line naming the config, the field and the query."""
    (tmp_path / "q1.sql").write_text("DROP TABLE local.db.features -- {table}\n")
    (tmp_path / "q2.sql").write_text("SELECT * FROM {table} JOIN local.db.dims USING (id)\n")
    data = {
        "live_table": "local.db.f",
        "format": "iceberg",
        "partition": {"column": "ds"},
        "transform": {"function": "m:f"},
    }
    cfg = tmp_path / "c.yaml"
    for queries, message in (
        (["q1.sql"], "downstream query 'q1.sql' is a DROP statement, not a SELECT"),
        (["q2.sql"], "downstream query 'q2.sql' reads local.db.dims, which is not in its reads"),
        (
            [{"sql": "q2.sql", "reads": ["db.dims"]}],
            "downstream query 'q2.sql' reads local.db.dims, which is not in its reads",
        ),
        ([{"sql": "q2.sql", "reads": ["not a name"]}], "'not a name' is not a table name"),
    ):
        cfg.write_text(yaml.safe_dump({**data, "validation": {"downstream_queries": queries}}))
        with pytest.raises(ConfigError) as caught:
            load_config(cfg)
        assert str(caught.value).startswith(f"{cfg}: field 'validation.downstream_queries.0")
        assert message in str(caught.value) and "\n" not in str(caught.value)
    cfg.write_text(
        yaml.safe_dump({**data, "validation": {"downstream_queries": [{"sql": "q2.sql", "reads": ["local.db.dims"]}]}})
    )
    assert load_config(cfg).validation.downstream_queries[0].reads == ["local.db.dims"]
