"""Kill tests on every table backend: `kill -9` of the tool's whole process group (the CLI and
its engine: the embedded Sail server for Delta, the JVM for Iceberg on classic Spark) at a
seeded random point, as a crash would.

Trials per phase, per backend (`TRIALS`; $SB_KILL_TRIALS overrides them all): 20 on Delta/Sail,
where a CLI process starts in about a second. On classic Spark (Iceberg, Delta) every CLI process
starts a JVM and a session: one trial (CLI, kill, recovery, checks) takes 12-25 s on the 2-core
machine, and CI runs the suite on two Spark lines within 25 minutes, so on classic backends each
Spark line runs 2 recompute and 3 promotion kill points, and the two lines take consecutive slices
of the same seeded sequences (`SPARK_LINE_SLICE`: 3.5 the first points, 4.x the next), so that CI
as a whole covers 4 and 6 distinct kill points per classic backend. The promotion phase must see,
on every line, a kill land before the commit and one after it: the first point is aimed after
the commit and the second before it, and when the points miss a side on a slow machine up to 4
more are drawn, aimed at the side not yet reached.

Where the points fall: a recompute point k.f kills once k partitions are written (0: once the
first chunk has started), f of half a second later, read from the run's state store, so the
points spread over the partitions on any machine without a calibration run. A promotion point p
in [0, 2) is timed from the promotion's own progress, not from the CLI's start (a cold JVM's
start varies by seconds on a loaded machine): below 1, p times the lock-to-commit time last seen
after the promotion has taken its locks in the state store; from 1, (p - 1) of half a second
after its commit has landed in the live table's log (read from the files).
Outcomes are written to $SB_KILL_REPORT (JSON) when set, and always printed.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import connect_server
import pytest
import sb_test_transforms as t
from chispa import DataFramesNotEqualError, SchemasNotEqualError, assert_df_equality
from pyspark.sql import functions as F
from support import END, QUIET, START, Backend, MakeBackfill, killable_cli_env, state_count
from support.settings import CONNECT

from shadow_backfill.formats.runtimes import spark_line

pytestmark = [pytest.mark.slow, pytest.mark.every_backend]

TRIALS = {  # why fewer on classic Spark: see the module docstring
    "delta": {"recompute": 2, "promote": 3},
    "delta-sail": {"recompute": 20, "promote": 20},
    "delta-connect": {"recompute": 3, "promote": 4},
    "iceberg-connect": {"recompute": 3, "promote": 4},
    "iceberg": {"recompute": 2, "promote": 3},
    "parquet": {"recompute": 2, "promote": 3},
    "parquet-sail": {"recompute": 20, "promote": 20},
    # On the bucket, what can differ is where the commit's objects stand when the process dies:
    # one recompute point and the two sides of the promotion's commit (a trial takes about 30 s).
    "iceberg-s3": {"recompute": 1, "promote": 2},
    "delta-s3": {"recompute": 1, "promote": 2},
    "parquet-metastore-s3": {"recompute": 1, "promote": 2},
}
SPARK_LINE_SLICE = {"3.5": 0, "4.0": 1, "4.1": 1}  # which slice of the seeded kill points a line runs
EXTRA_PROMOTE_TRIALS = 4  # drawn only while no kill has yet landed on one side of the commit
SEED = 20261122
DAYS = (dt.date.fromisoformat(END) - dt.date.fromisoformat(START)).days + 1  # partitions in START..END
CHUNK_GAP_S = 0.5  # how far past the k-th written partition a recompute kill point may fall
COMMIT_GAP_S = 0.5  # how far past the promotion's commit a kill point after it may fall
SETTLE_S = 1.0  # how long a Connect server must stay idle before a killed promotion is judged
# Partitions written so far (NULL until the run has started its first chunk), and whether a
# promotion holds its locks, read from the run's state store.
WRITTEN = "SELECT CASE WHEN sum(status IN ('running', 'written')) > 0 THEN sum(status = 'written') END FROM partitions"
PROMOTING = "SELECT count(*) FROM locks WHERE resource LIKE 'promote:%'"
# The promotion trials promote a logic change that adds a declared column, so a kill can also
# land between the column's addition and the data commit (docs: guides, schema changes).
NEW_COLUMN = "plane_year"
ADDS_A_COLUMN = {**QUIET, "expected_schema_changes": {"added": [NEW_COLUMN]}}
# The column's addition is a commit of its own in each backend's log, then the data commit: the
# promotion's commit, which a point from 1 on is timed after, is the second.
PROMOTION_COMMITS = 2


def _cli(bf: Any, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", args[0], str(bf.config_path), *args[1:]],
        env=killable_cli_env(bf, 0.05),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_after(proc: subprocess.Popen[bytes], delay: float) -> str:
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "finished before the kill"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return "killed"


def _outcome(checks: Callable[..., dict[str, bool]], args: tuple[Any, ...], **facts: Any) -> dict[str, Any]:
    """One trial's record: `ok` is the conjunction of the checks that really ran, and a check
    that raised counts as failed, so a broken recovery reaches the report as well as the test."""
    try:
        results = checks(*args)
    except Exception as exc:  # recorded, then failed by _report's assertion with the others
        results = {f"raised {type(exc).__name__}: {' '.join(str(exc).split())[:300]}": False}
    failed = [name for name, passed in results.items() if not passed]
    return {**facts, "ok": not failed, "failed_checks": failed}


def _same_rows(actual: Any, expected: Any) -> bool:
    try:
        assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    except (DataFramesNotEqualError, SchemasNotEqualError):
        return False
    return True


def _trials(backend: Backend, phase: str) -> int:
    return int(os.environ.get("SB_KILL_TRIALS", TRIALS[backend.name][phase]))


def _kill_points(backend: Backend, phase: str, seed: int, low: float, high: float) -> Iterator[float]:
    """The seeded kill points this Spark line draws, uniform in [low, high) (progress points for a
    recompute, fractions of an uninterrupted run for a promotion): the sequence is the same
    everywhere, and each line starts at its own slice of it (Sail runs in its own process on
    every line, so it takes the first slice)."""
    rng = random.Random(seed)
    line = 0 if backend.name.endswith("-sail") else SPARK_LINE_SLICE[spark_line().spark]
    for _ in range(line * _trials(backend, phase)):
        rng.uniform(low, high)
    while True:
        yield rng.uniform(low, high)


def _report(phase: str, backend: str, outcomes: list[dict[str, Any]]) -> None:
    """Print and save the summary, then fail the test if any trial's recovery broke."""
    broken = [{k: o[k] for k in ("trial", "outcome", "failed_checks")} for o in outcomes if not o["ok"]]
    summary = {
        "phase": phase,
        "backend": backend,
        "trials": len(outcomes),
        "seed": SEED,
        "outcomes": dict(Counter(o["outcome"] for o in outcomes)),
        "all_ok": not broken,
        "failed_trials": broken,
    }
    print(json.dumps(summary), json.dumps(outcomes))
    path = os.environ.get("SB_KILL_REPORT")
    if path:
        existing = json.loads(Path(path).read_text()) if Path(path).exists() else []
        Path(path).write_text(json.dumps([*existing, summary], indent=2))
    assert outcomes, f"{phase}: no trials ran"
    assert not broken, f"{phase}: recovery broke in {len(broken)} of {len(outcomes)} trials: {broken}"


