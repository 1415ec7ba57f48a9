"""Kill tests on every table backend: `kill -9` of the tool's whole process group (the CLI and
its engine: the embedded Sail server for Delta, the JVM for Iceberg on classic Spark), as a crash
would, then recovery checked: a resumed recompute writes exactly what one uninterrupted run
writes, and a promotion is all or nothing, its audit trail agrees, and promoting again finishes it
exactly once.

Why a guaranteed minimum, then a soak: a kill timed by polling can land after the process has
ended, and such a trial proves nothing while it passes. So each test first kills at named points
(`shadow_backfill.testpoints`: the CLI pauses there and the test kills it there): a recompute once
a chunk is committed to the shadow and not yet recorded as written, and a promotion before its
data commit (its added column already committed) and after it (before its audit row). Each
asserts the interleaving it forced and the one outcome that interleaving must give, and counts
only as a real kill: the process died of our SIGKILL (`tests/support/soak.py`, whose unit test
shows a process that ended first cannot meet the minimum). Past the minimum, trials at seeded
random points (a recompute point k.f: once k partitions are written, f of CHUNK_GAP_S later; a
promotion point p in [0, 2): below 1, p of the lock-to-commit time the minimum measured after
the locks; from 1, (p - 1) of COMMIT_GAP_S after the commit landed) run until the pytest
process's soak budget is spent: $SB_SOAK_SECONDS (default 0, the minimum only; CI sets 60 per
group), shared by the soak tests of the process (a trial that does not fit in a test's share
starts on a seeded coin weighted by how much of it fits, so the extra trials rotate over the
backends); $SB_KILL_TRIALS=<n> runs exactly n per test instead.
Such a trial may end before its kill: its recovery is still checked, and it is reported as such.

The seed rotates per run ($SB_KILL_SEED replays one); it is printed once per process, written to
$SB_KILL_REPORT (JSON) with each test's outcomes, and a failing trial's message gives the line
that reproduces it.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import connect_server
import pytest
import sb_test_transforms as t
from chispa import DataFramesNotEqualError, SchemasNotEqualError, assert_df_equality
from pyspark.sql import functions as F
from support import END, QUIET, START, Backend, MakeBackfill, killable_cli_env, soak, state_count
from support.settings import CONNECT

from shadow_backfill import testpoints

# every_pair: a Connect server may finish a killed client's commit, and each format recovers from
# that in its own way (delta-spark refuses the next commit as a conflict, delta.py), so no pair is a repeat
pytestmark = [pytest.mark.slow, pytest.mark.every_backend, pytest.mark.every_pair]

DAYS = (dt.date.fromisoformat(END) - dt.date.fromisoformat(START)).days + 1  # partitions in START..END
RUN = ("run", "--start", START, "--end", END, "--chunk-size", "1", "--max-parallel", "2")
CHUNK_GAP_S = 0.5  # how far past the k-th written partition a recompute kill point may fall
COMMIT_GAP_S = 0.5  # how far past the promotion's commit a kill point after it may fall
SETTLE_S = 1.0  # how long a Connect server must stay idle before a killed process's work is judged
# Partitions written so far (NULL until the run has started its first chunk), whether a
# promotion holds its locks, and its audit rows, read from the run's state store.
WRITTEN = "SELECT CASE WHEN sum(status IN ('running', 'written')) > 0 THEN sum(status = 'written') END FROM partitions"
PROMOTING = "SELECT count(*) FROM locks WHERE resource LIKE 'promote:%'"
AUDITED = "SELECT count(*) FROM promotions"
# The promotion trials promote a logic change that adds a declared column, so a kill can also
# land between the column's addition and the data commit (docs: guides, schema changes).
NEW_COLUMN = "plane_year"
ADDS_A_COLUMN = {**QUIET, "expected_schema_changes": {"added": [NEW_COLUMN]}}
# The column's addition is a commit of its own in each backend's log, then the data commit.
PROMOTION_COMMITS = 2


_ANNOUNCED: list[str] = []


def _announce(request: pytest.FixtureRequest) -> None:
    """The seed and budget, once per process, in the test output itself (not only on failure)."""
    if _ANNOUNCED:
        return
    budget = soak.budget()
    line = f"kill soak: {soak.SEED_ENV}={soak.run_seed()} {soak.BUDGET_ENV}={budget.seconds:g}"
    if budget.trials is not None:
        line += f" {soak.TRIALS_ENV}={budget.trials}"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
    _ANNOUNCED.append(line)


def _cli(bf: Any, *args: str, pause: str | None = None, slow: float = 0.05) -> tuple[subprocess.Popen[bytes], Path]:
    """The CLI in a process group of its own; with `pause`, it stops for good at that named
    point after writing the returned marker file."""
    marker = Path(bf.config_path).parent / f"paused-{uuid.uuid4().hex}"  # one test may make several backfills here
    env = killable_cli_env(bf, slow)
    if pause is not None:
        env[testpoints.PAUSE_AT] = f"{pause}={marker}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", args[0], str(bf.config_path), *args[1:]],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return proc, marker


def _kill_after(proc: subprocess.Popen[bytes], delay: float) -> str:
    deadline = time.monotonic() + delay
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return soak.kill_group(proc)


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


def _soak(request: pytest.FixtureRequest, trial_seconds: float, trial: Callable[[int, random.Random], None]) -> float:
    """Random trials while this test's share of the budget lasts (`soak.Plan`; `trial_seconds`:
    what this test's minimum trials took each). Each trial draws from its own generator (seed,
    test, index), so SB_KILL_TRIALS=i+1 replays trial i's point. Returns the seconds spent."""
    budget = soak.budget()
    items = request.session.items
    left = sum(1 for i in items[items.index(request.node) :] if getattr(i, "module", None) is request.module)
    coin = random.Random(f"{soak.run_seed()}/{request.node.name}/coin").random
    plan, done = budget.plan(left, trial_seconds, coin), 0
    while plan.go_on(done):
        trial(done, random.Random(f"{soak.run_seed()}/{request.node.name}/{done}"))
        done += 1
    return budget.close(plan)


