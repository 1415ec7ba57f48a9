"""A pipeline's SQL layers are read when the pipeline loads, before any layer runs: each must be
one read-only SELECT and read no layer its depends_on leaves out (exit 2, naming the layer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shadow_backfill.errors import ConfigError
from shadow_backfill.pipeline.spec import load_pipeline


def _pipeline(folder: Path, sql: dict[str, str], depends_on: dict[str, list[str]]) -> Path:
    """raw (a function), then a SQL layer per entry of `sql`, each with its own file."""
    tables: dict[str, Any] = {}
    for key in ("raw", *sql):
        transform = {"function": "m:f"} if key == "raw" else {"sql": f"{key}.sql"}
        if key != "raw":
            (folder / f"{key}.sql").write_text(sql[key])
        data = {
            "live_table": f"local.db.{key}",
            "format": "iceberg",
            "partition": {"column": "ds"},
            "transform": transform,
            "spark": {"warehouse": str(folder / "wh")},
        }
        (folder / f"{key}.yaml").write_text(yaml.safe_dump(data))
        tables[key] = {"config": f"{key}.yaml", "depends_on": depends_on.get(key, [])}
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump({"tables": tables}))
    return path


def test_sql_layers_reading_what_they_declare_load(tmp_path: Path) -> None:
    sql = {
        "staging": "SELECT r.* FROM raw r JOIN local.db.dims d USING (id) WHERE r.ds = :partition",
        "features": "WITH s AS (SELECT * FROM staging WHERE ds = :partition) SELECT * FROM s",
    }
    loaded = load_pipeline(_pipeline(tmp_path, sql, {"staging": ["raw"], "features": ["staging"]}))
    assert loaded.order == ["raw", "staging", "features"]


@pytest.mark.parametrize(
    ("features", "message"),
    [
        (
            "SELECT * FROM raw WHERE ds = :partition",
            "pipeline: layer 'features' reads raw, the layer 'raw', which its depends_on does not list "
            "(transform.sql 'features.sql')",
        ),
        (  # by its live table's name, otherwise spelt
            "SELECT * FROM staging JOIN `LOCAL`.db.Raw USING (id) WHERE ds = :partition",
            "pipeline: layer 'features' reads LOCAL.db.Raw, the layer 'raw'",
        ),
        (  # by its shadow's name
            "SELECT * FROM staging s WHERE id IN (SELECT id FROM db.raw_v2) AND ds = :partition",
            "pipeline: layer 'features' reads db.raw_v2, the layer 'raw'",
        ),
        (  # a CTE's body reads the layer its name shadows only in the main query
            "WITH raw AS (SELECT * FROM raw WHERE ds = :partition) SELECT * FROM staging JOIN raw USING (id)",
            "pipeline: layer 'features' reads raw, the layer 'raw'",
        ),
        (  # a WITH in a subquery hides nothing outside it
            "SELECT * FROM staging JOIN raw USING (id) JOIN (WITH raw AS (SELECT 1 AS id) SELECT * FROM raw) x "
            "USING (id) WHERE ds = :partition",
            "pipeline: layer 'features' reads raw, the layer 'raw'",
        ),
        (  # a shorter name is still held to the layer (the session may resolve it there)
            "SELECT * FROM staging JOIN raw_v2 USING (id) WHERE ds = :partition",
            "pipeline: layer 'features' reads raw_v2, the layer 'raw'",
        ),
        (
            "SELECT * FROM staging WHERE ds = (:partition",
            "pipeline: layer 'features': transform.sql 'features.sql' does not parse as Spark SQL: ",
        ),
        (
            "INSERT INTO local.db.raw SELECT * FROM staging WHERE ds = :partition",
            "pipeline: layer 'features': transform.sql 'features.sql' is an INSERT statement, not a SELECT",
        ),
        (
            "SELECT * FROM staging WHERE ds = :partition; DROP TABLE local.db.raw",
            "pipeline: layer 'features': transform.sql 'features.sql' holds 2 statements",
        ),
    ],
)
def test_a_sql_layer_that_parses_not_or_reads_an_undeclared_layer_is_refused(
    tmp_path: Path, features: str, message: str
) -> None:
    sql = {"staging": "SELECT * FROM raw WHERE ds = :partition", "features": features}
    with pytest.raises(ConfigError) as caught:
        load_pipeline(_pipeline(tmp_path, sql, {"staging": ["raw"], "features": ["staging"]}))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_missing_sql_file_is_found_at_load(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, {"staging": "SELECT * FROM raw WHERE ds = :partition"}, {"staging": ["raw"]})
    (tmp_path / "staging.sql").unlink()
    with pytest.raises(ConfigError, match=r"^pipeline: layer 'staging': transform.sql '.*staging.sql' does not exist$"):
        load_pipeline(path)
