"""The options of a command that writes partitions (`run` and `backfill`, of a table and of a
pipeline alike): declared once, reaching the command as one `Job` value, checked and started
in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar

import typer

from shadow_backfill.cli import telling
from shadow_backfill.cli.groups import F, Option, option_group
from shadow_backfill.cli.limits import MaxDurationOption, PromotePartialOption, UntilOption, check_limits
from shadow_backfill.cli.selection import Windowed

if TYPE_CHECKING:
    from shadow_backfill.cli.selection import Asked, Selection
    from shadow_backfill.timebox import TimeBox

DryRunOption = typer.Option(False, "--dry-run", help="Print the plan (from metadata); write nothing.")
ApprovedOption = typer.Option(
    ..., "--partitions", help="Comma-separated partitions held for approval (verdict warn); all or none."
)
ReasonOption = typer.Option(..., "--reason", help="Why they may go to live, kept in the audit trail (required).")
ByOption = typer.Option(None, "--by", help="Who approved (default: the user running the command).")
JsonOption = typer.Option(
    False,
    "--json",
    help="Print one JSON document on stdout: with --dry-run the plan, else the command's result "
    "(docs/command.schema.json; the text goes to stderr).",
)
ChunkSizeOption = typer.Option(None, min=1, help="Partitions per Spark job (default: auto).")
CodeChangeOption = typer.Option(
    False, help="Allow a changed transform to rewrite partitions of the same shadow version."
)
_PROMOTE = "--no-promote stops after the report."
AllowWarnOption = typer.Option(
    None, "--allow-warn/--no-allow-warn", help="Promote warned partitions (default: the config's promote.allow_warn)."
)
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bars on stderr (none is drawn off a terminal).")
VerboseOption = typer.Option(False, "--verbose", "-v", help="Also print every partition's verdict.")

T = TypeVar("T", bound="Target")


class Target(Windowed, Protocol):
    """What a job runs on: a `Backfill`, or a `Pipeline`."""

    def for_dry_run(self: T) -> T: ...

    def timebox(self, until: str | None = None, max_duration: str | None = None) -> TimeBox: ...


class Knobs(TypedDict):
    """The job's options as every run, backfill and dry run of the facades takes them."""

    max_parallel: int | None
    force: bool
    chunk_size: int | None
    allow_code_change: bool


class BackfillKnobs(Knobs):
    """The job's options as `Backfill.backfill` and `Pipeline.backfill` take them."""

    promote: bool
    report_dir: Path | None
    promote_partial: bool


@dataclass(frozen=True)
class Job:
    """A writing command's options as the user gave them (`job_options` adds them); the
    backfill's (`promote_passing`, `report_dir`, `allow_warn`, `promote_partial`, `verbose`)
    only on a backfill."""

    max_parallel: int | None = None
    force: bool = False
    promote_passing: bool = True
    report_dir: Path | None = None
    dry_run: bool = False
    as_json: bool = False
    until: str | None = None
    max_duration: str | None = None
    promote_partial: bool = False
    chunk_size: int | None = None
    allow_code_change: bool = False
    quiet: bool = False
    verbose: bool = False
    allow_warn: bool | None = None

    def check(self, asked: Asked) -> None:
        """Options that cannot go together, or are malformed, refused (exit 2) before the
        config opens anything."""
        if self.dry_run:
            telling.skip()  # a dry run writes nothing: nothing to tell
        elif self.as_json:
            telling.json_result()  # first: a refusal below prints its document too
        asked.check(as_json=self.as_json, dry_run=self.dry_run)
        check_limits(self.until, self.max_duration)

    def report_to(self, beside: Path) -> Path | None:
        """Where a backfill writes its reports (checked before the engine starts): `--report`,
        or report/ beside its config; a dry run writes none."""
        return None if self.dry_run else self.report_dir or beside / "report"

    def knobs(self) -> Knobs:
        """The options for the facade's call (`bf.run(..., **job.knobs())`): named once here."""
        return Knobs(
            max_parallel=self.max_parallel,
            force=self.force,
            chunk_size=self.chunk_size,
            allow_code_change=self.allow_code_change,
        )

    def backfill_knobs(self) -> BackfillKnobs:
        """The options for a table's or a pipeline's `backfill`."""
        return {
            **self.knobs(),
            "promote": self.promote_passing,
            "report_dir": self.report_dir,
            "promote_partial": self.promote_partial,
        }

    def start(self, target: T, asked: Asked) -> tuple[T, TimeBox, Selection]:
        """The target the job works on (its read-only twin for a dry run), its time box, and the
        partitions, resolved once for every later step."""
        target = target.for_dry_run() if self.dry_run else target
        return target, target.timebox(self.until, self.max_duration), asked.resolve(target)


def job_options(max_parallel: str, force: str, *, report: str | None = None) -> Callable[[F], F]:
    """Give a command the job's options, declared once here, as one `job: Job` parameter, listed
    in `--help` after its own options. The texts of `--max-parallel` and `--force` are the
    command's; `report`, the help of `--report`, makes it a backfill's (with `--promote` and
    `--promote-partial`)."""
    options: list[Option] = [
        ("max_parallel", int | None, typer.Option(None, min=1, help=max_parallel)),
        ("force", bool, typer.Option(False, help=force)),
        ("chunk_size", int | None, ChunkSizeOption),
        ("allow_code_change", bool, CodeChangeOption),
    ]
    if report is not None:
        options += [
            ("promote_passing", bool, typer.Option(True, "--promote/--no-promote", help=_PROMOTE)),
            ("report_dir", Path | None, typer.Option(None, "--report", metavar="DIR", help=report)),
            ("allow_warn", bool | None, AllowWarnOption),
        ]
    options += [
        ("dry_run", bool, DryRunOption),
        ("as_json", bool, JsonOption),
        ("until", str | None, UntilOption),
        ("max_duration", str | None, MaxDurationOption),
    ]
    if report is not None:
        options += [("promote_partial", bool, PromotePartialOption), ("verbose", bool, VerboseOption)]
    options.append(("quiet", bool, QuietOption))
    return option_group("job", Job, options, after_argument=False)