def _report(request: pytest.FixtureRequest, phase: str, outcomes: list[dict[str, Any]], seconds: float) -> None:
    """Print and save the summary, then fail the test if any trial's recovery broke, each
    broken trial with the line that replays it."""
    seed, test = soak.run_seed(), request.node.nodeid
    broken = [
        {
            "trial": o["trial"],
            "outcome": o["outcome"],
            "failed_checks": o["failed_checks"],
            "reproduce": soak.repro(seed, test, None if o["trial"] == "minimum" else o["index"] + 1),
        }
        for o in outcomes
        if not o["ok"]
    ]
    random_trials = [o for o in outcomes if o["trial"] != "minimum"]
    summary = {
        "phase": phase,
        "test": test,
        "seed": seed,
        "minimum": [o["outcome"] for o in outcomes if o["trial"] == "minimum"],
        "random_trials": len(random_trials),
        "random_real_kills": sum(o["outcome"].startswith(soak.KILLED) for o in random_trials),
        "soak_seconds": round(seconds, 1),
        "outcomes": dict(Counter(o["outcome"] for o in outcomes)),
        "all_ok": not broken,
        "failed_trials": broken,
    }
    print(json.dumps(summary), json.dumps(outcomes))
    path = os.environ.get("SB_KILL_REPORT")
    if path:
        existing = json.loads(Path(path).read_text()) if Path(path).exists() else []
        Path(path).write_text(json.dumps([*existing, summary], indent=2))
    assert not broken, f"{phase}: recovery broke in {len(broken)} of {len(outcomes)} trials (seed {seed}): {broken}"


def _settle(commits: Callable[[], int]) -> None:
    """Wait until the Spark Connect server has ended the killed client's last request: no SQL
    execution running and no new commit in the table's log for SETTLE_S (the margin covers a
    request the server has received but not yet planned into an execution)."""
    last, since = commits(), time.monotonic()
    deadline = since + 300
    while time.monotonic() - since < SETTLE_S:
        assert time.monotonic() < deadline, "the Spark Connect server still runs the killed client's work after 300 s"
        time.sleep(0.1)
        now = commits()
        if now != last or connect_server.running_queries(CONNECT["ui"]):
            last, since = now, time.monotonic()


def _db(bf: Any) -> str:
    return str(bf.config.state_url.removeprefix("sqlite:///"))


