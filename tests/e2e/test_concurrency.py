"""Two users at once: overlapping promotions and duplicate recomputes, on every table backend, with
the state store on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from support import END, QUIET, START, MakeBackfill

from shadow_backfill import Backfill, RefusedError
from shadow_backfill.config import load_config

pytestmark = pytest.mark.every_backend


def twin(bf: Backfill) -> Backfill:
    """A second user: same config, own objects, same live/shadow tables and state store."""
    return Backfill(load_config(bf.config_path), spark=bf.spark)  # type: ignore[attr-defined]


def at_once(*calls: Callable[[], Any]) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def go(i: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[i] = call()
        except Exception as exc:  # the outcome under test
            results[i] = exc

    threads = [threading.Thread(target=go, args=(i, c)) for i, c in enumerate(calls)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    return results


def test_overlapping_promotions_apply_once(make: MakeBackfill, state_url: str) -> None:
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET, state={"url": state_url})
    bf.run(START, END)
    bf.validate()
    other = twin(bf)
    live_before = bf.table_format.current_version(bf.live_table)
    outcomes = at_once(lambda: bf.promote(), lambda: other.promote())
    applied = [o for o in outcomes if isinstance(o, tuple) and o[1] is not None]
    assert len(applied) == 1, outcomes
    loser = next(o for o in outcomes if o is not applied[0])
    if isinstance(loser, Exception):
        assert isinstance(loser, RefusedError) and "being written by another promotion" in str(loser)
        # the lock names the id the winner is recorded under in the history
        assert applied[0][1].id in str(loser), (str(loser), applied[0][1].id)
    else:  # it ran after the winner and saw the new live state
        assert loser[1] is None and "live changed after validation" in loser[0].refused["2024-01-01"]
    assert [h.kind for h in bf.history()] == ["promote"]
    commits = bf.table_format.commits_touching(bf.live_table, live_before, bf.scheme.expand(START, END))
    assert len(commits) == 1, "exactly one commit reached live"


def test_duplicate_recomputes_split_the_work(make: MakeBackfill, state_url: str) -> None:
    bf = make(transform={"function": "sb_test_transforms:tracked"}, state={"url": state_url})
    other = twin(bf)
    bf.table_format.create_like(bf.live_table, bf.shadow_table)  # both runs find the shadow ready
    t.SLEEP_S = 0.2
    try:
        first, second = at_once(lambda: bf.run(START, END, chunk_size=1), lambda: other.run(START, END, chunk_size=1))
    finally:
        t.SLEEP_S = 0.0
    assert not isinstance(first, Exception) and not isinstance(second, Exception), (first, second)
    assert first.ok and second.ok
    assert not set(first.written) & set(second.written), "a partition was recomputed by both runs"
    assert set(first.written) | set(second.written) == set(bf.scheme.expand(START, END)), "a partition was lost"
    shadow = bf.read_shadow()
    assert shadow.count() == shadow.select("ds", "id").distinct().count() == 10 * t.ROWS_PER_DAY
    assert {r.status for r in bf.status()} == {"written"}


def other_config(bf: Backfill, function: str) -> Backfill:
    """Another user's config on the same live and shadow tables and state store, with another transform."""
    data = yaml.safe_load(bf.config_path.read_text())  # type: ignore[attr-defined]
    data["transform"]["function"] = function
    path = bf.config_path.with_name(f"other-{bf.config_path.name}")  # type: ignore[attr-defined]
    path.write_text(yaml.safe_dump(data))
    return Backfill(load_config(path), spark=bf.spark)


def _same(a: DataFrame, b: DataFrame) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


@pytest.mark.parametrize("offset_s", [0.0, 0.2, 0.4, 0.7])
def test_a_recompute_during_a_promotion_never_publishes_unvalidated_rows(make: MakeBackfill, offset_s: float) -> None:
    """`run --force` of the same partitions by another config (another transform, `--allow-code-change`)
    while `promote` runs: the promotion starts `offset_s` after the recompute's transform was
    called, so the recompute's commit lands before, during or after the promotion's read of the
    shadow. Live must end with the validated rows in exactly the partitions the promotion
    record names, its old rows elsewhere, and no engine error on either side."""
    bf = make(validation=QUIET)
    keys = bf.scheme.expand(START, END)
    assert bf.run(START, END).ok
    bf.validate()
    validated = bf.spark.createDataFrame(bf.read_shadow(keys).collect(), bf.read_shadow(keys).schema)
    old = bf.spark.createDataFrame(bf.read_live(keys).collect(), bf.read_live(keys).schema)
    racer = other_config(bf, "sb_test_transforms:every_value_changed")

    def promote_late() -> Any:
        assert t.CALLED.wait(timeout=120), "the recompute never called its transform"
        time.sleep(offset_s)
        return bf.promote()

    t.CALLED.clear()
    recomputed, promoted = at_once(lambda: racer.run(START, END, force=True, allow_code_change=True), promote_late)
    assert not isinstance(recomputed, Exception) and recomputed.ok, recomputed.failed
    if isinstance(promoted, Exception):  # refused cleanly: the shadow changed before the plan
        why = f"{type(promoted).__name__}: {str(promoted)[:3000]}"  # a Py4J error's repr hides the JVM's
        assert isinstance(promoted, RefusedError) and "Exception" not in str(promoted), why
        names: list[str] = []
    else:
        _plan, rec = promoted
        names = rec.partitions if rec is not None else []
    live = bf.read_live(keys)
    in_rec = F.col(bf.scheme.column).cast("string").isin(names)
    _same(live.filter(in_rec), validated.filter(in_rec))
    _same(live.filter(~in_rec), old.filter(~in_rec))
