"""Two users at once: overlapping promotions and duplicate recomputes, on every table backend, with
the state store on SQLite and on a real PostgreSQL server.

Each case forces one interleaving at a named point (a promotion's `before_commit`, a run's
transform call while it holds its leases) and asserts that interleaving happened and the one
outcome it must give. No sleep makes a race: events only, with a generous timeout that fires
on a hang alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from support import END, QUIET, START, MakeBackfill

from shadow_backfill import Backfill, RefusedError
from shadow_backfill.config import load_config
from shadow_backfill.formats.base import TableFormat
from shadow_backfill.state import PROMOTE, new_id

SAFETY_S = 300  # only a hang waits this long
T = TypeVar("T")

pytestmark = pytest.mark.every_backend


def twin(bf: Backfill) -> Backfill:
    """A second user: same config, own objects, same live/shadow tables and state store."""
    return Backfill(load_config(bf.config_path), spark=bf.spark)  # type: ignore[attr-defined]


@contextmanager
def in_thread(call: Callable[[], T]) -> Iterator[Future[T]]:
    """`call` on another thread (the held side of an interleaving); joined on the way out."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="held") as pool:
        yield pool.submit(call)


class Hold:
    """The first caller of `hold` stops there until `release`; later callers pass through."""

    def __init__(self) -> None:
        self.reached, self.released = threading.Event(), threading.Event()
        self._lock = threading.Lock()

    def hold(self, *_: object) -> None:
        with self._lock:
            if self.reached.is_set():
                return
            self.reached.set()
        assert self.released.wait(SAFETY_S), "the test never released the held side"

    def wait(self) -> None:
        assert self.reached.wait(SAFETY_S), "the held side never reached its point"


@pytest.fixture
def on_call() -> Iterator[None]:
    yield
    t.ON_CALL = None


def test_overlapping_promotions_apply_once(make: MakeBackfill, state_url: str) -> None:
    """Promotion A is held between its plan and its commit, with its partitions locked: B is
    refused at once naming A; A, released, applies; B again, now after A, finds live changed
    since its validation and commits nothing."""
    bf = make(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET, state={"url": state_url})
    bf.run(START, END)
    bf.validate()
    other = twin(bf)
    live_before = bf.table_format.current_version(bf.live_table)
    first, first_id, held = bf.promoter(), new_id(PROMOTE), Hold()
    first.before_commit = held.hold
    with in_thread(lambda: first.promote(promotion_id=first_id)) as promoted:
        try:
            held.wait()
            with pytest.raises(RefusedError, match="being written by another promotion") as refused:
                other.promote()
        finally:
            held.released.set()
    assert first_id in str(refused.value), "the refusal names the holder as the history will"
    plan, rec = promoted.result(SAFETY_S)
    assert rec is not None and rec.id == first_id and plan.partitions
    late_plan, late = other.promote()
    assert late is None and "live changed after validation" in late_plan.refused["2024-01-01"], late_plan.refused
    assert [(h.kind, h.id) for h in bf.history()] == [("promote", first_id)]
    commits = bf.table_format.commits_touching(bf.live_table, live_before, bf.scheme.expand(START, END))
    assert len(commits) == 1, "exactly one commit reached live"


def test_duplicate_recomputes_split_the_work(make: MakeBackfill, state_url: str, on_call: None) -> None:
    """Run A (days 1-7) is held inside its first transform call, its leases taken and nothing
    written; run B (days 4-10) starts then: it leaves 4-7 to A, naming it, and writes 8-10.
    Released, A writes 1-7. Both did work, together exactly the range, nothing twice."""
    bf = make(transform={"function": "sb_test_transforms:tracked"}, state={"url": state_url})
    other = twin(bf)
    bf.table_format.create_like(bf.live_table, bf.shadow_table)  # both runs find the shadow ready
    days = bf.scheme.expand(START, END)
    held = Hold()
    t.ON_CALL = held.hold
    with in_thread(lambda: bf.run(days[0], days[6], max_parallel=1)) as running:  # one chunk in flight
        try:
            held.wait()
            assert bf.read_shadow().count() == 0, "A is held before its first commit"
            second = other.run(days[3], days[9])
        finally:
            held.released.set()
    first = running.result(SAFETY_S)
    assert first.ok and second.ok, (first.failed, second.failed)
    assert sorted(second.held) == days[3:7], second.held
    assert {v.rsplit(":", 1)[-1] for v in second.held.values()} == {first.run_id}, "B names A as the holder"
    assert sorted(second.written) == days[7:] and sorted(first.written) == days[:7], (first.written, second.written)
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


