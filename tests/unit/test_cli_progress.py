"""Progress for every step (issue 60, item 3): the CLI draws each step the engine names as a
line of its own on a terminal, keeps the finished ones, and draws nothing with `--quiet` or off
a terminal (a scheduler's log). The engine's side (`shadow_backfill.progress`) needs no Rich:
`NO_PROGRESS` by default, `whole_step` for a step finished in one go. The engine's steps in
order, from a real backfill, are checked in tests/e2e/test_progress.py."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from shadow_backfill.cli.progress import Bars, progress_bars
from shadow_backfill.progress import NO_PROGRESS, Progress, whole_step

STEPS = [("recompute", 60), ("validate", 60), ("promote", 57), ("report", None)]


def _job(progress: Progress) -> None:
    """The main job's steps as the engine reports them."""
    for name, total in STEPS[:2]:
        step = progress.step(name, total)
        for _ in range(total or 0):
            step.advance()
        step.done()
    with whole_step(progress, "promote", 57):
        pass
    with whole_step(progress, "report"):
        pass


def _terminal() -> tuple[Console, StringIO]:
    text = StringIO()
    return Console(file=text, force_terminal=True, width=100, color_system=None), text


def test_each_step_is_a_line_of_its_own_in_order_and_stays_done() -> None:
    console, text = _terminal()
    with progress_bars(console=console) as progress:
        assert isinstance(progress, Bars)
        _job(progress)
    final = text.getvalue().rsplit("\x1b[2K", 1)[-1]  # the last frame Rich drew
    shown = [line for line in final.splitlines() if line.strip() and not line.startswith("\x1b")]
    names = [line.split()[1] for line in shown]
    assert names == [name for name, _ in STEPS], text.getvalue()
    assert all(line.lstrip().startswith("✓") for line in shown), shown
    assert "60/60" in shown[0] and "60/60" in shown[1] and "57/57" in shown[2] and "1/1" in shown[3]


@pytest.mark.parametrize("quiet, terminal", [(True, True), (False, False)])
def test_nothing_is_drawn_when_quiet_or_off_a_terminal(quiet: bool, terminal: bool) -> None:
    text = StringIO()
    console = Console(file=text, force_terminal=terminal)
    with progress_bars(quiet, console=console) as progress:
        assert progress is NO_PROGRESS
        _job(progress)
    assert text.getvalue() == ""


def test_a_step_an_error_cut_short_is_not_marked_done() -> None:
    console, text = _terminal()
    with pytest.raises(RuntimeError), progress_bars(console=console) as progress, whole_step(progress, "promote", 57):
        raise RuntimeError("live changed")
    last = [line for line in text.getvalue().splitlines() if "promote" in line][-1]
    assert "✓" not in last and "0/57" in last, last
