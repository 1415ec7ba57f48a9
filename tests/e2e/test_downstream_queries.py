"""Downstream read tests: the consumers' own queries judge each shadow partition, and check a
canary promotion on live before the rest of the partitions follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import DRIFT, END, QUIET, START, MakeBackfill, published
from typer.testing import CliRunner

from shadow_backfill.cli.app import app

# Only the row and key checks' limits are lifted: DRIFT (key 0 dropped, amounts tripled) passes
# the table's own checks, and only the consumers' queries can catch it.
LENIENT = {
    **QUIET,
    "keys_removed": {"warn": None, "fail": None},
    "row_count_change": {"warn": None, "fail": None},
}
TRAINING = "SELECT id, amount, cat FROM {table} WHERE ds = :partition AND id = 0"
TOTALS = "SELECT cat, count(*) AS n, sum(amount) AS total FROM {table} WHERE ds = :partition GROUP BY cat"


def _write_queries(beside: Path, **texts: str) -> None:
    """The query files in the config's folder (the config names them relative to it; they are
    read, and checked, when the config loads and again when a validation starts)."""
    folder = beside / "queries"
    folder.mkdir(exist_ok=True)
    for name, text in texts.items():
        (folder / f"{name}.sql").write_text(text + "\n")


def _checks(bf: Any, partition: str) -> dict[str, Any]:
    verdict = {v.partition: v for v in bf.verdicts()}[partition]
    return {c.column: c for c in verdict.checks if c.name == "downstream_query"}


def test_a_partition_that_breaks_a_consumer_query_fails(make: MakeBackfill, tmp_path: Path) -> None:
    queries = ["queries/training.sql", {"sql": "queries/totals.sql", "compare": True}]
    _write_queries(tmp_path, training=TRAINING, totals=TOTALS)
    bf = make(
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        validation={**LENIENT, "downstream_queries": queries},
    )
    assert bf.run(START, END).ok
    result = bf.validate()
    verdicts = {v.partition: v.verdict.value for v in result.verdicts}
    assert verdicts == {k: "fail" if k == DRIFT else "pass" for k in bf.scheme.expand(START, END)}

    broken = _checks(bf, DRIFT)
    assert broken["queries/training.sql"].message == "queries/training.sql: returns no rows on the shadow"
    assert broken["queries/totals.sql"].status.value == "fail"
    assert "queries/totals.sql: differs from live" in broken["queries/totals.sql"].message
    fine = _checks(bf, START)
    assert {c.status.value for c in fine.values()} == {"pass"}
    assert fine["queries/totals.sql"].message == "queries/totals.sql: gives live's result within the tolerance"


def test_a_canary_whose_downstream_query_fails_is_rolled_back(make: MakeBackfill, tmp_path: Path) -> None:
    """The consumer's query passed on the shadow, then changed before the promotion: on live it
    fails for the canary's partitions, so the canary is rolled back and live is as before."""
    _write_queries(tmp_path, training=TRAINING)
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]})
    assert bf.run(START, END).ok
    assert bf.validate().ok
    before = bf.read_live().collect()
    live_version = bf.table_format.current_version(bf.live_table)
    _write_queries(tmp_path, training="SELECT id, no_such_column FROM {table} WHERE ds = :partition")

    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["promote", cfg, "--canary", "2"])
    assert result.exit_code == 1, result.output
    assert "canary: promoted 2 partition(s)" in result.output
    assert "canary rolled back as rollback-" in result.output
    assert f"queries/training.sql: fails on live partition {START} after promotion" in result.output
    assert sorted(map(tuple, bf.read_live().collect())) == sorted(map(tuple, before))
    assert bf.table_format.current_version(bf.live_table) != live_version  # the commit and its undo
    canary, undo = bf.history(reconcile_live=False)
    assert (canary.kind, canary.step, canary.partitions) == ("promote", "canary", [START, "2024-01-02"])
    assert undo.kind == "rollback" and undo.target == canary.id


@pytest.mark.store
def test_a_canary_that_passes_on_live_lets_the_rest_follow(make: MakeBackfill, tmp_path: Path) -> None:
    _write_queries(tmp_path, training=TRAINING)
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]}, promote={"canary": 3})
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END])
    assert result.exit_code == 0, result.output
    assert "canary: promoted 3 partition(s)" in result.output
    assert "canary checks on live: 6 of 6 passed" in result.output  # rows and the query, 3 partitions
    assert "rest: promoted 7 partition(s)" in result.output
    assert "10 pass, 0 warn, 0 fail; 0 held, 10 promoted" in result.output, result.output
    assert "no partition passed" not in result.output
    assert not [line for line in result.output.splitlines() if line.startswith("held ")]
    canary, rest = bf.history(reconcile_live=False)
    assert (canary.step, rest.step, rest.steps_of) == ("canary", "rest", canary.id)
    assert canary.partitions == bf.scheme.expand(START, END)[:3] and len(rest.partitions) == 7
    history = CliRunner().invoke(app, ["history", cfg, "--json"])
    steps = [(h["step"], h["steps_of"]) for h in published(history.stdout, "history.schema.json")]
    assert steps == [("canary", canary.id), ("rest", canary.id)]


def test_a_query_that_could_write_is_refused_before_anything_runs(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    """The issue's reproductions: each hostile query is refused when the config loads (exit 2,
    one line naming the query and what it is), so no table changes. The refusal comes before
    Spark or any table format is reached, so one backend proves it for all."""
    _write_queries(tmp_path, training=TRAINING)
    bf = make_backfill(validation={**QUIET, "downstream_queries": ["queries/training.sql"]})
    assert bf.run(START, END).ok
    live, copy = bf.live_table, f"{bf.live_table}_copy"
    before = (bf.table_format.current_version(live), bf.read_live().count())
    shadow = bf.table_format.current_version(bf.shadow_table)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    hostile = {
        f"DROP TABLE {live} -- {{table}}": "is a DROP statement, not a SELECT",
        f"INSERT INTO {live} SELECT * FROM {{table}}": "is an INSERT statement, not a SELECT",
        f"CREATE TABLE {copy} AS SELECT * FROM {{table}}": "is a CREATE statement, not a SELECT",
        f"SELECT * FROM {{table}} WHERE ds = :partition; DROP TABLE {live}": "holds 2 statements",
        f"SELECT * FROM {{table}} t JOIN {live} l USING (id)": f"reads {live}, which is not in its reads",
    }
    for text, found in hostile.items():
        _write_queries(tmp_path, training=text)
        for args in (["validate", cfg], ["promote", cfg, "--canary", "1"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, result.output
            errors = [line for line in result.output.splitlines() if line.strip()]
            assert len(errors) == 1 and "downstream query 'queries/training.sql' " + found in errors[0], result.output
    assert (bf.table_format.current_version(live), bf.read_live().count()) == before
    assert bf.table_format.current_version(bf.shadow_table) == shadow
    assert not bf.table_format.exists(copy)
    assert bf.verdicts() == [], "no validation ran"
