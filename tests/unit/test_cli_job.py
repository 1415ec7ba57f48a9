"""A writing command's options are declared once (`cli.job.job_options`) and reach it as one
`Job` value, beside the selection's `Asked`; only a backfill takes the backfill's three."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.main import get_command
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.cli.job import Job, job_options
from shadow_backfill.cli.selection import Asked, selection_options


def _toy(report: str | None) -> tuple[typer.Typer, list[tuple[Asked, Job, str]]]:
    toy, seen = typer.Typer(), []

    @toy.command()
    @selection_options()
    @job_options("Parallel.", "Force.", report=report)
    def cmd(asked: Asked, job: Job, name: str = typer.Argument(...)) -> None:
        seen.append((asked, job, name))

    return toy, seen  # one command: invoked without its name


def test_the_options_reach_the_command_as_one_value() -> None:
    toy, seen = _toy(report="Folder.")
    args = ["x", "--start", "2024-01-01", "--max-parallel", "2", "--no-promote", "--report", "r", "--dry-run"]
    result = CliRunner().invoke(toy, args)
    assert result.exit_code == 0, result.output
    job = Job(max_parallel=2, promote_passing=False, report_dir=Path("r"), dry_run=True)
    assert seen == [(Asked(start="2024-01-01"), job, "x")]
    assert job.backfill_knobs() == {
        "max_parallel": 2,
        "force": False,
        "chunk_size": None,
        "allow_code_change": False,
        "promote": False,
        "report_dir": Path("r"),
        "promote_partial": False,
    }
    assert job.report_to(Path("cfg")) is None  # a dry run writes no report


def test_a_run_refuses_the_backfill_options() -> None:
    toy, seen = _toy(report=None)
    result = CliRunner().invoke(toy, ["x", "--no-promote"])
    assert result.exit_code == 2 and seen == []


def test_every_writing_command_lists_the_group_after_its_own_options() -> None:
    group: Any = get_command(app)  # Typer's own click: read by attribute
    run = ["max_parallel", "force", "chunk_size", "allow_code_change", "dry_run", "as_json", "until", "max_duration"]
    run += ["quiet"]
    backfill = [
        *run[:4],
        "promote_passing",
        "report_dir",
        "allow_warn",
        *run[4:-1],
        "promote_partial",
        "verbose",
        "quiet",
    ]
    for commands in (group.commands, group.commands["pipeline"].commands):
        assert [p.name for p in commands["run"].params][-len(run) :] == run
        assert [p.name for p in commands["backfill"].params][-len(backfill) :] == backfill
