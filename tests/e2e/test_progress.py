"""The main job at a terminal (issue 60, items 3 and 9): a real `backfill` in a CLI process of
its own whose stderr is a pseudo-terminal (Python's `pty`), as a user's is. Each step shows as
a line of its own and ends ticked, in the job's order (recompute, validate, promote, report):
the bar no longer freezes on the recompute while the other steps run. stdout, not a terminal,
leads with the counts, the failure with its first reason, the promotion id and the report."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from support import END, QUIET, START, MakeBackfill, killable_cli_env
from support.pipelines import make_pipeline

from shadow_backfill.progress import Recorder

STEPS = ("recompute", "validate", "promote", "report")


def _read_terminal(master: int, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """Everything written to the terminal until the process ends (read as it comes: a full
    terminal buffer would block the writer)."""
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=timeout)
    text = b"".join(chunks).decode(errors="replace")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # the terminal's colours and cursor moves


def _at_a_terminal(args: list[str], env: dict[str, str], tmp_path: Path) -> tuple[int, str, str]:
    """A CLI process whose stderr is a pseudo-terminal: its exit code, what the terminal showed
    (kept in tmp_path for a failure's reader) and its stdout."""
    master, terminal = pty.openpty()
    stdout = tmp_path / "stdout.txt"
    with stdout.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shadow_backfill.cli", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=terminal,
            env={**env, "COLUMNS": "120", "SHADOW_BACKFILL_LOG_DIR": str(tmp_path / "logs")},
        )
        os.close(terminal)
        try:
            shown = _read_terminal(master, proc, timeout=600)
        finally:
            os.close(master)
    (tmp_path / "terminal.txt").write_text(shown)
    return proc.returncode, shown, stdout.read_text()


def test_backfill_shows_every_step_on_a_terminal(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    bf = make_backfill(transform={"function": "sb_test_transforms:drift_on_one_day"}, validation=QUIET)
    args = ["backfill", str(bf.config_path), "--start", START, "--end", END]
    code, shown, summary = _at_a_terminal(args, killable_cli_env(bf, 0), tmp_path)
    assert code == 1, shown[-3000:]  # one day failed validation
    assert "✓ recompute" in shown, shown[-3000:]
    last_frame = shown[shown.rindex("✓ recompute") :]
    at = [last_frame.find(f"✓ {step}") for step in STEPS]
    assert -1 not in at and at == sorted(at), last_frame
    assert "10/10" in last_frame.splitlines()[0], "every partition counted in the recompute"

    lines = summary.splitlines()
    assert lines[0].startswith(f"backfill of {bf.live_table}: 10 partition(s): 9 pass, 0 warn, 1 fail"), summary
    assert any(line.startswith("failed ") and ": " in line for line in lines[1:3]), summary
    promotion = bf.history(reconcile_live=False)[-1].id
    assert promotion in summary and "report: " in summary
    assert START not in summary.replace(f"failed {START}", ""), "no row per partition without --verbose"


def test_promote_shows_its_step_unless_quiet(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    """The promotion on its own (after `run` and `validate`) shows its one step, ticked when the
    commit is done, and not ticked when the promotion is refused; `--quiet` draws nothing."""
    bf = make_backfill(validation=QUIET)
    bf.run(START, END)
    bf.validate(START, END)
    env = killable_cli_env(bf, 0)
    code, shown, summary = _at_a_terminal(["promote", str(bf.config_path), "--quiet"], env, tmp_path)
    assert code == 0, shown[-3000:]
    assert "promote" not in shown and "✓" not in shown, shown
    assert "promoted" in summary, summary
    bf.rollback(promotion_id=bf.history(reconcile_live=False)[-1].id)
    code, shown, _ = _at_a_terminal(["promote", str(bf.config_path)], env, tmp_path)
    assert code == 1 and "validate again" in shown, shown[-3000:]  # live changed: refused
    assert "✓ promote" not in shown, "a refused promotion is not shown done"
    bf.validate(START, END)
    code, shown, _ = _at_a_terminal(["promote", str(bf.config_path)], env, tmp_path)
    assert code == 0, shown[-3000:]
    assert "✓ promote" in shown, shown[-3000:]


def test_a_pipeline_reports_a_step_per_layer_in_order(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    """A pipeline's job: each layer's recompute (side by side) and validation (upstream first),
    then the set's promotion and the report, each step done and counted whole."""
    probe = make_backfill(seed_live=False)
    pipeline, _ = make_pipeline(make_backfill, tmp_path, probe.spark)
    recorder = Recorder()
    pipeline.backfill(START, END, report_dir=tmp_path / "report", progress=recorder)
    order = list(pipeline.order)
    assert recorder.names == [
        *(f"recompute {key}" for key in order),
        *(f"validate {key}" for key in order),
        "promote",
        "report",
    ]
    assert all(done for *_, done in recorder.steps), recorder.steps
    days = len(probe.scheme.expand(START, END))
    assert [advanced for name, _, advanced, _ in recorder.steps if name.startswith("recompute")] == [days] * len(order)
