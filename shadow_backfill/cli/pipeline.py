"""The `shadow-backfill pipeline` commands: the one-table commands over every layer of a
pipeline file (see `pipeline.runner.Pipeline`). The file and every layer's config are checked
before PySpark is imported."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from shadow_backfill import command_result
from shadow_backfill.cli import spelling, telling
from shadow_backfill.cli.consoles import out
from shadow_backfill.cli.job import ApprovedOption, ByOption, Job, QuietOption, ReasonOption, job_options
from shadow_backfill.cli.measured import late_doc
from shadow_backfill.cli.notify import NotifyDryRunOption, send_sample
from shadow_backfill.cli.output import EXIT_HELD, commands, end, split_partitions
from shadow_backfill.cli.progress import progress_bars
from shadow_backfill.cli.render import members, pipeline_summary, run_summary, verdict_table
from shadow_backfill.cli.selection import Asked, selection_options
from shadow_backfill.cli.views import view
from shadow_backfill.documents.pipeline import PipelineLateArrivalsDoc
from shadow_backfill.errors import UsageError
from shadow_backfill.pipeline.preflight import check_layers
from shadow_backfill.pipeline.spec import load_pipeline
from shadow_backfill.timebox import stop_on_sigterm
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.workflow import check_approval

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow_backfill.cli.selection import Selection
    from shadow_backfill.pipeline.results import PipelinePromotion, PipelineRun
    from shadow_backfill.pipeline.runner import Pipeline
    from shadow_backfill.pipeline.spec import PipelineFile
    from shadow_backfill.state import PipelineRecord

app = typer.Typer(
    cls=spelling.Commands, no_args_is_help=True, help="Backfill several tables as one: layers in dependency order."
)
command = commands(app, "pipeline")
PipelineArg = typer.Argument(..., metavar="PIPELINE", help="The pipeline file (YAML).", show_default=False)
JsonOption = typer.Option(False, "--json", help=spelling.JSON_HELP)
AllowWarnOption = typer.Option(
    None, "--allow-warn/--no-allow-warn", help="Promote warned partitions (default: each layer's promote.allow_warn)."
)
_PARALLEL = "Chunks in flight at once across the pipeline."
# Taken only to refuse it in words: a user who knows `promote --canary` tries it on a pipeline,
# and "no such option" would not say why there is none.
NoCanaryOption = typer.Option(None, "--canary", hidden=True, show_default=False)


def refuse_canary(canary: str | None) -> None:
    if canary is not None:
        raise UsageError(
            "--canary is for one table: a pipeline promotes its set in one commit per layer, upstream "
            "first, all undone together on failure (promote a layer's config alone for a canary)"
        )


def open_pipeline(
    path: Path, check: Callable[[PipelineFile], None] | None = None, *, allow_warn: bool | None = None
) -> Pipeline:
    """The file and every layer's config read, and `check`ed (`pipeline.preflight.check_layers`),
    before PySpark is imported; `allow_warn` (`--allow-warn`) in place of every layer's
    `promote.allow_warn` (a partition is promoted only if it may be in every layer)."""
    checked = load_pipeline(path)
    if allow_warn is not None:
        layers = {key: cfg.promoting(allow_warn=allow_warn) for key, cfg in checked.configs.items()}
        checked = dataclasses.replace(checked, configs=layers)
    telling.opened(checked.name, checked.spec.notify, layers=checked.order)  # a refusal below is told too
    if check is not None:
        check(checked)
    from shadow_backfill.pipeline.runner import Pipeline

    opened = Pipeline(checked)
    telling.working_on(list(opened.layers.items()))
    return opened


def open_selected(path: Path, asked: Asked) -> tuple[Pipeline, list[str]]:
    """The pipeline and the partitions of its calendar the options name, for a command that
    reads only the state store (no window, no Spark)."""
    p = open_pipeline(path)
    return p, p.selected(asked.start, asked.end, split_partitions(asked.partitions))


def first_checks(asked: Asked, *, required: bool, report_dir: Path | None = None) -> Callable[[PipelineFile], None]:
    """The command's checks of every layer that need no engine (a `--last` window's partitions
    are read from live, with it): exit 2 before anything starts or is written."""

    def check(file: PipelineFile) -> None:
        needed = required and asked.last is None
        check_layers(file, asked.named(), required=needed, live=required, report_dir=report_dir)

    return check


def print_run(result: PipelineRun) -> None:
    """Each layer's recompute, and the partitions an upstream held back."""
    for key, run in result.runs.items():
        if run is not None:
            out.print(run_summary(run, key))
        for partition, why in sorted(result.blocked.get(key, {}).items()):
            out.print(f"{key}: {partition} not recomputed: {why}", markup=False)


