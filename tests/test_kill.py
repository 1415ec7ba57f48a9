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
on every line, a kill land before the commit and one after it: when the drawn points miss a side
on a slow machine, up to 4 more are drawn.

Where the points fall: a recompute point k.f kills once k partitions are written (0: once the
first chunk has started), f of half a second later, read from the run's state store, so the
points spread over the partitions on any machine without a calibration run. A promotion has one
commit and no progress to read: its points are fractions of an uninterrupted promotion timed
once per test on the same machine.
Outcomes are written to $SB_KILL_REPORT (JSON) when set, and always printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
from chispa import DataFramesNotEqualError, SchemasNotEqualError, assert_df_equality
from conftest import END, QUIET, START, Backend, MakeBackfill

from shadow_backfill.formats.runtimes import spark_line

pytestmark = pytest.mark.slow

TRIALS = {  # why fewer on classic Spark: see the module docstring
    "delta": {"recompute": 2, "promote": 3},
    "delta-sail": {"recompute": 20, "promote": 20},
    "iceberg": {"recompute": 2, "promote": 3},
}
SPARK_LINE_SLICE = {"3.5": 0, "4.0": 1, "4.1": 1}  # which slice of the seeded kill points a line runs
EXTRA_PROMOTE_TRIALS = 4  # drawn only while no kill has yet landed on one side of the commit
SEED = 20261122
CHUNK_GAP_S = 0.5  # how far past the k-th written partition a recompute kill point may fall


def _cli(bf: Any, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SB_SLOW_SECONDS": "0.05", "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", args[0], str(bf.config_path), *args[1:]],
        env=env,
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


def _duration(proc: subprocess.Popen[bytes]) -> float:
    """How long an uninterrupted run takes on this machine: kill points are drawn within it, so
    the trials cover before and after the commit on a fast laptop and a slow CI box alike."""
    started = time.monotonic()
    proc.wait(timeout=300)
    return time.monotonic() - started


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


def _written(db: str) -> int | None:
    """Partitions the run has written so far, read from its SQLite state store without creating
    anything in it; None until the run has started its first chunk."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
            written, started = c.execute(
                "SELECT sum(status = 'written'), sum(status IN ('running', 'written')) FROM partitions"
            ).fetchone()
    except sqlite3.Error:  # no file or no tables yet: the CLI is still starting
        return None
    return int(written or 0) if started else None


def _kill_at_progress(proc: subprocess.Popen[bytes], db: str, point: float) -> str:
    """Kill point `point` in [0, 10): once floor(point) partitions are written (0: once the first
    chunk has started), wait the fraction of CHUNK_GAP_S, then kill. Points fall across the run's
    partitions on any machine, with no calibration run (a JVM start a trial on classic Spark)."""
    target, extra = int(point), (point - int(point)) * CHUNK_GAP_S
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "finished before the kill"
        done = _written(db)
        if done is not None and done >= target:
            return _kill_after(proc, extra)
        time.sleep(0.02)
    return _kill_after(proc, 0)


def test_killed_recompute_resumes_to_identical_content(make: MakeBackfill, backend: Backend) -> None:
    trials = _trials(backend, "recompute")
    points = _kill_points(backend, "recompute", SEED, 0.0, 10.0)
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
    want = 10 * t.ROWS_PER_DAY
    return {
        f"resumed run ok (failed: {sorted(resumed.failed)})": resumed.ok,
        f"{want} rows, no duplicates (rows {rows}, distinct {distinct})": rows == distinct == want,
        "shadow identical to an uninterrupted run": _same_rows(shadow, expected),
    }


def test_killed_promotion_is_all_or_nothing(make: MakeBackfill, backend: Backend) -> None:
    trials = _trials(backend, "promote")
    points = _kill_points(backend, "promote", SEED + 1, 0.2, 1.2)
    outcomes = []
    full = 0.0
    trial = -2
    while (trial := trial + 1) < trials or (not _both_sides(outcomes) and trial < trials + EXTRA_PROMOTE_TRIALS):
        # trial -1 measures an uninterrupted promotion; past `trials`, more kill points are drawn
        # until a kill has landed on each side of the commit
        bf = make(transform={"function": "sb_test_transforms:nudged_with_one_bad_day"}, validation=QUIET)
        bf.run(START, END)
        bf.validate()
        passing = [k for k in bf.scheme.expand(START, END) if k != "2024-01-05"]
        before = sorted(bf.read_live().collect())
        shadow_rows = sorted(bf.read_shadow(passing).collect())
        assert shadow_rows != sorted(bf.read_live(passing).collect()), "promotion must visibly change live"
        if trial < 0:
            full = _duration(_cli(bf, "promote"))
            continue
        delay = next(points) * full
        how = _kill_after(_cli(bf, "promote"), delay)
        backend.refresh(bf)
        state = "before" if sorted(bf.read_live().collect()) == before else "after"
        outcomes.append(
            _outcome(
                _promotion_checks,
                (bf, state, passing, shadow_rows),
                trial=trial,
                delay_s=round(delay, 2),
                of_s=round(full, 2),
                outcome=f"{how}, live {state}",
            )
        )
    _report("promote", backend.name, outcomes)
    assert _both_sides(outcomes), Counter(o["outcome"] for o in outcomes)


def _both_sides(outcomes: list[dict[str, Any]]) -> bool:
    """Some trial left live as before the commit and some as after it."""
    kinds = Counter(o["outcome"] for o in outcomes)
    return kinds["killed, live before"] >= 1 and (
        kinds["killed, live after"] + kinds["finished before the kill, live after"] >= 1
    )


def _promotion_checks(bf: Any, state: str, passing: list[str], shadow_rows: list[Any]) -> dict[str, bool]:
    """After a kill live is wholly before or wholly after, the audit trail agrees, and promoting
    again finishes the job exactly once."""
    checks: dict[str, bool] = {}
    if state == "after":
        checks["live not half-written"] = sorted(bf.read_live(passing).collect()) == shadow_rows
    history = bf.history()  # reconciles a commit whose audit row the kill prevented
    expected = 1 if state == "after" else 0
    checks[f"history matches live {state} ({len(history)} promotion(s))"] = len(history) == expected
    _, rec = bf.promote()  # rerunning the promotion never applies it twice
    if state == "after":
        checks["not applied twice"] = rec is None
    else:
        checks["rerun promotes every passing partition"] = rec is not None and sorted(rec.partitions) == passing
    checks["live holds the shadow rows"] = sorted(bf.read_live(passing).collect()) == shadow_rows
    checks["exactly one promotion recorded"] = len(bf.history()) == 1
    return checks