def _once(call: Callable[[], Any], into: list[Any]) -> Callable[..., None]:
    """A hook that runs `call` the first time it is reached and keeps its outcome."""

    def hook(*_: object) -> None:
        if into:
            return
        try:
            into.append(call())
        except Exception as exc:  # the outcome under test
            into.append(exc)

    return hook


@pytest.mark.parametrize("where", ["before_the_plan", "between_plan_and_commit", "while_the_recompute_computes"])
def test_a_recompute_during_a_promotion_never_publishes_unvalidated_rows(
    make: MakeBackfill, where: str, on_call: None
) -> None:
    """`run --force` of the same partitions by another config (another transform, `--allow-code-change`)
    against `promote`, its commit forced before the promotion's plan (every partition refused,
    naming the run), between the plan and the promotion's commit (all promoted, as validated:
    the promotion reads the validated version), or after the promotion's commit, the whole
    promotion running inside the recompute's transform call (all promoted). Live ends with the
    validated rows in exactly the partitions the promotion names, its old rows elsewhere."""
    bf = make(validation=QUIET)
    if where == "between_plan_and_commit" and type(bf.table_format).pinned is not TableFormat.pinned:
        pytest.skip("a commit waits for the promotion's pin here: none lands between its plan and its commit")
    keys = bf.scheme.expand(START, END)
    assert bf.run(START, END).ok
    bf.validate()
    validated = bf.spark.createDataFrame(bf.read_shadow(keys).collect(), bf.read_shadow(keys).schema)
    old = bf.spark.createDataFrame(bf.read_live(keys).collect(), bf.read_live(keys).schema)
    racer = other_config(bf, "sb_test_transforms:every_value_changed")
    promoter = bf.promoter()
    recomputed: list[Any] = []
    promoted: list[Any] = []

    def recompute() -> Any:
        return racer.run(START, END, force=True, allow_code_change=True, chunk_size=len(keys))

    if where == "before_the_plan":
        recomputed.append(recompute())
        _once(promoter.promote, promoted)()
    elif where == "between_plan_and_commit":
        promoter.before_commit = _once(recompute, recomputed)
        _once(promoter.promote, promoted)()
    else:
        t.ON_CALL = _once(promoter.promote, promoted)
        recomputed.append(recompute())
    assert len(recomputed) == len(promoted) == 1, "both sides ran, at the forced point"
    run = recomputed[0]
    assert not isinstance(run, Exception) and run.ok and sorted(run.written) == keys, run
    outcome = promoted[0]
    why = f"{type(outcome).__name__}: {str(outcome)[:3000]}"  # a Py4J error's repr hides the JVM's
    assert not isinstance(outcome, Exception), why
    plan, rec = outcome
    if where == "before_the_plan":  # the plan sees every partition rewritten since validation
        assert rec is None and plan.partitions == [], plan
        assert sorted(plan.refused) == keys, plan.refused
        assert all(f"rewritten by {run.run_id} after it was validated" in why for why in plan.refused.values())
    else:  # the promotion reads the shadow as validated, whatever landed in it meanwhile
        assert rec is not None and sorted(rec.partitions) == keys and plan.refused == {}, plan
    names = rec.partitions if rec is not None else []
    live = bf.read_live(keys)
    in_rec = F.col(bf.scheme.column).cast("string").isin(names)
    _same(live.filter(in_rec), validated.filter(in_rec))
    _same(live.filter(~in_rec), old.filter(~in_rec))
