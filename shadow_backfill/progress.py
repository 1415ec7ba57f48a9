"""How the engine says how far a long command has gone, without knowing who listens.

Why a protocol of our own: the main job is four steps (recompute, validate, promote, report;
in a pipeline, a recompute and a validation per layer), and a bar that wraps only the first one
freezes at `60/60` through minutes of validation. The engine names each step as it starts it
and counts what it finished; the CLI draws that with Rich (`cli.progress`), a script or a test
records it, and everyone else gets `NO_PROGRESS`, which does nothing. This module imports
nothing, so any engine module may take a `Progress` without pulling in a terminal library.

A step is a handle (`Step`), so the layers of a pipeline, which recompute side by side in
threads, each advance their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Step(Protocol):
    """One step under way: `advance` as its units finish, `done` once it is over."""

    def advance(self, count: int = 1) -> None: ...

    def done(self) -> None: ...


class Progress(Protocol):
    """Whoever follows a command: a step per stage, named as the user knows it (`recompute`,
    `validate`, `promote`, `report`, or `recompute <layer>`), with how many units it has (a
    partition each), or None when it cannot be counted."""

    def step(self, name: str, total: int | None = None) -> Step: ...


class _NoStep:
    def advance(self, count: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


class NoProgress:
    """The default listener: nobody follows, nothing happens."""

    def step(self, name: str, total: int | None = None) -> Step:
        return _NoStep()


NO_PROGRESS: Progress = NoProgress()


class Recorder:
    """A `Progress` that keeps what it was told, for a script that logs the job's steps instead
    of drawing them: `steps`, in the order begun, each `[name, total, advanced, done]`."""

    def __init__(self) -> None:
        self.steps: list[list[Any]] = []

    def step(self, name: str, total: int | None = None) -> Step:
        entry: list[Any] = [name, total, 0, False]
        self.steps.append(entry)
        return _Recorded(entry)

    @property
    def names(self) -> list[str]:
        return [entry[0] for entry in self.steps]


class _Recorded:
    def __init__(self, entry: list[Any]) -> None:
        self._entry = entry

    def advance(self, count: int = 1) -> None:
        self._entry[2] += count

    def done(self) -> None:
        self._entry[3] = True


@contextmanager
def whole_step(progress: Progress, name: str, total: int | None = None) -> Iterator[None]:
    """A step whose units finish together (one commit promotes every partition; the reports are
    written from one read): counted whole and done when the block ends, left unfinished by an
    error, so the bar shows where the job stopped."""
    step = progress.step(name, total)
    yield
    step.advance(total or 0)
    step.done()


__all__ = ["NO_PROGRESS", "NoProgress", "Progress", "Recorder", "Step", "whole_step"]
