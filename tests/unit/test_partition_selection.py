"""The `Selection` value (`shadow_backfill.selection`): what a command's partitions are, resolved
once and shared by the CLI, `Backfill` and `Pipeline`, as pure code (no Spark, no CLI library)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from shadow_backfill.selection import Selection
from shadow_backfill.windows import Window

NOON = dt.datetime(2024, 1, 3, 12, tzinfo=dt.timezone.utc)


def _window(*days: int) -> Window:
    periods = tuple(dt.datetime(2024, 1, d) for d in days)
    return Window(now=NOON, lag=dt.timedelta(0), last=len(days), zone="UTC", periods=periods)


def test_nothing_named_lets_a_command_choose_its_default() -> None:
    assert not Selection().given
    assert not Selection().empty


@pytest.mark.parametrize(
    "chosen",
    [Selection(start="2024-01-01"), Selection(end="2024-01-02"), Selection(partitions=["2024-01-01"])],
)
def test_a_bound_or_a_list_is_a_choice(chosen: Selection) -> None:
    assert chosen.given
    assert not chosen.empty


def test_an_empty_list_is_a_choice_of_nothing_not_every_partition() -> None:
    """A stopped run that finished nothing leaves `[]` to judge: that must not read as "no
    partitions named" (every recomputed partition) in a later step."""
    nothing = Selection.of_keys([])
    assert nothing.given
    assert nothing.empty
    assert not Selection(start="2024-01-01", partitions=[]).empty


def test_named_keys_are_copied_and_keep_their_order() -> None:
    keys = ["2024-01-02", "2024-01-01"]
    chosen = Selection.of_keys(keys)
    keys.append("2024-01-03")
    assert chosen == Selection(None, None, ["2024-01-02", "2024-01-01"])
    assert chosen.window is None


def test_a_window_is_fixed_as_keys_and_kept_for_the_plan() -> None:
    window = _window(1, 2)
    chosen = Selection.of_window(window, ("2024-01-01", "2024-01-02"))
    assert (chosen.start, chosen.end) == (None, None)
    assert chosen.partitions == ["2024-01-01", "2024-01-02"]
    assert chosen.window is window


def test_a_selection_is_a_value() -> None:
    chosen = Selection("2024-01-01", "2024-01-31")
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.start = "2024-02-01"  # type: ignore[misc]
    assert chosen == Selection("2024-01-01", "2024-01-31", None, None)


def test_the_cli_resolves_to_the_same_value() -> None:
    """One definition: the CLI's `select` returns the core's `Selection`, which both facades take."""
    from shadow_backfill.cli import selection as cli

    assert cli.Selection is Selection

    class Newest:
        def last_window(self, last: int, lag: str, as_of: str | None = None) -> Window:
            return _window(*range(3 - last, 3))

        def window_keys(self, window: Window) -> list[str]:
            return [p.strftime("%Y-%m-%d") for p in window.periods]

    assert cli.select(Newest(), "2024-01-01", None, "2024-01-02,2024-01-03", None, None) == Selection(
        "2024-01-01", None, ["2024-01-02", "2024-01-03"]
    )
    chosen = cli.select(Newest(), None, None, None, 2, "1d")
    assert chosen.partitions == ["2024-01-01", "2024-01-02"]
    assert chosen.window is not None