def _kill_at_progress(proc: subprocess.Popen[bytes], db: str, point: float) -> str:
    """Kill point `point` in [0, DAYS): once floor(point) partitions are written (0: once the first
    chunk has started), wait the fraction of CHUNK_GAP_S, then kill. Points fall across the run's
    partitions on any machine, with no calibration run (a JVM start a trial on classic Spark)."""
    target, extra = int(point), (point - int(point)) * CHUNK_GAP_S
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "finished before the kill"
        done = state_count(db, WRITTEN)
        if done is not None and done >= target:
            return _kill_after(proc, extra)
        time.sleep(0.02)
    return _kill_after(proc, 0)


@pytest.mark.store
def test_killed_recompute_resumes_to_identical_content(make: MakeBackfill, backend: Backend) -> None:
    trials = _trials(backend, "recompute")
    points = _kill_points(backend, "recompute", SEED, 0.0, float(DAYS))
    outcomes = []
    for trial in range(trials):
        bf = make(transform={"function": "sb_test_transforms:slow"})
        point = next(points)
        proc = _cli(bf, "run", "--start", START, "--end", END, "--chunk-size", "1", "--max-parallel", "2")
        how = _kill_at_progress(proc, bf.config.state_url.removeprefix("sqlite:///"), point)
        backend.refresh(bf)
        written_before = sum(1 for r in bf.status() if r.status == "written")
        outcomes.append(
            _outcome(
                _recompute_checks,
                (bf,),
                trial=trial,
                kill_point=round(point, 2),
                outcome=how,
                written_before_kill=written_before,
            )
        )
    _report("recompute", backend.name, outcomes)
    assert sum(o["outcome"] == "killed" for o in outcomes) >= trials // 2, "most trials must really kill mid-run"


