"""Table locations in one spelling: the identity check compares them (live and shadow must not
be one table, nor one inside the other)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadow_backfill.formats.locations import inside, normalize_location, table_spelling


@pytest.mark.parametrize(
    ("spellings", "one"),
    [
        (
            ["s3://lake/wh/events", "s3a://lake/wh/events/", "s3n://lake//wh/./events", "S3A://lake/wh/x/../events"],
            "s3://lake/wh/events",
        ),
        (["gs://lake/wh/events/", "gs://lake/wh//events"], "gs://lake/wh/events"),
        (["abfss://c@acct.dfs.core.windows.net/wh/events/"], "abfss://c@acct.dfs.core.windows.net/wh/events"),
        (["s3a://lake", "s3://lake/"], "s3://lake"),
    ],
)
def test_one_place_has_one_spelling(spellings: list[str], one: str) -> None:
    assert {normalize_location(s) for s in spellings} == {one}


def test_local_paths_resolve_links_and_dots(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real = str((tmp_path / "real").resolve())
    assert normalize_location(f"file:{tmp_path}/link") == real
    assert normalize_location(f"{tmp_path}/real/../link/") == real


def test_inside_is_by_path_segment() -> None:
    assert inside("s3://lake/wh/events/v2", "s3://lake/wh/events")
    assert inside("s3://lake/wh/events", "s3://lake/wh/events")
    assert not inside("s3://lake/wh/events_v2", "s3://lake/wh/events")
    assert not inside("s3://other/wh/events", "s3://lake/wh")


def test_a_config_table_in_one_spelling(tmp_path: Path) -> None:
    """Relative paths are read from their config's folder, as the formats read them: the same
    relative path in two folders names two tables, and `../b/t` from `a` names `b/t`."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert table_spelling("data/t", a) != table_spelling("data/t", b)
    assert table_spelling("../b/data/t", a) == table_spelling("data/t", b) == table_spelling(f"{b}/data/t/", a)
    assert table_spelling("s3a://lake/wh/t/", a) == table_spelling("s3://lake/wh//t", b)
    assert table_spelling("SPARK_CATALOG.db.T", a) == table_spelling("db.t", b) != table_spelling("local.db.t", a)
    assert table_spelling("`local`.db.`Staging`", a) == table_spelling("local.db.staging", b)
    assert table_spelling(f"file:{b}/data/t", a) == table_spelling("data/t", b)
