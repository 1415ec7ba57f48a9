"""A canary cut off between its commit and its checks on live (issue 57): the canary is
recorded in the state store before its commit, so the next promotion finds it, runs its checks
on live first, rolls it back if they fail, and takes no other partition as a canary meanwhile.
The kill lands at a named point (`testpoints`), not after a guessed delay."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import END, QUIET, START, MakeBackfill
from support.processes import killable_cli_env
from typer.testing import CliRunner

from shadow_backfill import testpoints
from shadow_backfill.cli.app import app

# once per engine (the e2e default): the canary's bookkeeping is the store's; its commits are any promotion's

TRAINING = "SELECT id, amount, cat FROM {table} WHERE ds = :partition"


def _query(beside: Path, text: str) -> None:
    """The consumer's query, beside the config (it must exist when the config loads)."""
    folder = beside / "queries"
    folder.mkdir(exist_ok=True)
    (folder / "training.sql").write_text(text + "\n")


def _canaries(bf: Any) -> list[tuple[str, str]]:
    with sqlite3.connect(bf.config.state_url.removeprefix("sqlite:///")) as c:
        return [(i, s) for i, s in c.execute("SELECT id, state FROM canaries ORDER BY at")]


def _live(bf: Any) -> list[tuple[Any, ...]]:
    """Live's rows now: the format's catalog may cache the table as this session loaded it,
    before another process committed (Iceberg's cache-enabled)."""
    bf.table_format.refresh(bf.live_table)
    return sorted(map(tuple, bf.read_live().collect()))


@pytest.mark.slow
def test_a_canary_killed_before_its_checks_is_checked_first_and_rolled_back(make: MakeBackfill, tmp_path: Path) -> None:
    """kill -9 of `promote --canary 2` once its canary is committed, before its checks; the
    consumer's query then breaks. The rerun says it finishes that canary, runs its checks on
    live, rolls it back, and promotes nothing else: live is as before."""
    _query(tmp_path, TRAINING)
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]})
    assert bf.run(START, END).ok and bf.validate().ok
    before = _live(bf)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    marker = Path(cfg).parent / "paused"
    env = {**killable_cli_env(bf, 0), testpoints.PAUSE_AT: f"{testpoints.CANARY_BEFORE_CHECKS}={marker}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", "promote", cfg, "--canary", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and not marker.exists():
        assert time.monotonic() < deadline, "the canary neither reached its checks nor ended"
        time.sleep(0.05)
    assert proc.poll() is None, "the promotion ended before the kill point"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    [(canary_id, state)] = _canaries(bf)
    assert state == "pending"
    assert _live(bf) != before  # the canary's 2 partitions are live, unchecked

    _query(tmp_path, "SELECT id, no_such_column FROM {table} WHERE ds = :partition")
    rerun = CliRunner().invoke(app, ["promote", cfg, "--canary", "2"])
    assert rerun.exit_code == 1, rerun.output
    lines = rerun.output.splitlines()
    assert lines[0].startswith(
        f"finished an unchecked canary of {START}, 2024-01-02 from promotion {canary_id}: failed on live "
        f"(queries/training.sql: fails on live partition {START} after promotion"
    ), rerun.output
    assert "rolled back as rollback-" in lines[0] and "canary: promoted" not in rerun.output
    assert _live(bf) == before
    assert _canaries(bf) == [(canary_id, "rolled back")]
    history = bf.history(reconcile_live=False)
    assert [(h.kind, h.step) for h in history] == [("promote", "canary"), ("rollback", None)]
    assert history[0].id == canary_id and history[1].target == canary_id


class _Killed(BaseException):
    """The in-process stand-in for kill -9 at a named point: no `except Exception` stops it."""


def _kill() -> None:
    raise _Killed


def test_a_canary_cut_off_before_its_checks_that_passes_lets_its_rest_follow(
    make: MakeBackfill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canary cut off before its checks whose checks pass on the rerun is recorded as
    checked, and the rest follows as its rest: no second canary. Before that, a canary as
    large as what is left to promote is refused (exit 2), nothing written."""
    _query(tmp_path, TRAINING)
    bf = make(validation={**QUIET, "downstream_queries": ["queries/training.sql"]})
    assert bf.run(START, END).ok and bf.validate().ok
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    version = bf.table_format.current_version(bf.live_table)
    everything = len(bf.scheme.expand(START, END))
    refused = CliRunner().invoke(app, ["promote", cfg, "--canary", str(everything)])
    assert refused.exit_code == 2, refused.output
    assert f"only {everything} partition(s) to promote" in refused.output
    assert bf.table_format.current_version(bf.live_table) == version and _canaries(bf) == []

    monkeypatch.setitem(testpoints.HOOKS, testpoints.CANARY_BEFORE_CHECKS, _kill)
    with pytest.raises(_Killed):
        bf.promote_canary(2)
    monkeypatch.delitem(testpoints.HOOKS, testpoints.CANARY_BEFORE_CHECKS)
    [(canary_id, state)] = _canaries(bf)
    assert state == "pending"

    rerun = CliRunner().invoke(app, ["promote", cfg, "--canary", "3"])
    assert rerun.exit_code == 0, rerun.output
    assert rerun.output.splitlines()[0] == (
        f"finished an unchecked canary of {START}, 2024-01-02 from promotion {canary_id}: its 4 check(s) on live passed"
    )
    assert f"rest: promoted {everything - 2} partition(s)" in rerun.output
    assert _canaries(bf) == [(canary_id, "checked")]
    canary, rest = bf.history(reconcile_live=False)
    assert (canary.id, canary.step, rest.step, rest.steps_of) == (canary_id, "canary", "rest", canary_id)
    assert sorted(canary.partitions + rest.partitions) == bf.scheme.expand(START, END)