def _recompute_checks(bf: Any) -> dict[str, bool]:
    """Resuming after a kill finishes the range, and the shadow is exactly what one
    uninterrupted run writes: no partition lost, none written twice."""
    resumed = bf.run(START, END)
    shadow = bf.read_shadow()
    expected = t.events(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    rows, distinct = shadow.count(), shadow.select("ds", "id").distinct().count()
    want = DAYS * t.ROWS_PER_DAY
    return {
        f"resumed run ok (failed: {sorted(resumed.failed)})": resumed.ok,
        f"{want} rows, no duplicates (rows {rows}, distinct {distinct})": rows == distinct == want,
        "shadow identical to an uninterrupted run": _same_rows(shadow, expected),
    }


@pytest.mark.store
def test_killed_promotion_is_all_or_nothing(make: MakeBackfill, backend: Backend) -> None:
    trials = _trials(backend, "promote")
    points = _kill_points(backend, "promote", SEED + 1, 0.0, 2.0)
    outcomes: list[dict[str, Any]] = []
    lock_to_commit: float | None = None
    trial = -1
    # a Connect server runs a killed client's promotion to its end: no side is owed there
    extra = 0 if backend.server_outlives_client else EXTRA_PROMOTE_TRIALS
    while (trial := trial + 1) < trials or (not _both_sides(outcomes) and trial < trials + extra):
        bf = make(transform={"function": "sb_test_transforms:nudged_with_plane_year"}, validation=ADDS_A_COLUMN)
        bf.run(START, END)
        bf.validate()
        passing = [k for k in bf.scheme.expand(START, END) if k != "2024-01-05"]
        columns = bf.read_live().columns
        before = sorted(bf.read_live().collect())
        shadow_rows = _sorted_rows(bf.read_shadow(passing))
        changed = _sorted_rows(bf.read_shadow(passing).drop(NEW_COLUMN)) != _sorted_rows(bf.read_live(passing))
        assert changed, "promotion must visibly change live's data, not only its schema"
        point = _aimed(next(points), trial, outcomes, lock_to_commit)
        db = bf.config.state_url.removeprefix("sqlite:///")
        live_commits = functools.partial(backend.commits, bf, bf.live_table)
        how, seen = _kill_in_promotion(_cli(bf, "promote"), db, live_commits, point, lock_to_commit)
        lock_to_commit = seen if seen is not None else lock_to_commit
        if backend.server_outlives_client:
            _settle(live_commits)
        backend.refresh(bf)
        state = "before" if sorted(bf.read_live().select(*columns).collect()) == before else "after"
        outcomes.append(
            _outcome(
                _promotion_checks,
                (bf, state, passing, shadow_rows),
                trial=trial,
                kill_point=round(point, 2),
                lock_to_commit_s=None if lock_to_commit is None else round(lock_to_commit, 2),
                outcome=f"{how}, live {state}",
            )
        )
    _report("promote", backend.name, outcomes)
    if not backend.server_outlives_client:  # there, a killed client's promotion still commits
        assert _both_sides(outcomes), Counter(o["outcome"] for o in outcomes)


def _settle(commits: Callable[[], int]) -> None:
    """Wait until the Spark Connect server has ended the killed client's last request: no SQL
    execution running and no new commit in the live log for SETTLE_S (the margin covers a
    request the server has received but not yet planned into an execution)."""
    last, since = commits(), time.monotonic()
    deadline = since + 300
    while time.monotonic() - since < SETTLE_S:
        assert time.monotonic() < deadline, "the Spark Connect server still runs the killed client's work after 300 s"
        time.sleep(0.1)
        now = commits()
        if now != last or connect_server.running_queries(CONNECT["ui"]):
            last, since = now, time.monotonic()


def _aimed(point: float, trial: int, outcomes: list[dict[str, Any]], lock_to_commit: float | None) -> float:
    """The drawn point in [0, 2), moved to the side of the commit a trial must cover: the first
    kill lands after the commit (and so times lock-to-commit for the points before it), the
    second before it, and any later trial on the side no kill has reached yet, if any."""
    after, before = 1.0 + point % 1.0, (point % 1.0) * 0.8
    if lock_to_commit is None or trial == 0:
        return after
    if trial == 1:
        return before
    if _both_sides(outcomes):
        return point
    return after if any(o["outcome"] == "killed, live before" for o in outcomes) else before


def _wait_for(proc: subprocess.Popen[bytes], condition: Callable[[], bool]) -> float | None:
    """When `condition` first held (monotonic seconds), or None if the process ended first."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ended = proc.poll() is not None
        if condition():
            return time.monotonic()
        if ended:
            return None
        time.sleep(0.01)
    raise AssertionError("the CLI neither reached the kill point nor ended within 300 s")


def _kill_in_promotion(
    proc: subprocess.Popen[bytes], db: str, commits: Callable[[], int], point: float, lock_to_commit: float | None
) -> tuple[str, float | None]:
    """Kill point `point` in [0, 2), timed from the promotion's own progress, not from the CLI's
    start (a cold JVM's start varies by seconds on a loaded machine): below 1, `point` of the
    last seen lock-to-commit time after the promotion took its locks in the state store; from 1,
    (point - 1) * COMMIT_GAP_S after its commit landed in the live table's log. Returns how the
    trial ended and the lock-to-commit time when this trial saw the commit."""
    committed_before = commits()
    locked = _wait_for(proc, lambda: bool(state_count(db, PROMOTING)))
    if locked is None:
        return "finished before the kill", None
    if point < 1.0:
        assert lock_to_commit is not None, "a point before the commit needs a lock-to-commit time"
        return _kill_after(proc, point * lock_to_commit), None
    committed = _wait_for(proc, lambda: commits() >= committed_before + PROMOTION_COMMITS)
    if committed is None:
        return "finished before the kill", None
    return _kill_after(proc, (point - 1.0) * COMMIT_GAP_S), committed - locked


def _both_sides(outcomes: list[dict[str, Any]]) -> bool:
    """Some trial left live as before the commit and some as after it."""
    kinds = Counter(o["outcome"] for o in outcomes)
    return kinds["killed, live before"] >= 1 and (
        kinds["killed, live after"] + kinds["finished before the kill, live after"] >= 1
    )


def _sorted_rows(df: Any) -> list[Any]:
    """The rows, columns by name (an engine may place a column added later before the
    partition column), in a stable order."""
    return sorted(df.select(*sorted(df.columns)).collect())


def _promotion_checks(bf: Any, state: str, passing: list[str], shadow_rows: list[Any]) -> dict[str, bool]:
    """After a kill live is wholly before or wholly after, the audit trail agrees, and promoting
    again finishes the job exactly once. The promotion adds a column first: killed before its
    data commit, live may have the column, null in every row."""
    checks: dict[str, bool] = {}
    if state == "after":
        checks["live not half-written"] = _sorted_rows(bf.read_live(passing)) == shadow_rows
    elif NEW_COLUMN in bf.read_live().columns:
        checks["the new column, added before the kill, is null"] = (
            bf.read_live().filter(F.col(NEW_COLUMN).isNotNull()).count() == 0
        )
    history = bf.history()  # reconciles a commit whose audit row the kill prevented
    expected = 1 if state == "after" else 0
    checks[f"history matches live {state} ({len(history)} promotion(s))"] = len(history) == expected
    _, rec = bf.promote()  # rerunning the promotion never applies it twice
    if state == "after":
        checks["not applied twice"] = rec is None
    else:
        checks["rerun promotes every passing partition"] = rec is not None and sorted(rec.partitions) == passing
    checks["live holds the shadow rows"] = _sorted_rows(bf.read_live(passing)) == shadow_rows
    checks["exactly one promotion recorded"] = len(bf.history()) == 1
    return checks