def show_dry_run(p: Pipeline, keys: Selection, job: Job) -> None:
    """Each layer's plan (a table each, or with `--json` one document keyed by layer)."""
    plans = p.dry_run(keys.start, keys.end, keys.partitions, **job.knobs(), window=keys.window)
    view(job.as_json).pipeline_plan(p.file.name, plans)


def promoted(promotion: PipelinePromotion) -> list[str]:
    """What a set promotion did, a line each: a cut-off set finished, the set, what was refused."""
    lines = []
    if promotion.finished is not None:
        lines.append(finished_line(promotion.finished))
    if promotion.record is None:
        lines.append("promote: no partition passed in every layer; live is untouched")
    else:
        n = len(promotion.partitions)
        by = f" (approved by {promotion.record.approved_by})" if promotion.record.approved_by else ""
        lines.append(
            f"{promotion.record.id}: promoted {n} partition(s) in every layer{by} ({members(promotion.record)})"
        )
    for partition, why in sorted(promotion.refused.items())[:5]:
        lines.append(f"not promoted: {partition}: {why}")
    if len(promotion.refused) > 5:
        lines.append(f"not promoted: {len(promotion.refused) - 5} more partition(s)")
    return lines


def finished_line(rec: PipelineRecord) -> str:
    """One line naming a set promotion a kill had cut off, finished by this command, and its layers."""
    return f"{rec.id}: finished a promotion cut off by a kill ({members(rec)})"


def say_finished(p: Pipeline) -> None:
    """Say so when this command first finished a set promotion a kill had cut off (`pipeline
    promote` says it among its own lines)."""
    if p.finished_cut_off is not None:
        out.print(finished_line(p.finished_cut_off), markup=False)


@command
@selection_options()
@job_options(_PARALLEL, "Rewrite partitions that are already written.")
def run(asked: Asked, job: Job, pipeline: Path = PipelineArg) -> None:
    """Recompute every layer, upstream first, each reading its upstream layers' shadows."""
    job.check(asked)
    p, box, keys = job.start(open_pipeline(pipeline, first_checks(asked, required=True)), asked)
    if job.dry_run:
        show_dry_run(p, keys, job)
        return
    with stop_on_sigterm(box), progress_bars(job.quiet) as progress:
        result = p.run(keys.start, keys.end, keys.partitions, **job.knobs(), timebox=box, progress=progress)
    say_finished(p)
    print_run(result)
    end(telling.told(command_result.pipeline_run(result, p.file.name)))


@command
@selection_options("First partition (default: every recomputed one).")
def validate(asked: Asked, pipeline: Path = PipelineArg, as_json: bool = JsonOption, quiet: bool = QuietOption) -> None:
    """Validate every layer and judge each partition across layers; exit 1 if any fails, 3 if some warn."""
    if as_json:
        telling.json_result()  # the result document, even for a refusal
    asked.check()
    p = open_pipeline(pipeline, first_checks(asked, required=False))
    keys = asked.resolve(p)
    with progress_bars(quiet or as_json) as progress:
        result = p.validate(keys.start, keys.end, keys.partitions, progress=progress)
    done = command_result.pipeline_validation(result, p.file.name)
    telling.told(done)
    if not as_json:
        say_finished(p)
        out.print(verdict_table(p.order, result))
    end(done.ending)


@command
@selection_options("First partition (default: every recomputed one).", window=False)
def status(
    asked: Asked,
    pipeline: Path = PipelineArg,
    as_json: bool = JsonOption,
) -> None:
    """Each partition's verdict in every layer and for the pipeline (from the state store; no Spark)."""
    p, chosen = open_selected(pipeline, asked)
    view(as_json).pipeline_status(p.file.name, p.order, p.verdicts(chosen))


@command
@selection_options(
    "First partition (default: every validated one).",
    partitions="Comma-separated partitions (all or nothing).",
    window=False,
)
def promote(
    asked: Asked,
    pipeline: Path = PipelineArg,
    allow_warn: bool | None = AllowWarnOption,
    as_json: bool = JsonOption,
    canary: str | None = NoCanaryOption,
) -> None:
    """Promote what passed in every layer: one commit per layer, upstream first, undone together on failure."""
    if as_json:
        telling.json_result()  # the result document, even for a refusal
    refuse_canary(canary)
    p = open_pipeline(pipeline, first_checks(asked, required=False))
    result = p.promote(asked.start, asked.end, split_partitions(asked.partitions), allow_warn=allow_warn)
    done = command_result.pipeline_promotion(result, p.file.name)
    telling.told(done)
    if not as_json:
        for line in promoted(result):
            out.print(line, markup=False)
    end(done.ending)


