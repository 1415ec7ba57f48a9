"""The `shadow-backfill` commands (Typer): each calls the Python API and renders its result.

How failures print (one line, exit codes, log files) lives in `output.py`; the tables and
summary lines in `render.py`.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from shadow_backfill import command_result
from shadow_backfill.cli import telling
from shadow_backfill.cli.consoles import out
from shadow_backfill.cli.job import (
    AllowWarnOption,
    ApprovedOption,
    ByOption,
    Job,
    QuietOption,
    ReasonOption,
    job_options,
)
from shadow_backfill.cli.measured import check_late, check_measured, late_doc, measured_doc
from shadow_backfill.cli.notify import notify_test
from shadow_backfill.cli.opening import open_backfill
from shadow_backfill.cli.output import (
    commands,
    show_warnings,
    split_partitions,
)
from shadow_backfill.cli.pipeline import app as pipeline_app
from shadow_backfill.cli.progress import progress_bars
from shadow_backfill.cli.render import (
    exit_for_verdicts,
    fail_if_incomplete,
    print_backfill,
    print_canary,
    print_finished_canaries,
    print_plan,
    print_promotion,
    print_verdicts,
    run_summary,
    say_recorded,
)
from shadow_backfill.cli.selection import Asked, check_first, selection_options
from shadow_backfill.cli.spelling import (
    JSON_HELP,
    REPORT_HELP,
    Commands,
    ConfigArg,
    old_option,
    print_json,
    report_folder,
    spelled,
)
from shadow_backfill.cli.suggesting import suggest
from shadow_backfill.cli.views import view
from shadow_backfill.config import load_config
from shadow_backfill.formats import FORMATS, format_names
from shadow_backfill.preflight import (
    backfill_checks,
    canary_checks,
    check_before_engine,
    check_rollback_asked,
    promote_checks,
)
from shadow_backfill.progress import whole_step
from shadow_backfill.selection import Selection
from shadow_backfill.timebox import stop_on_sigterm

if TYPE_CHECKING:
    from collections.abc import Iterator

    from shadow_backfill.api import Backfill
    from shadow_backfill.config import BackfillConfig
    from shadow_backfill.progress import Progress
    from shadow_backfill.timebox import TimeBox

if TYPE_CHECKING:
    FormatName = str
else:  # an Enum, so `demo --help` lists the choices and Click refuses any other
    FormatName = Enum("FormatName", {name: name for name in format_names()}, type=str)

app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    add_completion=False,
    help="Recompute partitions into a shadow table, validate them, and promote only what passes.",
)

app.add_typer(pipeline_app, name="pipeline")

command = commands(app)
JsonListOption = typer.Option(False, "--json", help=JSON_HELP)
CanaryOption = typer.Option(
    None,
    "--canary",
    min=1,
    help="Promote the N earliest first, check them on live, then the rest (default: promote.canary).",
)


def _print_version(value: bool) -> None:
    """Eager, so `--version` answers without a command or a config."""
    if value:
        from shadow_backfill import __version__

        out.print(f"shadow-backfill {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Recompute partitions into a shadow table, validate them, and promote only what passes."""
    show_warnings()


@command
@selection_options("First partition, e.g. 2024-01-01.")
@job_options("Chunks written at once (default: config).", "Rewrite partitions that are already written.")
def run(asked: Asked, job: Job, config: Path = ConfigArg) -> None:
    """Recompute partitions into the shadow table (resumable: written partitions are skipped)."""
    job.check(asked)
    bf, box, chosen = job.start(open_backfill(config, lambda cfg: check_first(cfg, asked)), asked)
    if job.dry_run:
        show_dry_run(bf, chosen, job)
        return
    start, end, names = chosen.start, chosen.end, chosen.partitions
    # the plan runs every check first (exit 2 writes nothing); the run then holds the table
    bf.plan(start, end, names, force=job.force, allow_code_change=job.allow_code_change)
    with recomputing(box, job.quiet) as progress:
        result = bf.run(
            start,
            end,
            names,
            **job.knobs(),
            progress=progress,
            timebox=box,
        )
    out.print(run_summary(result, bf.shadow_table))
    fail_if_incomplete(result, bf.live_table)


