"""The engine's progress (`shadow_backfill.progress`) drawn with Rich on stderr: a line per step
(recompute, validate, promote, report; a pipeline's per layer), each kept on screen once done,
so the terminal shows which step the job is in and which ones it finished.

Nothing is drawn when stderr is not a terminal (a scheduler's log, a pipe) or with `--quiet`:
the engine then gets `NO_PROGRESS`. stdout is left to the result, so `--json` stays one
document whatever stderr shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from shadow_backfill.cli.output import console as stderr
from shadow_backfill.progress import NO_PROGRESS, Progress, Step


class _Mark(SpinnerColumn):
    """A spinner while the step runs, a tick once it is done (a step with no count, such as the
    report, is never `finished` by Rich's own measure)."""

    def render(self, task: Any) -> Any:
        return Text("✓", style="green") if task.fields.get("done") else super().render(task)


class _Bar:
    def __init__(self, bars: RichProgress, task: TaskID) -> None:
        self._bars = bars
        self._task = task

    def advance(self, count: int = 1) -> None:
        self._bars.advance(self._task, count)

    def done(self) -> None:
        task = next(t for t in self._bars.tasks if t.id == self._task)
        if task.total is None:
            self._bars.update(self._task, total=max(task.completed, 1), completed=max(task.completed, 1))
        self._bars.update(self._task, done=True)
        self._bars.stop_task(self._task)


class Bars:
    """`Progress` as Rich bars: each step a new line under the ones before."""

    def __init__(self, bars: RichProgress) -> None:
        self._bars = bars

    def step(self, name: str, total: int | None = None) -> Step:
        return _Bar(self._bars, self._bars.add_task(name, total=total, done=False))


@contextmanager
def progress_bars(quiet: bool = False, console: Console | None = None) -> Iterator[Progress]:
    """The progress a command hands the engine: bars on `console` (stderr), or `NO_PROGRESS`
    when quiet or when the console is not a terminal."""
    console = console or stderr
    if quiet or not console.is_terminal:
        yield NO_PROGRESS
        return
    columns = (
        _Mark(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    # stdout is the result's (a --json document whole): only stderr's own writes go above the bars
    with RichProgress(*columns, console=console, transient=False, redirect_stdout=False) as bars:
        yield Bars(bars)


__all__ = ["Bars", "progress_bars"]
