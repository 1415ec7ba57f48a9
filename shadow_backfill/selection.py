"""Which partitions a command works on, as one value: a range, named keys, or a relative window's
keys (`--last --lag`).

Resolved once, before the command's first step, and handed to every step after it (the run,
the validation, the dry run's plan), so they all see the same partitions even if the clock moves
past a period's end while the command runs. The CLI, `Backfill` and `Pipeline` build the same
value (`commands.Commands`); no engine, no CLI library here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadow_backfill.windows import Window


@dataclass(frozen=True)
class Selection:
    """The partitions asked for: start/end, or explicit keys (a list, or a window's keys; the
    window itself is kept for the dry run's plan, which names it)."""

    start: str | None = None
    end: str | None = None
    partitions: list[str] | None = None
    window: Window | None = None

    @classmethod
    def of_window(cls, window: Window, keys: Sequence[str]) -> Selection:
        """A window's partitions, as keys fixed now (a list: an hour a time zone skips is not one)."""
        return cls(None, None, list(keys), window)

    @classmethod
    def of_keys(cls, keys: Sequence[str]) -> Selection:
        """Exactly these partitions (what a stopped run finished, say), no range."""
        return cls(None, None, list(keys))

    @property
    def given(self) -> bool:
        """Something was named: a command that may default to every recomputed partition does so
        only when nothing was (an empty list is a choice too, and refused as one)."""
        return bool(self.start or self.end or self.partitions is not None)

    @property
    def empty(self) -> bool:
        """Named keys, and none of them: a step after it has nothing to work on."""
        return self.partitions is not None and not self.partitions and not (self.start or self.end)


__all__ = ["Selection"]