def show_dry_run(bf: Backfill, chosen: Selection, job: Job) -> None:
    """Print what a run over `chosen` would do (a table, or with `--json` one document)."""
    plan = bf.dry_run(chosen.start, chosen.end, chosen.partitions, **job.knobs(), window=chosen.window)
    view(job.as_json).run_plan(plan)


@contextmanager
def recomputing(box: TimeBox, quiet: bool) -> Iterator[Progress]:
    """While the job runs: a progress bar per step (unless `quiet`: `cli.progress`), and a
    SIGTERM that stops the run at the next chunk (`stop_on_sigterm`)."""
    with stop_on_sigterm(box), progress_bars(quiet) as progress:
        yield progress


@command
def status(
    config: Path = ConfigArg,
    as_json: bool = JsonListOption,
) -> None:
    """Show every partition of the shadow table and its state."""
    bf = open_backfill(config)
    from shadow_backfill.state.store import shown_url  # SQLAlchemy: not for every command's start

    view(as_json).status(bf.shadow_table, bf.status_rows(), shown_url(bf.config.state_url))


@command
@selection_options("First partition (default: every recomputed partition).")
def validate(asked: Asked, config: Path = ConfigArg, as_json: bool = JsonListOption, quiet: bool = QuietOption) -> None:
    """Validate shadow partitions (suites + drift against live); exit 1 if any fails, 3 if some only warn."""
    if as_json:
        telling.json_result()  # the result document, even for a refusal
    asked.check()
    bf = open_backfill(config, lambda cfg: check_first(cfg, asked, required=False, live=False))
    chosen = asked.resolve(bf)
    with progress_bars(quiet or as_json) as progress:
        result = bf.validate(chosen.start, chosen.end, chosen.partitions, progress=progress)
    if not as_json:
        print_verdicts(result)
    exit_for_verdicts(result, bf.live_table)


@command
def report(
    config: Path = ConfigArg,
    report_dir: Path | None = typer.Option(None, "--report", metavar="DIR", help=REPORT_HELP, show_default=False),
    out_dir: Path | None = old_option("--out"),
) -> None:
    """Write the HTML, JSON, Markdown and JUnit reports of the latest verdicts."""
    folder = report_folder(report_dir, out_dir)
    paths = open_backfill(config).report(folder)
    for kind, path in paths.items():
        out.print(f"{kind:9} {path}")


