"""Downstream read tests, judged without Spark: what a consumer's query returned on the shadow
and on live becomes one check per query and partition."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from shadow_backfill.config import ValidationSpec, load_config
from shadow_backfill.errors import ConfigError
from shadow_backfill.sql_guard import bind
from shadow_backfill.validate.downstream import (
    MAX_COMPARED_ROWS,
    LoadedQuery,
    QueryRun,
    differences,
    judge_on_live,
    judge_query,
    load_queries,
)

COLS = (("cat", "string"), ("n", "bigint"), ("total", "double"))
LIVE = QueryRun(columns=COLS, has_rows=True, rows=(("a", 2, 10.0), ("b", 3, 7.5)))


def run(*rows: tuple[Any, ...], columns: tuple[tuple[str, str], ...] = COLS) -> QueryRun:
    return QueryRun(columns=columns, has_rows=bool(rows), rows=tuple(rows))


def judged(
    shadow: QueryRun, live: QueryRun | None = LIVE, compare: bool = True, keys: list[str] | None = None, **spec: Any
) -> tuple[str, str]:
    check = judge_query(ValidationSpec(**spec), LoadedQuery("q.sql", "", compare, keys), shadow, live)
    assert check.name == "downstream_query" and check.column == "q.sql"
    return check.status.value, check.message


def test_the_query_must_run_return_rows_and_keep_lives_columns() -> None:
    assert judged(QueryRun(error="[UNRESOLVED_COLUMN] amount")) == (
        "fail",
        "q.sql: fails on the shadow: [UNRESOLVED_COLUMN] amount",
    )
    assert judged(run()) == ("fail", "q.sql: returns no rows on the shadow")
    renamed = run(("a", 2, 10.0), columns=(("cat", "string"), ("n", "bigint"), ("sum", "double")))
    status, message = judged(renamed)
    assert status == "fail" and "gives columns cat string, n bigint, sum double on the shadow" in message
    retyped = run(("a", 2, 10.0), columns=(("cat", "string"), ("n", "int"), ("total", "double")))
    assert judged(retyped)[0] == "fail"
    assert judged(run(("a", 2, 10.0)), compare=False) == ("pass", "q.sql: runs on the shadow with live's columns")


def test_live_failing_or_missing_is_not_the_shadows_fault() -> None:
    assert judged(run(("a", 1, 1.0)), QueryRun(error="boom"))[0] == "warn"
    assert judged(run(("a", 1, 1.0)), None)[0] == "pass"


def test_compare_holds_the_result_to_live_within_the_tolerance() -> None:
    noise = run(("b", 3, 7.5 + 1e-12), ("a", 2, 10.0))
    assert judged(noise) == ("pass", "q.sql: gives live's result within the tolerance")
    moved = run(("a", 2, 12.0), ("b", 3, 7.5))
    assert judged(moved) == (
        "fail",
        "q.sql: differs from live: total on row ['a']: shadow 12.0, live 10.0 (1 difference(s))",
    )
    assert judged(moved, unexpected_changes="warn")[0] == "warn"
    assert judged(moved, unexpected_changes="ignore") == (
        "pass",
        "q.sql: differs, ignored (unexpected_changes: ignore): total on row ['a']: shadow 12.0, live 10.0 "
        "(1 difference(s))",
    )
    lost = run(("a", 2, 10.0))
    assert judged(lost)[1] == "q.sql: differs from live: row ['b'] only on live (1 difference(s))"


def test_a_declared_change_is_held_to_its_bounds() -> None:
    moved = run(("a", 2, 12.0), ("b", 3, 7.5))  # total +20% on 'a'
    within = {"expected_changes": {"total": {"mean_change_pct": {"warn": 25, "fail": 50}}}}
    status, message = judged(moved, **within)
    assert status == "pass" and message.startswith("q.sql: expected change: total on row ['a']")
    beyond = {"expected_changes": {"total": {"mean_change_pct": {"warn": 5, "fail": 10}}}}
    assert judged(moved, **beyond)[0] == "fail"
    absolute = {"expected_changes": {"total": {"mean_change": {"warn": 1, "fail": None}}}}
    assert judged(moved, **absolute)[0] == "warn"


def test_a_declared_column_turning_null_or_nan_fails() -> None:
    declared = {"expected_changes": {"total": {"mean_change_pct": {"warn": 25, "fail": 50}}}}
    assert judged(run(("a", 2, None), ("b", 3, 7.5)), **declared)[0] == "fail"
    assert judged(run(("a", 2, math.nan), ("b", 3, 7.5)), **declared)[0] == "fail"


def test_declared_schema_changes_may_change_a_querys_columns() -> None:
    added = run(("a", 2, 10.0, 1), columns=(*COLS, ("score", "int")))
    assert judged(added)[0] == "fail"
    status, message = judged(added, expected_schema_changes={"added": ["score"]})
    assert status == "pass" and "changed as declared" in message
    widened = run(("a", 2, 10.0), columns=(("cat", "string"), ("n", "double"), ("total", "double")))
    assert judged(widened, expected_schema_changes={"retyped": {"n": "double"}})[0] == "pass"


def test_integer_group_keys_can_be_named() -> None:
    cols = (("hour", "int"), ("n", "bigint"))
    shadow, live = ((1, 5), (3, 7)), ((1, 5), (2, 6), (3, 7))
    by_default = differences(cols, shadow, live)
    assert len(by_default) == 3  # paired by position once hour 2 is missing: hour 3 vs 2, and so on
    named = differences(cols, shadow, live, keys=["hour"])
    assert [(d.column, d.row) for d in named] == [(None, (2,))]


def test_compare_refuses_row_level_results() -> None:
    big = QueryRun(columns=COLS, has_rows=True, rows=(), truncated=True)
    status, message = judged(big)
    assert status == "fail" and f"more than {MAX_COMPARED_ROWS} rows" in message


def test_rows_match_on_their_keys_even_when_keys_repeat() -> None:
    cols = (("cat", "string"), ("v", "double"))
    assert differences(cols, (("a", 1.0), ("a", 2.0)), (("a", 2.0), ("a", 1.0))) == []
    arrays = (("tags", "array<string>"), ("v", "double"))
    assert differences(arrays, ((["x"], 1.0),), ((["x"], 1.0),)) == []
    assert differences(cols, (("a", math.nan),), (("a", math.nan),)) == []
    assert differences(cols, (("a", None),), (("a", None),)) == []
    assert len(differences(cols, (("a", None),), (("a", 1.0),))) == 1
    no_keys = (("n", "bigint"),)
    assert differences(no_keys, ((5,),), ((4,),))[0].column == "n"


def test_the_canary_check_on_live() -> None:
    assert judge_on_live("q.sql", "2024-01-01", run(("a", 1, 1.0))).status.value == "pass"
    failed = judge_on_live("q.sql", "2024-01-01", QueryRun(error="boom"))
    assert failed.message == "q.sql: fails on live partition 2024-01-01 after promotion: boom"
    assert judge_on_live("q.sql", "2024-01-01", run()).status.value == "fail"


def test_binding_never_pastes_a_value() -> None:
    text = "SELECT * FROM {table} WHERE ds = :partition AND x = ':partitions' AND y::partition = 1"
    bound = bind(text, "sb_t", "sb_p")
    assert bound == (
        "SELECT * FROM `sb_t` WHERE ds = (SELECT p FROM `sb_p`) AND x = ':partitions' AND y::partition = 1"
    )


def test_query_files_are_read_with_the_config(tmp_path: Path) -> None:
    base = {"live_table": "local.db.f", "format": "iceberg", "partition": {"column": "ds"}}
    base["transform"] = {"function": "m:f"}  # type: ignore[assignment]
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "good.sql").write_text("SELECT count(*) FROM {table} WHERE ds = :partition")
    (tmp_path / "q" / "bad.sql").write_text("SELECT 1")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {**base, "validation": {"downstream_queries": ["q/good.sql", {"sql": "q/good.sql", "compare": True}]}}
        )
    )
    loaded = load_queries(load_config(cfg))
    assert [(q.name, q.compare) for q in loaded] == [("q/good.sql", False), ("q/good.sql", True)]
    for name, message in (
        ("q/bad.sql", "downstream query 'q/bad.sql' never reads {table}"),
        ("q/missing.sql", "downstream query '.*missing.sql' does not exist"),
    ):
        cfg.write_text(yaml.safe_dump({**base, "validation": {"downstream_queries": [name]}}))
        with pytest.raises(ConfigError, match=f"field 'validation.downstream_queries.0': {message}"):
            load_config(cfg)


def test_a_query_changed_after_the_config_loaded_is_checked_again(tmp_path: Path) -> None:
    """The text that runs is the one read when the validation starts: it is held to the same
    rule as the one the config's load read."""
    query = tmp_path / "q.sql"
    query.write_text("SELECT count(*) FROM {table}")
    cfg = tmp_path / "c.yaml"
    data = {"live_table": "local.db.f", "format": "iceberg", "partition": {"column": "ds"}}
    cfg.write_text(
        yaml.safe_dump({**data, "transform": {"function": "m:f"}, "validation": {"downstream_queries": ["q.sql"]}})
    )
    loaded = load_config(cfg)
    query.write_text("DROP TABLE local.db.f -- {table}")
    with pytest.raises(ConfigError) as caught:
        load_queries(loaded)
    assert str(caught.value) == (
        "validation.downstream_queries: downstream query 'q.sql' is a DROP statement, not a SELECT"
    )
