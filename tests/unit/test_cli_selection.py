"""The selection's options are declared once (`cli.selection.selection_options`) and reach a
command as one `Asked` value; a command without the window refuses `--last`."""

from __future__ import annotations

from typing import Any

import typer
from typer.main import get_command
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.cli.selection import Asked, selection_options


def _toy(window: bool) -> tuple[typer.Typer, list[tuple[Asked, str, bool]]]:
    toy, seen = typer.Typer(), []

    @toy.command()
    @selection_options("First.", window=window)
    def cmd(asked: Asked, name: str = typer.Argument(...), flag: bool = typer.Option(False)) -> None:
        seen.append((asked, name, flag))

    @toy.command()
    def other() -> None:  # a second command, so that `cmd` is invoked by name
        pass

    return toy, seen


def test_the_options_reach_the_command_as_one_value() -> None:
    toy, seen = _toy(window=True)
    result = CliRunner().invoke(toy, ["cmd", "x", "--start", "2024-01-01", "--last", "3", "--lag", "2d", "--flag"])
    assert result.exit_code == 0, result.output
    assert seen == [(Asked(start="2024-01-01", last=3, lag="2d"), "x", True)]


def test_a_command_without_the_window_refuses_last() -> None:
    toy, seen = _toy(window=False)
    result = CliRunner().invoke(toy, ["cmd", "x", "--last", "3"])
    assert result.exit_code == 2 and seen == []


def test_every_command_lists_the_group_after_its_argument_with_one_wording() -> None:
    group: Any = get_command(app)  # Typer's own click: read by attribute
    commands = [*group.commands.values(), *group.commands["pipeline"].commands.values()]
    with_start = [c for c in commands if any(p.name == "start" for p in c.params)]
    assert len(with_start) == 9  # run, validate, backfill; the pipeline's run .. backfill
    for command in with_start:
        names = [p.name for p in command.params]
        assert names[1:4] == ["start", "end", "partitions"], command.name
        ends = {p.help for p in command.params if p.name == "end"}
        assert ends == {"Last partition (included)."}, command.name