def _kill_at_progress(proc: subprocess.Popen[bytes], db: str, point: float) -> str:
    """Kill point `point` in [0, DAYS): once floor(point) partitions are written (0: once the first
    chunk has started), wait the fraction of CHUNK_GAP_S, then kill. Points fall across the run's
    partitions on any machine, with no calibration run (a JVM start a trial on classic Spark)."""
    target, extra = int(point), (point - int(point)) * CHUNK_GAP_S

    def reached() -> bool:
        done = state_count(db, WRITTEN)
        return done is not None and done >= target

    if _wait_for(proc, reached) is None:
        return soak.kill_group(proc)  # ended first: reported so, never counted as a kill
    return _kill_after(proc, extra)


def _written(bf: Any) -> int:
    return sum(1 for r in bf.status() if r.status == "written")


@pytest.mark.store
def test_killed_recompute_resumes_to_identical_content(
    make: MakeBackfill, backend: Backend, request: pytest.FixtureRequest
) -> None:
    _announce(request)
    tally = soak.Tally((testpoints.RECOMPUTE_AFTER_COMMIT,))
    started = time.monotonic()
    outcomes = [_recompute_minimum(make, backend, tally, soak.repro(soak.run_seed(), request.node.nodeid))]
    minimum_s = time.monotonic() - started

    def trial(index: int, rng: random.Random) -> None:
        bf = make(transform={"function": "sb_test_transforms:slow"})
        point = rng.uniform(0.0, float(DAYS))
        proc, _ = _cli(bf, *RUN)
        how = _kill_at_progress(proc, _db(bf), point)
        backend.refresh(bf)
        facts = {"trial": "random", "index": index, "kill_point": round(point, 2), "written_before_kill": _written(bf)}
        outcomes.append(_outcome(_recompute_checks, (bf,), outcome=how, **facts))

    seconds = _soak(request, minimum_s, trial)
    _report(request, "recompute", outcomes, seconds)
    tally.check(soak.repro(soak.run_seed(), request.node.nodeid))


def _recompute_minimum(make: MakeBackfill, backend: Backend, tally: soak.Tally, repro: str) -> dict[str, Any]:
    """kill -9 once a chunk is committed to the shadow and before the state store records it
    (each of the two workers stops at its first such point): the shadow holds rows no partition
    is recorded for, which the resumed run must replace, not add to."""
    point = testpoints.RECOMPUTE_AFTER_COMMIT
    bf = make(transform={"function": "sb_test_transforms:slow"})
    proc, marker = _cli(bf, *RUN, pause=point, slow=0)
    _wait_for(proc, marker.exists)
    soak.kill_group(proc)
    tally.require(point, proc.returncode, repro)
    if backend.server_outlives_client:
        _settle(functools.partial(backend.commits, bf, bf.shadow_table))
    backend.refresh(bf)
    written, rows = _written(bf), int(bf.read_shadow().count())  # Sail counts in numpy
    assert written == 0 and 0 < rows < DAYS * t.ROWS_PER_DAY, (
        f"killed at {point}: want a chunk's rows in the shadow and none recorded (rows {rows}, written {written}); "
        f"reproduce with: {repro}"
    )
    return _outcome(_recompute_checks, (bf,), trial="minimum", outcome=f"{soak.KILLED} at {point}", shadow_rows=rows)


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


@dataclass
class _Promotable:
    """A validated shadow whose promotion adds a column and changes live's rows, and live as it
    was before: the two states a killed promotion may leave."""

    bf: Any
    columns: list[str]
    before: list[Any]
    passing: list[str]
    shadow_rows: list[Any]

    @classmethod
    def make(cls, make: MakeBackfill) -> _Promotable:
        bf = make(transform={"function": "sb_test_transforms:nudged_with_plane_year"}, validation=ADDS_A_COLUMN)
        bf.run(START, END)
        bf.validate()
        passing = [k for k in bf.scheme.expand(START, END) if k != "2024-01-05"]
        changed = _sorted_rows(bf.read_shadow(passing).drop(NEW_COLUMN)) != _sorted_rows(bf.read_live(passing))
        assert changed, "promotion must visibly change live's data, not only its schema"
        columns = bf.read_live().columns
        before = sorted(bf.read_live().collect())
        return cls(bf, columns, before, passing, _sorted_rows(bf.read_shadow(passing)))

    def killed(self, backend: Backend, how: str, **facts: Any) -> dict[str, Any]:
        """Once the killed process's work has settled: which state live is in, and the checks."""
        bf = self.bf
        if backend.server_outlives_client:  # the server runs a killed client's request to its end
            _settle(functools.partial(backend.commits, bf, bf.live_table))
        backend.refresh(bf)
        state = "before" if sorted(bf.read_live().select(*self.columns).collect()) == self.before else "after"
        args = (bf, state, self.passing, self.shadow_rows)
        return _outcome(_promotion_checks, args, outcome=f"{how}, live {state}", live=state, **facts)


