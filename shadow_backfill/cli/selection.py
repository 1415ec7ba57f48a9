"""Which partitions a command works on: a range, a list, or a relative window (`--last --lag`).

The window is resolved to a list of keys once, here, so the command's later steps (the progress
bar's plan, the run, the validation, the dry run's plan) all see the same partitions even if the
clock moves past a period's end while the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

import typer

from shadow_backfill.cli.groups import F, Option, option_group
from shadow_backfill.cli.output import split_partitions
from shadow_backfill.errors import UsageError
from shadow_backfill.partitions import MAX_PARTITIONS
from shadow_backfill.preflight import check_before_engine
from shadow_backfill.selection import Selection
from shadow_backfill.windows import check_now, parse_duration, window_time

if TYPE_CHECKING:
    from pathlib import Path

    from shadow_backfill.config import BackfillConfig
    from shadow_backfill.windows import Window

LastOption = typer.Option(
    None,
    "--last",
    min=1,
    max=MAX_PARTITIONS,
    help="The N newest complete partitions (instead of --start/--end); see --lag and SHADOW_BACKFILL_NOW.",
)
LagOption = typer.Option(
    None,
    "--lag",
    help="With --last: a partition is complete once it ended this long ago (e.g. 2d, 6h; default 0).",
)
AsOfOption = typer.Option(
    None,
    "--as-of",
    metavar="DATETIME",
    help="With --last: count the window from this instant instead of now (ISO 8601, e.g. a scheduler's "
    "logical date 2024-01-12T00:00Z; without an offset, the config's time_zone).",
)


@dataclass(frozen=True)
class Asked:
    """The selection options as the user gave them: one option group for every command that
    works on partitions (`selection_options` adds it), checked and resolved in one place."""

    start: str | None = None
    end: str | None = None
    partitions: str | None = None
    last: int | None = None
    lag: str | None = None
    as_of: str | None = None

    def check(self, *, as_json: bool = False, dry_run: bool = False) -> None:
        """`check_selection` of these options."""
        check_selection(
            self.start, self.end, self.partitions, self.last, self.lag, self.as_of, as_json=as_json, dry_run=dry_run
        )

    def named(self) -> Selection:
        """The partitions the options name before the engine starts: none for `--last`, whose
        window is read from live (`resolve`)."""
        if self.last is not None:
            return Selection()
        return Selection(self.start, self.end, split_partitions(self.partitions))

    def resolve(self, source: Windowed) -> Selection:
        """The partitions these options name (`select`)."""
        return select(source, self.start, self.end, self.partitions, self.last, self.lag, self.as_of)


_RANGE = "Comma-separated partitions instead of a range."


def selection_options(
    start: str = "First partition.", *, partitions: str = _RANGE, window: bool = True
) -> Callable[[F], F]:
    """Give a command the selection's options, declared once here: `--start`, `--end`,
    `--partitions` and, with `window`, `--last`/`--lag`/`--as-of`. The command takes them as one
    `asked: Asked` parameter; they are listed in `--help` right after its argument (why not one
    option per command: 9 commands declared them 40 times, with drifting help texts)."""
    options: list[Option] = [
        ("start", str | None, typer.Option(None, help=start)),
        ("end", str | None, typer.Option(None, help="Last partition (included).")),
        ("partitions", str | None, typer.Option(None, help=partitions)),
    ]
    if window:
        options += [
            ("last", int | None, LastOption),
            ("lag", str | None, LagOption),
            ("as_of", str | None, AsOfOption),
        ]
    assert [name for name, _, _ in options] == [f.name for f in fields(Asked)][: len(options)]
    return option_group("asked", Asked, options, after_argument=True)


def check_selection(
    start: str | None,
    end: str | None,
    partitions: str | None,
    last: int | None,
    lag: str | None,
    as_of: str | None = None,
    *,
    as_json: bool = False,
    dry_run: bool = False,
) -> None:
    """Options that cannot go together, and a `SHADOW_BACKFILL_NOW` that is empty or no
    timestamp, refused (exit 2) before the config opens anything."""
    check_now()
    if last is None and lag is not None:
        raise UsageError("--lag goes with --last (the N newest complete partitions)")
    given = [name for name, value in (("--start", start), ("--end", end), ("--partitions", partitions)) if value]
    if last is not None and given:
        raise UsageError(f"--last chooses the partitions itself: drop {' and '.join(given)}")
    if last is None and as_of is not None:
        raise UsageError("--as-of goes with --last (the N newest partitions complete at that instant)")
    if lag is not None:
        parse_duration(lag, "--lag")
    if as_of is not None:
        window_time(ZoneInfo("UTC"), as_of)


def check_first(
    config: BackfillConfig,
    asked: Asked,
    *,
    required: bool = True,
    live: bool = True,
    report_dir: Path | None = None,
) -> None:
    """The command's checks that need no engine, before PySpark is imported (exit 2, nothing
    written); a `--last` window's partitions come from live, with the engine."""
    needed = required and asked.last is None
    check_before_engine(config, asked.named(), required=needed, live=live, report_dir=report_dir)


class Windowed(Protocol):
    """What resolves `--last --lag`: a `Backfill`, or a `Pipeline` (through its first layer)."""

    def last_window(self, last: int, lag: str, as_of: str | None = None) -> Window: ...

    def window_keys(self, window: Window) -> list[str]: ...


def select(
    bf: Windowed,
    start: str | None,
    end: str | None,
    partitions: str | None,
    last: int | None,
    lag: str | None,
    as_of: str | None = None,
) -> Selection:
    """The command's partitions (the options passed `check_selection`)."""
    if last is None:
        return Selection(start, end, split_partitions(partitions))
    window = bf.last_window(last, lag or "0", as_of)
    return Selection(None, None, bf.window_keys(window), window)
