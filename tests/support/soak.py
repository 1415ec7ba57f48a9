"""The kill soak's bookkeeping (tests/e2e/test_kill.py), free of PySpark so the unit tier shows it
holds: what counts as a kill, the guaranteed minimum, the time budget and the seed.

A trial counts as a kill only when its process died of the SIGKILL the test sent (return code
-SIGKILL): a process that ended before the signal, even one whose group the signal still
reached as an unreaped zombie, returns its own exit code, so it can never meet the minimum. The
minimum names points (`testpoints`) each of which must have seen one real kill, or the test fails.

Past the minimum, trials at seeded random points run until the process's budget is spent:
`SB_SOAK_SECONDS` seconds (default 0: the minimum only; CI sets 60 per group), shared by every
soak test of the pytest process, each test taking an equal share of what the earlier ones left.
`SB_KILL_TRIALS=<n>` instead runs exactly n random trials per test whatever the budget (to
replay a failing trial: trial i needs n = i + 1). The seed is new on every run and printed;
`SB_KILL_SEED=<int>` replays one: a test's points depend only on the seed, the test's name and
the trial's index.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

SEED_ENV = "SB_KILL_SEED"
BUDGET_ENV = "SB_SOAK_SECONDS"
TRIALS_ENV = "SB_KILL_TRIALS"
KILLED = "killed"
FINISHED = "finished before the kill"


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: not {'an integer' if kind is int else 'a number'}") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r}: must not be negative")
    return value


def choose_seed(env: Mapping[str, str]) -> int:
    """`SB_KILL_SEED` when set, else a new seed from the OS's entropy and the clock."""
    given = _number(env, SEED_ENV, int)
    if given is not None:
        return int(given)
    return int.from_bytes(os.urandom(4), "big") ^ (time.time_ns() & 0xFFFF_FFFF)


@functools.cache
def run_seed() -> int:
    """This pytest process's seed: chosen once, so every kill test of a run reports the same one."""
    return choose_seed(os.environ)


def ended_how(returncode: int | None) -> str:
    """KILLED only for a process our SIGKILL ended; any other end is FINISHED (before the kill)."""
    return KILLED if returncode == -signal.SIGKILL else FINISHED


def kill_group(proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """SIGKILL to the process's whole group (the CLI and its engine), then how it ended. The
    signal is sent whatever `proc` looks like: its return code, not a poll before the kill,
    says whether the kill was real."""
    with contextlib.suppress(ProcessLookupError):  # the group is gone: it ended by itself
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=timeout)
    return ended_how(proc.returncode)


@dataclass
class Tally:
    """The minimum's named points and the trials that ran at them."""

    required: tuple[str, ...]
    seen: list[tuple[str, str]] = field(default_factory=list)

    def record(self, point: str, returncode: int | None) -> str:
        how = ended_how(returncode)
        self.seen.append((point, how))
        return how

    def unmet(self) -> list[str]:
        """The required points no trial really killed at."""
        return [p for p in self.required if (p, KILLED) not in self.seen]

    def require(self, point: str, returncode: int | None, repro: str) -> None:
        """Record a trial of the minimum at `point`, and fail now unless it was a real kill."""
        how = self.record(point, returncode)
        assert how == KILLED, f"the process ended before its kill at {point} ({returncode=}); reproduce with: {repro}"

    def check(self, repro: str) -> None:
        missing = self.unmet()
        assert not missing, f"no real kill at {missing} (trials: {self.seen}); reproduce with: {repro}"


@dataclass
class Plan:
    """One test's share of the soak: a count when `SB_KILL_TRIALS` is set, else a deadline.

    A share shorter than a trial (60 s over ten tests, and a classic trial takes 20-80 s) would
    start a trial in whichever tests come first and starve the rest, the same ones every run:
    so a trial that does not fit in what is left of the share starts only on a coin weighted by
    how much of it fits (`coin`, the run's seeded draw in [0, 1)). Over many tests the spend
    matches the budget, and which backends get the extra trials rotates with the seed."""

    started: float
    deadline: float
    trials: int | None
    clock: Callable[[], float]
    trial_seconds: float = 0.0
    coin: Callable[[], float] = field(default=lambda: 0.0)

    def go_on(self, done: int) -> bool:
        if self.trials is not None:
            return done < self.trials
        left = self.deadline - self.clock()
        if left <= 0:
            return False
        return left >= self.trial_seconds or self.coin() < left / self.trial_seconds


@dataclass
class Budget:
    """The soak seconds of a pytest process, handed out test by test."""

    seconds: float
    trials: int | None = None
    clock: Callable[[], float] = time.monotonic
    spent: float = 0.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Budget:
        trials = _number(env, TRIALS_ENV, int)
        return cls(seconds=_number(env, BUDGET_ENV, float) or 0.0, trials=None if trials is None else int(trials))

    def plan(self, tests_left: int, trial_seconds: float = 0.0, coin: Callable[[], float] = lambda: 0.0) -> Plan:
        """An equal share of what is left among this test and the soak tests after it;
        `trial_seconds`: what a trial of this test takes (its minimum's trials tell)."""
        now = self.clock()
        share = max(0.0, self.seconds - self.spent) / max(1, tests_left)
        return Plan(now, now + share, self.trials, self.clock, trial_seconds, coin)

    def close(self, plan: Plan) -> float:
        """Charge the plan's time (its overshoot included, so later tests get less); returns it."""
        took = self.clock() - plan.started
        self.spent += took
        return took


@functools.cache
def budget() -> Budget:
    """The pytest process's budget, read from the environment once."""
    return Budget.from_env(os.environ)


def repro(seed: int, test: str, trials: int | None = None) -> str:
    """The one line that replays a test's points (the first `trials` random ones)."""
    count = f"{TRIALS_ENV}={trials} " if trials is not None else f"{BUDGET_ENV}=0 "
    return f"{SEED_ENV}={seed} {count}python -m pytest '{test}' -p no:cacheprovider"