@pytest.mark.store
def test_killed_promotion_is_all_or_nothing(
    make: MakeBackfill, backend: Backend, request: pytest.FixtureRequest
) -> None:
    _announce(request)
    repro = soak.repro(soak.run_seed(), request.node.nodeid)
    tally = soak.Tally((testpoints.PROMOTE_BEFORE_COMMIT, testpoints.PROMOTE_AFTER_COMMIT))
    started = time.monotonic()
    before, _ = _promotion_minimum(make, backend, tally, testpoints.PROMOTE_BEFORE_COMMIT, repro)
    after, lock_to_commit = _promotion_minimum(make, backend, tally, testpoints.PROMOTE_AFTER_COMMIT, repro)
    outcomes, minimum_s = [before, after], (time.monotonic() - started) / 2

    def trial(index: int, rng: random.Random) -> None:
        case = _Promotable.make(make)
        point = rng.uniform(0.0, 2.0)
        commits = functools.partial(backend.commits, case.bf, case.bf.live_table)
        proc, _ = _cli(case.bf, "promote")
        how = _kill_in_promotion(proc, _db(case.bf), commits, point, lock_to_commit)
        outcomes.append(case.killed(backend, how, trial="random", index=index, kill_point=round(point, 2)))

    seconds = _soak(request, minimum_s, trial)
    _report(request, "promote", outcomes, seconds)
    tally.check(repro)


def _promotion_minimum(
    make: MakeBackfill, backend: Backend, tally: soak.Tally, point: str, repro: str
) -> tuple[dict[str, Any], float]:
    """kill -9 at `point`: before the data commit (live has at most the added column, no data)
    or after it (live has the data, the audit trail has no row yet). Returns the trial and the
    time from the locks to the point, which times the random points before the commit."""
    case = _Promotable.make(make)
    db, commits = _db(case.bf), functools.partial(backend.commits, case.bf, case.bf.live_table)
    committed_before = commits()
    proc, marker = _cli(case.bf, "promote", pause=point)
    locked, paused = _wait_for(proc, lambda: bool(state_count(db, PROMOTING))), _wait_for(proc, marker.exists)
    soak.kill_group(proc)
    tally.require(point, proc.returncode, repro)
    audited, landed = state_count(db, AUDITED), commits() - committed_before
    outcome = case.killed(backend, soak.KILLED, trial="minimum", point=point, commits=landed, audit_rows=audited)
    want = (
        ("before", PROMOTION_COMMITS - 1) if point == testpoints.PROMOTE_BEFORE_COMMIT else ("after", PROMOTION_COMMITS)
    )
    assert (outcome["live"], landed, audited) == (*want, 0), (
        f"killed at {point}: want live {want[0]}, {want[1]} commit(s), no audit row; got live {outcome['live']}, "
        f"{landed} commit(s), {audited} audit row(s); reproduce with: {repro}"
    )
    assert locked is not None and paused is not None
    return outcome, paused - locked


def _kill_in_promotion(
    proc: subprocess.Popen[bytes], db: str, commits: Callable[[], int], point: float, lock_to_commit: float
) -> str:
    """Kill point `point` in [0, 2), timed from the promotion's own progress, not from the CLI's
    start (a cold JVM's start varies by seconds on a loaded machine): below 1, `point` of the
    lock-to-commit time after the promotion took its locks in the state store; from 1,
    (point - 1) * COMMIT_GAP_S after its commit landed in the live table's log."""
    committed_before = commits()
    if _wait_for(proc, lambda: bool(state_count(db, PROMOTING))) is None:
        return soak.kill_group(proc)
    if point < 1.0:
        return _kill_after(proc, point * lock_to_commit)
    if _wait_for(proc, lambda: commits() >= committed_before + PROMOTION_COMMITS) is None:
        return soak.kill_group(proc)
    return _kill_after(proc, (point - 1.0) * COMMIT_GAP_S)


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
