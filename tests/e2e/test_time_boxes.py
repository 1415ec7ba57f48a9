"""Time boxes and graceful stops: no chunk starts after the limit, the chunks in flight finish,
the command exits 4 naming what remains, and a rerun finishes the range.

The limits use a fake clock (waiting for a real deadline would be slow); SIGTERM is sent to a
real CLI process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from support import END, QUIET, START, MakeBackfill, killable_cli_env, state_count
from support.clocks import DEADLINE, Ticks
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.cli.render import print_backfill
from shadow_backfill.timebox import TimeBox


# once per engine (the e2e default): when to stop is the runner's: the format cannot change it
def test_a_time_box_stops_at_a_chunk_boundary_and_a_rerun_finishes(make: MakeBackfill) -> None:
    bf = make(validation=QUIET)
    box = TimeBox(DEADLINE, Ticks(2), "--until 06:00")
    stopped = bf.run(START, END, chunk_size=2, max_parallel=1, timebox=box)
    assert stopped.stopped == "--until 06:00 (at 2024-01-12T06:00:00+00:00)"
    assert len(stopped.written) == 4 and len(stopped.not_started) == 6 and not stopped.failed
    assert not stopped.complete
    status = {r.partition: r.status.value for r in bf.status()}
    assert sorted(k for k, s in status.items() if s == "written") == sorted(stopped.written)

    resumed = bf.run(START, END)
    assert resumed.complete and sorted(resumed.written) == sorted(stopped.not_started)
    expected = t.events_v2(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    assert_df_equality(bf.read_shadow(), expected, ignore_row_order=True, ignore_nullable=True)


def test_a_stopped_backfill_exits_4_and_promotes_only_what_it_finished(make: MakeBackfill) -> None:
    """`--max-duration 0`: the limit has passed before the first chunk. With `--promote-partial`
    the partitions already written are validated and promoted; the rest stay for the next run."""
    bf = make(validation=QUIET)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    first = CliRunner().invoke(app, ["run", cfg, "--partitions", START])
    assert first.exit_code == 0, first.output

    held = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END, "--max-duration", "0"])
    assert held.exit_code == 4, held.output
    assert "stopped by --max-duration 0" in held.output and "9 of 10 partition(s) remain" in held.output
    assert "validate: skipped" in held.output and bf.history(reconcile_live=False) == []

    args = ["backfill", cfg, "--start", START, "--end", END, "--max-duration", "0", "--promote-partial"]
    partial = CliRunner().invoke(app, args)
    assert partial.exit_code == 4, partial.output
    assert "1 pass, 0 warn, 0 fail" in partial.output and "promoted 1 partition(s)" in partial.output
    assert [h.partitions for h in bf.history(reconcile_live=False)] == [[START]]

    rest = CliRunner().invoke(app, ["backfill", cfg, "--start", START, "--end", END])
    assert rest.exit_code == 0, rest.output
    assert "promoted 9 partition(s)" in rest.output and "1 passing partition(s) already live" in rest.output

    # a stop that comes after the last chunk started, with --promote-partial, leaves nothing:
    # the job was judged whole and ends as an unstopped one (no exit 4)
    late = bf.backfill(START, END, timebox=TimeBox(DEADLINE, Ticks(0)), promote_partial=True)
    assert late.run.stopped is not None and not late.run.not_started and late.validation.validation_id
    print_backfill(late)  # raises typer.Exit on any exit code but 0


@pytest.mark.slow
def test_sigterm_stops_a_real_run_at_a_chunk_boundary(make_backfill: MakeBackfill) -> None:
    """A scheduler's stop: SIGTERM to the CLI process. The chunk in flight finishes, no other
    starts, exit 4; a rerun finishes with the same content as one uninterrupted run."""
    bf = make_backfill(transform={"function": "sb_test_transforms:slow"}, spark={"master": "local[1]"})
    db = bf.config.state_url.removeprefix("sqlite:///")
    cli = [sys.executable, "-m", "shadow_backfill.cli", "run", str(bf.config_path)]  # type: ignore[attr-defined]
    cli += ["--start", START, "--end", END, "--chunk-size", "1", "--max-parallel", "1"]
    proc = subprocess.Popen(
        cli, env=killable_cli_env(bf, 1.5), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (state_count(db, "SELECT count(*) FROM partitions WHERE status = 'written'") or 0) >= 2:
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.2)
        _out, err = proc.communicate(timeout=180)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 4, err[-3000:]
    assert "stopped: stopped by SIGTERM:" in err and "partition(s) remain" in err
    written = state_count(db, "SELECT count(*) FROM partitions WHERE status = 'written'") or 0
    assert 2 <= written < 10
    assert state_count(db, "SELECT count(*) FROM partitions WHERE status IN ('running', 'failed')") == 0

    resumed = bf.run(START, END)
    assert resumed.complete and len(resumed.skipped) == written
    expected = t.events(bf.spark, [bf.scheme.value(k) for k in bf.scheme.expand(START, END)])
    assert_df_equality(bf.read_shadow(), expected, ignore_row_order=True, ignore_nullable=True)