@command
def approve(
    pipeline: Path = PipelineArg,
    partitions: str = ApprovedOption,
    reason: str = ReasonOption,
    by: str | None = ByOption,
    as_json: bool = JsonOption,
) -> None:
    """Promote held (warn) partitions a person approved, as one set; the audit trail keeps who, when and why."""
    if as_json:
        telling.json_result()
    names = split_partitions(partitions) or []
    check_approval(names, dict.fromkeys(names, CheckStatus.WARN), reason, by)  # the verdicts: under the lease
    chosen = Asked(partitions=partitions).named()
    p = open_pipeline(pipeline, lambda file: check_layers(file, chosen, required=True, live=False))
    result = p.approve(names, reason=reason, by=by)
    done = command_result.pipeline_promotion(result, p.file.name, "approve")
    telling.told(done)
    for line in promoted(result):
        out.print(line, markup=False)
    end(done.ending)


@command
def rollback(
    pipeline: Path = PipelineArg,
    promotion: str = typer.Option(..., "--promotion", help="The pipeline promotion id to undo."),
    as_json: bool = JsonOption,
) -> None:
    """Undo a pipeline promotion: every layer's promotion, downstream first."""
    if as_json:
        telling.json_result()
    p = open_pipeline(pipeline)
    rec = p.rollback(promotion)
    telling.told(command_result.rollback("pipeline", p.file.name, rec.id, rec.partitions))
    say_finished(p)
    out.print(f"{rec.id}: undid {rec.target} on {len(rec.partitions)} partition(s) ({members(rec)})", markup=False)


@command
def history(
    pipeline: Path = PipelineArg,
    as_json: bool = JsonOption,
    late: bool = typer.Option(False, "--late-arrivals", help="Each layer's rows against live by partition age."),
) -> None:
    """The pipeline's promotions and rollbacks of the set, oldest first, or each layer's
    late-arrival view (no Spark)."""
    p = open_pipeline(pipeline)
    if late:
        layers = {key: late_doc(bf) for key, bf in p.layers.items()}
        view(as_json).pipeline_late_arrivals(PipelineLateArrivalsDoc(pipeline=p.file.name, layers=layers))
        return
    view(as_json).pipeline_history(p.history())


@command
@selection_options("First partition of the pipeline's calendar (default: all).", window=False)
def report(
    asked: Asked,
    pipeline: Path = PipelineArg,
    report_dir: Path | None = typer.Option(
        None, "--report", metavar="DIR", help="Folder for pipeline.html/.json/.md and each layer's reports."
    ),
    out_dir: Path | None = spelling.old_option("--out"),
) -> None:
    """Write the pipeline's report and each layer's (no Spark)."""
    folder = spelling.report_folder(report_dir, out_dir)
    p, chosen = open_selected(pipeline, asked)
    for kind, path in p.report(folder, chosen).items():
        out.print(f"{kind:9} {path}")


@command
@selection_options()
@job_options(
    _PARALLEL,
    "Recompute partitions that are already written.",
    report="Report folder (default: report/ beside the file).",
)
def backfill(asked: Asked, job: Job, pipeline: Path = PipelineArg, canary: str | None = NoCanaryOption) -> None:
    """The main job over every layer: recompute -> validate -> promote the set -> report."""
    refuse_canary(canary)
    job.check(asked)
    checks = first_checks(asked, required=True, report_dir=job.report_to(pipeline.parent))
    p, box, keys = job.start(open_pipeline(pipeline, checks, allow_warn=job.allow_warn), asked)
    if job.dry_run:
        show_dry_run(p, keys, job)
        return
    with stop_on_sigterm(box), progress_bars(job.quiet) as progress:
        result = p.backfill(
            keys.start, keys.end, keys.partitions, **job.backfill_knobs(), timebox=box, progress=progress
        )
    if result.promotion is None:  # else its lines say it
        say_finished(p)
    print_run(result.run)
    if result.run.stopped is None or result.reports:  # else stopped before validation
        if job.verbose:
            out.print(verdict_table(p.order, result.validation))
        for verdicts in pipeline_summary(result.validation):
            out.print(verdicts)
        if result.promotion is not None:
            for line in promoted(result.promotion):
                out.print(line, markup=False)
        out.print(f"report: {result.reports['html']}")
    end(telling.told(command_result.pipeline_backfill(result, p.file.name)))


@command
def notify_test(pipeline: Path = PipelineArg, dry_run: bool = NotifyDryRunOption) -> None:
    """Post a sample message to every webhook of the pipeline's notify: (exit 1 if one did not take it)."""
    checked = load_pipeline(pipeline)
    send_sample(checked.spec.notify, checked.name, "pipeline", dry_run=dry_run, source=str(pipeline))


spelling.spelled(app)

__all__ = ["EXIT_HELD", "app"]
