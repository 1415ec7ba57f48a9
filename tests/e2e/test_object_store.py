"""What only the bucket can show, beyond the `store` tests every S3 backend runs: a Parquet table
by name whose location is on the bucket is refused in one line, before anything is written."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from support import START, factory
from support.object_store import BUCKET
from typer.testing import CliRunner

from shadow_backfill.cli import app

pytestmark = [pytest.mark.s3, pytest.mark.store]


def test_a_parquet_table_by_name_on_the_bucket_is_refused(s3_spark: Any, tmp_path: Path, warehouse: Path) -> None:
    ns = "p" + uuid.uuid4().hex[:10]
    location = f"s3a://{BUCKET}/{ns}/events"
    s3_spark.sql(f"CREATE DATABASE {ns}")
    s3_spark.sql(
        f"CREATE TABLE {ns}.events (id BIGINT, ds DATE) USING parquet PARTITIONED BY (ds) LOCATION '{location}'"
    )
    bf = factory("parquet-s3", tmp_path, warehouse, s3_spark)(seed_live=False, live_table=f"{ns}.events")
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["run", cfg, "--start", START, "--end", START])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: Parquet table '{ns}.events' lies at {location}: Parquet tables on object storage are not "
        "supported (their switch needs a file system's atomic rename and locks); keep the table on a local "
        "or mounted file system, or use Iceberg or Delta"
    ]
    assert bf.status_rows() == []
    assert s3_spark.table(f"{ns}.events").count() == 0, "nothing written"
