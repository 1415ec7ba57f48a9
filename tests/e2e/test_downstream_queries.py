"""Downstream read tests: the consumers' own queries judge each shadow partition, and check a
canary promotion on live before the rest of the partitions follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import DRIFT, END, QUIET, START, MakeBackfill
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


def _write_queries(bf: Any, **texts: str) -> None:
    """The query files beside the config (the config names them relative to its folder; they
    are read when a validation starts)."""
    folder = Path(bf.config_path).parent / "queries"
    folder.mkdir(exist_ok=True)
    for name, text in texts.items():
        (folder / f"{name}.sql").write_text(text + "\n")


def _checks(bf: Any, partition: str) -> dict[str, Any]:
    verdict = {v.partition: v for v in bf.verdicts()}[partition]
    return {c.column: c for c in verdict.checks if c.name == "downstream_query"}


def test_a_partition_that_breaks_a_consumer_query_fails(make: MakeBackfill) -> None:
    queries = ["queries/training.sql", {"sql": "queries/totals.sql", "compare": True}]
    bf = make(
        transform={"function": "sb_test_transforms:drift_on_one_day"},
        validation={**LENIENT, "downstream_queries": queries},
    )
    _write_queries(bf, training=TRAINING, totals=TOTALS)
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


def test_a_canary_whose_downstream_query_fails_is_rolled_back(make: MakeBackfill) -> None:
    """The consumer's query passed on the shadow, then changed before the promotion: on live it
    fails for the canary's partitions, so the canary is rolled back and live is as before."""
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]})
    _write_queries(bf, training=TRAINING)
    assert bf.run(START, END).ok
    assert bf.validate().ok
    before = bf.read_live().collect()
    live_version = bf.table_format.current_version(bf.live_table)
    _write_queries(bf, training="SELECT id, no_such_column FROM {table} WHERE ds = :partition")

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
def test_a_canary_that_passes_on_live_lets_the_rest_follow(make: MakeBackfill) -> None:
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]}, promote={"canary": 3})
    _write_queries(bf, training=TRAINING)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END])
    assert result.exit_code == 0, result.output
    assert "canary: promoted 3 partition(s)" in result.output
    assert "canary checks on live: 6 of 6 passed" in result.output  # rows and the query, 3 partitions
    assert "rest: promoted 7 partition(s)" in result.output
    assert "no partition passed" not in result.output and "held" not in result.output
    canary, rest = bf.history(reconcile_live=False)
    assert (canary.step, rest.step, rest.steps_of) == ("canary", "rest", canary.id)
    assert canary.partitions == bf.scheme.expand(START, END)[:3] and len(rest.partitions) == 7
    history = CliRunner().invoke(app, ["history", cfg, "--json"])
    steps = [(h["step"], h["steps_of"]) for h in json.loads(history.stdout)]
    assert steps == [("canary", canary.id), ("rest", canary.id)]
