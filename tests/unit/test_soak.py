"""The kill soak's bookkeeping (tests/support/soak.py), the test of the kill tests: a process that
ended before its kill never meets the minimum, even when the kill signal still reached its
group, and only a real kill does. Real processes, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import soak

POINTS = ("promote.before_commit", "promote.after_commit")


def _start(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def _ended_unreaped(proc: subprocess.Popen[bytes]) -> None:
    """Wait until the process has exited, leaving it a zombie: its group still exists, so a
    kill sent now is delivered (the race of a kill that comes just too late)."""
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)


def test_trials_that_finished_before_their_kill_never_meet_the_minimum() -> None:
    tally = soak.Tally(POINTS)
    for point, code in zip(POINTS, ("pass", "raise SystemExit(1)"), strict=True):
        proc = _start(code)
        _ended_unreaped(proc)
        assert soak.kill_group(proc) == soak.FINISHED  # the signal was sent, and landed on nothing alive
        tally.record(point, proc.returncode)
    assert tally.unmet() == list(POINTS)
    with pytest.raises(AssertionError, match=r"no real kill at \['promote.before_commit', 'promote.after_commit'\]"):
        tally.check("SB_KILL_SEED=1 python -m pytest x")


def test_only_a_real_kill_meets_its_point() -> None:
    tally = soak.Tally(POINTS)
    waiting = _start("import threading; threading.Event().wait()")
    tally.record(POINTS[0], 0)  # finished at the first point: not counted
    assert soak.kill_group(waiting) == soak.KILLED
    tally.record(POINTS[1], waiting.returncode)
    assert tally.unmet() == [POINTS[0]]
    tally.record(POINTS[0], waiting.returncode)
    tally.check("unused")


def test_a_process_reaped_before_the_kill_is_finished() -> None:
    proc = _start("pass")
    proc.wait()
    assert soak.kill_group(proc) == soak.FINISHED


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_is_shared_by_the_tests_left_and_charged_with_overshoot() -> None:
    clock = _Clock()
    budget = soak.Budget(seconds=60, clock=clock)
    first = budget.plan(tests_left=3)
    assert first.go_on(0) and first.deadline == 120
    clock.now = 130  # the last trial ran 10 s past the share
    assert not first.go_on(5)
    assert budget.close(first) == 30
    second = budget.plan(tests_left=2)
    assert second.deadline == 130 + 15
    clock.now += 100
    budget.close(second)
    assert not budget.plan(tests_left=1).go_on(0)  # nothing left: the minimum only


def test_a_trial_longer_than_the_share_left_starts_on_a_weighted_coin() -> None:
    clock = _Clock()
    draws = iter([0.2, 0.3])
    plan = soak.Budget(seconds=10, clock=clock).plan(tests_left=1, trial_seconds=40, coin=lambda: next(draws))
    assert plan.go_on(0)  # 10 of 40 s fit: 0.2 < 0.25
    clock.now += 2
    assert not plan.go_on(1)  # 8 of 40 s fit: 0.3 >= 0.2
    assert soak.Budget(seconds=80, clock=clock).plan(tests_left=1, trial_seconds=40, coin=lambda: 1.0).go_on(0)


def test_no_budget_means_the_minimum_only_and_a_count_overrides_it() -> None:
    assert not soak.Budget.from_env({}).plan(tests_left=1).go_on(0)
    counted = soak.Budget.from_env({soak.TRIALS_ENV: "2", soak.BUDGET_ENV: "0"}).plan(tests_left=1)
    assert [counted.go_on(n) for n in range(3)] == [True, True, False]


def test_the_seed_is_given_or_new_and_bad_numbers_are_named() -> None:
    assert soak.choose_seed({soak.SEED_ENV: "42"}) == 42
    assert soak.choose_seed({}) >= 0
    with pytest.raises(ValueError, match="SB_KILL_SEED='x': not an integer"):
        soak.choose_seed({soak.SEED_ENV: "x"})
    with pytest.raises(ValueError, match="SB_SOAK_SECONDS='-1': must not be negative"):
        soak.Budget.from_env({soak.BUDGET_ENV: "-1"})
    line = soak.repro(7, "tests/e2e/test_kill.py::t[iceberg]", trials=3)
    assert (
        line
        == "SB_KILL_SEED=7 SB_KILL_TRIALS=3 python -m pytest 'tests/e2e/test_kill.py::t[iceberg]' -p no:cacheprovider"
    )