@command
def promote(
    config: Path = ConfigArg,
    partitions: str | None = typer.Option(
        None, help="Comma-separated partitions (all-or-nothing); default: every validated partition that passed."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; write nothing."),
    as_json: bool = typer.Option(
        False, "--json", help="One JSON document on stdout: with --dry-run the plan, else the promotion's result."
    ),
    allow_warn: bool | None = AllowWarnOption,
    canary: int | None = CanaryOption,
    quiet: bool = QuietOption,
) -> None:
    """Promote passing shadow partitions into the live table in ONE atomic commit."""
    if dry_run:
        telling.skip()
    elif as_json:
        telling.json_result()
    names = split_partitions(partitions)
    cfg = load_config(config)
    telling.opened(cfg.live_table, cfg.notify)  # its refusals below are told too
    check_before_engine(cfg, Selection(partitions=names), required=False, live=False)
    n = canary or cfg.promote.canary
    if not dry_run and n is not None and names is not None and n >= len(set(names)):
        from shadow_backfill.state.canaries import too_few  # SQLAlchemy: not for every command's start

        raise too_few(n, len(set(names)))  # before Spark starts: the names are the promotion
    bf = open_backfill(config).for_dry_run() if dry_run else open_backfill(config)
    if dry_run:
        plan = bf.plan_promotion(names, allow_warn=allow_warn)
        if as_json:
            from shadow_backfill.documents.cli import PromotionPlanDoc

            print_json(PromotionPlanDoc.of(plan, bf.live_table))
        else:
            print_plan(plan, dry_run=True)
        return
    if n is not None:
        canary_checks(bf, n, names, allow_warn=allow_warn)  # exit 2 writes nothing
    else:
        promote_checks(bf, names)
    with bf.holding_table("promote"):  # what it finishes of a kill's leftovers too
        say_recorded(bf)
        if n is not None:
            with progress_bars(quiet) as progress, whole_step(progress, "promote (canary first)"):
                canaried = bf.promote_canary(n, names, allow_warn=allow_warn)
            print_canary(canaried, bf.live_table)
            return
        print_finished_canaries(bf.finish_unchecked_canaries())
        with progress_bars(quiet) as progress:
            step = progress.step("promote")
            plan, rec = bf.promote(names, allow_warn=allow_warn)
            if rec is not None:  # a refused promotion is no step done: its error line follows
                step.advance(len(plan.partitions))
                step.done()
    print_promotion(plan, rec, bf.live_table)


@command
def approve(
    config: Path = ConfigArg,
    partitions: str = ApprovedOption,
    reason: str = ReasonOption,
    by: str | None = ByOption,
    as_json: bool = JsonListOption,
) -> None:
    """Promote held (warn) partitions a person approved, in ONE commit; the audit trail keeps who, when and why."""
    if as_json:
        telling.json_result()
    names = split_partitions(partitions) or []
    bf = open_backfill(config, lambda cfg: check_before_engine(cfg, Selection(partitions=names), live=False))
    plan, rec = bf.approve(names, reason=reason, by=by)
    print_promotion(plan, rec, bf.live_table, command="approve")


@command
def rollback(
    config: Path = ConfigArg,
    promotion: str | None = typer.Option(None, "--promotion", help="Undo this promotion (or rollback) id."),
    to_version: int | None = typer.Option(None, "--to-version", help="Restore the whole live table to a version."),
    force: bool = typer.Option(False, help="Restore even if the partitions changed after the promotion."),
    as_json: bool = JsonListOption,
) -> None:
    """Undo a promotion exactly (its partitions, one atomic commit), or restore a whole version."""
    if as_json:
        telling.json_result()
    check_rollback_asked(promotion, to_version)
    bf = open_backfill(config)
    rec = bf.rollback(promotion, to_version=to_version, force=force)
    telling.told(command_result.rollback("table", bf.live_table, rec.id, rec.partitions))
    what = f"undid {rec.target}" if rec.target else f"restored version {rec.to_version}"
    out.print(
        f"{rec.id}: {what} on {len(rec.partitions)} partition(s) of {rec.live_table}: "
        f"live version {rec.live_version_before} -> {rec.live_version_after}"
    )


@command
def gc(
    config: Path = ConfigArg,
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
) -> None:
    """Delete partition data replaced more than promote.retention_days ago (old rollback targets)."""
    bf = open_backfill(config).for_dry_run() if dry_run else open_backfill(config)
    for table, deleted in bf.gc(dry_run=dry_run).items():
        if deleted is None:
            out.print(f"{table}: its format keeps its own retention; nothing to delete")
            continue
        verb = "would delete" if dry_run else "deleted"
        days = bf.config.promote.retention_days
        out.print(f"{table}: {verb} {len(deleted)} folder(s) replaced more than {days:g} day(s) ago")
        for path in deleted:
            out.print(f"  {path}", markup=False)


@command
def history(
    config: Path = ConfigArg,
    as_json: bool = JsonListOption,
    reconcile: bool = typer.Option(
        False,
        "--reconcile",
        help="First record live-table commits the state store misses (after a crash); starts Spark.",
    ),
    partition: str | None = typer.Option(None, "--partition", metavar="P", help="With --metrics: which partition."),
    metrics: bool = typer.Option(False, "--metrics", help="A partition's measurements at each validation kept."),
    late: bool = typer.Option(False, "--late-arrivals", help="Rows against live by partition age."),
) -> None:
    """Promotions and rollbacks of the live table, a partition's measurements at each
    validation, or the late-arrival view."""
    if late:
        bf = open_backfill(config, lambda _: check_late(partition, metrics=metrics, reconcile=reconcile))
        view(as_json).late_arrivals(late_doc(bf))
        return
    if metrics or partition is not None:
        bf = open_backfill(config, lambda _: check_measured(partition, metrics=metrics, reconcile=reconcile))
        view(as_json).metric_history(measured_doc(bf, str(partition)))
        return
    recs = open_backfill(config).history(reconcile_live=reconcile)
    view(as_json).history(recs)


command(suggest)


@command
@selection_options()
@job_options(
    "Chunks written at once.",
    "Recompute partitions that are already written.",
    report="Report folder (default: report/ beside the config).",
)
def backfill(asked: Asked, job: Job, config: Path = ConfigArg, canary: int | None = CanaryOption) -> None:
    """The main job: recompute -> validate -> promote what passed -> report."""
    job.check(asked)

    def checks(cfg: BackfillConfig) -> None:
        check_first(cfg, asked, report_dir=job.report_to(cfg.base_dir))

    opened = open_backfill(config, checks, allow_warn=job.allow_warn, canary=canary)
    bf, box, chosen = job.start(opened, asked)
    if job.dry_run:
        show_dry_run(bf, chosen, job)
        return
    from shadow_backfill.state.canaries import too_few  # SQLAlchemy: not for every command's start

    start, end, names = chosen.start, chosen.end, chosen.partitions
    backfill_checks(bf, start, end, names, report_dir=job.report_dir)  # exit 2 writes nothing
    requested, _to_do = bf.plan(start, end, names, force=job.force, allow_code_change=job.allow_code_change)
    if job.promote_passing and (n := bf.config.promote.canary) and n >= len(requested):
        name = "--canary" if canary is not None else "promote.canary"
        raise too_few(n, len(requested), name=name)  # before anything is written
    with bf.holding_table("backfill"):  # the cut-off promotions and canaries it finishes too
        if job.promote_passing:
            say_recorded(bf)
            print_finished_canaries(bf.finish_unchecked_canaries())
        with recomputing(box, job.quiet) as progress:
            result = bf.backfill(start, end, names, **job.backfill_knobs(), progress=progress, timebox=box)
    print_backfill(result, bf.live_table, verbose=job.verbose)


command(notify_test)


@command
def demo(
    directory: Path = typer.Argument(..., metavar="DIRECTORY", help="Folder for the demo (created if missing)."),
    format: FormatName | None = typer.Option(
        None,
        "--format",
        help="; ".join(f"{s.name}: {s.summary}" for s in FORMATS.values())
        + f". Default: {format_names()[0]}, or with --remote sail the first that takes paths.",
        show_default=False,
    ),
    days: int = typer.Option(60, min=2, max=366, help="Daily partitions in the demo's live table."),
    run_recompute: bool = typer.Option(True, "--run/--no-run", help="Also recompute the range into the shadow."),
    remote: str | None = typer.Option(
        None, "--remote", help="Run over Spark Connect: sc://host:port, or 'sail' for an embedded Sail server."
    ),
    quiet: bool = QuietOption,
) -> None:
    """Write a self-contained example (live table, v2 transform, config, suite) and recompute it."""
    from shadow_backfill.demo import demo_format, demo_range, seed_live_table, write_demo

    fmt = demo_format(None if format is None else str(getattr(format, "value", format)), remote)
    cfg = write_demo(directory, fmt, days, remote=remote)
    bf = seed_live_table(cfg, days)
    start, end = demo_range(days)
    out.print(f"live table {bf.live_table}: {days} daily partitions {start}..{end} (v1 logic)")
    if run_recompute:
        with progress_bars(quiet) as progress:
            result = bf.run(start, end, progress=progress)
        out.print(
            f"shadow table {bf.shadow_table}: {len(result.written)} written, {len(result.skipped)} skipped, "
            f"{len(result.failed)} failed; version {result.shadow_version}"
        )
        fail_if_incomplete(result)
        with progress_bars(quiet) as progress:
            verdicts = bf.validate(progress=progress)
        print_verdicts(verdicts)
        paths = bf.report(directory / "report")
        out.print(f"report: {paths['html']}")
    out.print(f"config: {cfg}\nnext: shadow-backfill status {cfg}")


spelled(app)


def main() -> None:
    """The CLI's entry point. Once the command has ended (its lines printed, its exit code
    decided), logging is off for the rest of the process: a JVM going down at exit while py4j
    still talks to it makes py4j log a traceback on the root logger after the command's last
    line (`jvm_output.quietly` covers only the stop the tool makes itself)."""
    try:
        app()
    finally:
        logging.disable(logging.CRITICAL)
