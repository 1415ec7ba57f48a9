"""The `shadow-backfill` command line (Typer + Rich).

Every command turns a :class:`ShadowBackfillError` into one red line naming the culprit and
its exit code (2 for usage errors, 1 for runtime failures). Anything else (an engine error we
did not foresee) is one line too, with the full traceback written to a log file whose path the
line gives; Ctrl-C is "interrupted" and exit 130. Both consoles have markup off: partition
values, table names, messages and data are user text and must print as typed, so styling is
only ever applied through `Text` objects.
"""

from __future__ import annotations

import functools
import getpass
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from shadow_backfill.api import Backfill
from shadow_backfill.errors import ShadowBackfillError, UsageError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Recompute partitions into a shadow table, validate them, and promote only what passes.",
)
console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)
out = Console(soft_wrap=True, markup=False, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])

STATUS_STYLE = {"written": "green", "running": "yellow", "pending": "dim", "failed": "red"}


LOG_DIR_ENV = "SHADOW_BACKFILL_LOG_DIR"


def log_dir() -> Path:
    """Where full tracebacks go: $SHADOW_BACKFILL_LOG_DIR, else a per-user folder in the system
    temp dir (always writable, even when the config's folder is the thing that is broken)."""
    if os.environ.get(LOG_DIR_ENV):
        return Path(os.environ[LOG_DIR_ENV])
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getpid())
    return Path(tempfile.gettempdir()) / f"shadow-backfill-{user}" / "logs"


def write_log(text: str) -> Path | None:
    """Write `text` to a new log file; None if even that fails (the one line is printed anyway)."""
    try:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, name = tempfile.mkstemp(prefix=time.strftime("error-%Y%m%dT%H%M%S-"), suffix=".log", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(f"shadow-backfill {' '.join(sys.argv[1:])}\n{text}")
        return Path(name)
    except OSError:
        return None


def fail(message: str, code: int = 1, details: str | None = None) -> NoReturn:
    """Print the one error line and exit. A multi-line message keeps its first line; the rest,
    with `details`, goes to a log file named on that line."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or ["unknown error"]
    line = lines[0]
    if len(line) > 500:
        line = line[:500] + " …"
    if details is not None or len(lines) > 1:
        log = write_log((details or "") + "\n" + message + "\n")
        line += f" (full details: {log})" if log else " (no log could be written)"
    console.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ShadowBackfillError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted (partitions not written yet are redone by the next run)", 130)
        except (typer.Exit, typer.Abort, typer.TyperException):  # Typer's own exits and usage errors
            raise
        except Exception as exc:
            fail(f"{type(exc).__name__}: {exc}", 1, details="".join(traceback.format_exception(exc)))

    return wrapper  # type: ignore[return-value]


def _split(partitions: str | None) -> list[str] | None:
    if partitions is None:
        return None
    items = [p.strip() for p in partitions.split(",") if p.strip()]
    if not items:
        raise UsageError("--partitions is empty")
    return items


ConfigArg = typer.Argument(..., help="The backfill config (YAML).", show_default=False)


@app.command()
@handle_errors
def run(
    config: Path = ConfigArg,
    start: str | None = typer.Option(None, help="First partition, e.g. 2024-01-01."),
    end: str | None = typer.Option(None, help="Last partition (included)."),
    partitions: str | None = typer.Option(None, help="Comma-separated partitions instead of a range."),
    max_parallel: int | None = typer.Option(None, min=1, help="Chunks written at once (default: config)."),
    chunk_size: int | None = typer.Option(None, min=1, help="Partitions per Spark job (default: auto)."),
    force: bool = typer.Option(False, help="Rewrite partitions that are already written."),
    allow_code_change: bool = typer.Option(
        False, help="Allow a changed transform to rewrite partitions of the same shadow version."
    ),
) -> None:
    """Recompute partitions into the shadow table (resumable: written partitions are skipped)."""
    bf = Backfill.from_config(config)
    result = run_with_progress(
        bf,
        start=start,
        end=end,
        partitions=_split(partitions),
        max_parallel=max_parallel,
        chunk_size=chunk_size,
        force=force,
        allow_code_change=allow_code_change,
    )
    held = f", {len(result.held)} held by another run" if result.held else ""
    out.print(
        f"{bf.shadow_table}: {len(result.written)} written, {len(result.skipped)} skipped (already written), "
        f"{len(result.failed)} failed{held} in {len(result.chunks)} chunk(s); shadow version {result.shadow_version}"
    )
    fail_if_incomplete(result)


def fail_if_incomplete(result: Any) -> None:
    """Exit 1 when anything requested was not done: failed partitions, or ones another run holds
    (a run that quietly did nothing must not pass a CI gate)."""
    for key in sorted(result.failed)[:10]:
        console.print(Text.assemble(("failed", "red"), f" {key}: {result.failed[key]}"))
    problems = []
    if result.failed:
        problems.append(f"{len(result.failed)} of {len(result.requested)} partition(s) failed (a rerun retries them)")
    if result.held:
        problems.append(result.held_summary())
    if problems:
        fail("; ".join(problems))


def run_with_progress(bf: Backfill, **kwargs: Any) -> Any:
    _requested, to_do = bf.plan(
        kwargs.get("start"),
        kwargs.get("end"),
        kwargs.get("partitions"),
        force=kwargs.get("force", False),
        allow_code_change=kwargs.get("allow_code_change", False),
    )
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]recompute[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task(escape(bf.shadow_table), total=len(to_do))

        def advance(chunk: Sequence[str], outcome: str) -> None:
            progress.advance(task, len(chunk))

        return bf.run(on_progress=advance, **kwargs)


@app.command()
@handle_errors
def status(
    config: Path = ConfigArg,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table."),
) -> None:
    """Show every partition of the shadow table and its state."""
    bf = Backfill.from_config(config)
    rows = bf.status_rows()
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    table = Table(title=f"{bf.shadow_table} ({len(rows)} partitions)")
    for col in ("partition", "status", "rows", "shadow version", "attempts", "seconds", "error"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["partition"],
            Text(r["status"], style=STATUS_STYLE.get(r["status"], "")),
            "" if r["rows"] is None else str(r["rows"]),
            "" if r["shadow_version"] is None else str(r["shadow_version"]),
            str(r["attempts"]),
            "" if r["duration_s"] is None else f"{r['duration_s']:.1f}",
            (r["error"] or "")[:80],
        )
    out.print(table)


VERDICT_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


@app.command()
@handle_errors
def validate(
    config: Path = ConfigArg,
    start: str | None = typer.Option(None, help="First partition (default: every recomputed partition)."),
    end: str | None = typer.Option(None, help="Last partition (included)."),
    partitions: str | None = typer.Option(None, help="Comma-separated partitions instead of a range."),
) -> None:
    """Validate shadow partitions (suites + drift against live); exits 1 if any partition fails."""
    bf = Backfill.from_config(config)
    result = bf.validate(start, end, _split(partitions))
    print_verdicts(result)
    if not result.ok:
        fail(failed_validation(result))


def failed_validation(result: Any) -> str:
    """The error line of a failed gate names the partitions, so a CI log says what to look at."""
    failed = [v.partition for v in result.verdicts if v.verdict == "fail"]
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    return f"{len(failed)} partition(s) failed validation: {', '.join(failed[:5])}{more}"


def print_verdicts(result: Any) -> None:
    table = Table(title=f"validation {result.validation_id}: shadow version {result.shadow_version}")
    for col in ("partition", "verdict", "rows live → shadow", "reasons"):
        table.add_column(col)
    for v in result.verdicts:
        rows = v.metrics.get("rows", {})
        reasons = "; ".join(c.message for c in v.reasons[:3]) + (" …" if len(v.reasons) > 3 else "")
        table.add_row(
            v.partition,
            Text(v.verdict, style=VERDICT_STYLE[v.verdict]),
            f"{rows.get('live', '')} → {rows.get('shadow', '')}",
            reasons,
        )
    out.print(table)
    c = result.counts
    out.print(f"{c['pass']} pass, {c['warn']} warn, {c['fail']} fail in {result.seconds:.1f} s")


@app.command()
@handle_errors
def report(
    config: Path = ConfigArg,
    out_dir: Path = typer.Option(..., "--out", help="Folder for report.html, report.json, report.md, junit.xml."),
) -> None:
    """Write the HTML, JSON, Markdown and JUnit reports of the latest verdicts."""
    paths = Backfill.from_config(config).report(out_dir)
    for kind, path in paths.items():
        out.print(f"{kind:9} {path}")


@app.command()
@handle_errors
def promote(
    config: Path = ConfigArg,
    partitions: str | None = typer.Option(
        None, help="Comma-separated partitions (all-or-nothing); default: every validated partition that passed."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; write nothing."),
    allow_warn: bool | None = typer.Option(None, "--allow-warn/--no-allow-warn", help="Promote warned partitions."),
) -> None:
    """Promote passing shadow partitions into the live table in ONE atomic commit."""
    bf = Backfill.from_config(config)
    names = _split(partitions)
    if dry_run:
        print_plan(bf.plan_promotion(names, allow_warn=allow_warn), dry_run=True)
        return
    plan, rec = bf.promote(names, allow_warn=allow_warn)
    print_plan(plan, dry_run=False)
    if rec is None:
        fail("nothing promoted: no partition passed every check")
    out.print(
        f"promoted {len(rec.partitions)} partition(s) into {rec.live_table} as {rec.id}: "
        f"live version {rec.live_version_before} -> {rec.live_version_after}"
    )


def print_plan(plan: Any, *, dry_run: bool) -> None:
    title = "promotion plan (dry run: nothing written)" if dry_run else "promotion"
    table = Table(title=f"{title}; expects live version {plan.live_version}")
    for col in ("partition", "action", "rows live → shadow", "detail"):
        table.add_column(col)
    for k in plan.partitions:
        rows = plan.rows.get(k, {})
        table.add_row(
            k,
            Text("promote", style="green"),
            f"{rows.get('live', '')} → {rows.get('shadow', '')}",
            f"shadow version {plan.shadow_versions.get(k)}",
        )
    for k, reason in plan.refused.items():
        table.add_row(k, Text("refused", style="red"), "", reason)
    out.print(table)


@app.command()
@handle_errors
def rollback(
    config: Path = ConfigArg,
    promotion: str | None = typer.Option(None, "--promotion", help="Undo this promotion (or rollback) id."),
    to_version: int | None = typer.Option(None, "--to-version", help="Restore the whole live table to a version."),
    force: bool = typer.Option(False, help="Restore even if the partitions changed after the promotion."),
) -> None:
    """Undo a promotion exactly (its partitions, one atomic commit), or restore a whole version."""
    rec = Backfill.from_config(config).rollback(promotion, to_version=to_version, force=force)
    what = f"undid {rec.target}" if rec.target else f"restored version {rec.to_version}"
    out.print(
        f"{rec.id}: {what} on {len(rec.partitions)} partition(s) of {rec.live_table}: "
        f"live version {rec.live_version_before} -> {rec.live_version_after}"
    )


@app.command()
@handle_errors
def history(
    config: Path = ConfigArg,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table."),
) -> None:
    """Promotions and rollbacks of the live table, oldest first."""
    recs = Backfill.from_config(config).history()
    if as_json:
        sys.stdout.write(json.dumps([r.as_dict() for r in recs], indent=2, default=str) + "\n")
        return
    table = Table(title="promotions and rollbacks")
    for col in ("id", "kind", "at", "partitions", "live version", "undoes", "undone by", "user"):
        table.add_column(col)
    for r in recs:
        parts = ", ".join(r.partitions[:3]) + (f" (+{len(r.partitions) - 3})" if len(r.partitions) > 3 else "")
        table.add_row(
            r.id,
            r.kind,
            r.at.strftime("%Y-%m-%d %H:%M:%S") if r.at else "",
            parts,
            f"{r.live_version_before} → {r.live_version_after}",
            r.target or (f"v{r.to_version}" if r.to_version else ""),
            r.undone_by or "",
            r.user or "",
        )
    out.print(table)


@app.command()
@handle_errors
def backfill(
    config: Path = ConfigArg,
    start: str | None = typer.Option(None, help="First partition."),
    end: str | None = typer.Option(None, help="Last partition (included)."),
    partitions: str | None = typer.Option(None, help="Comma-separated partitions instead of a range."),
    max_parallel: int | None = typer.Option(None, min=1, help="Chunks written at once."),
    force: bool = typer.Option(False, help="Recompute partitions that are already written."),
    promote_passing: bool = typer.Option(True, "--promote/--no-promote", help="--no-promote stops after the report."),
    report_dir: Path | None = typer.Option(
        None, "--report", help="Report folder (default: report/ beside the config)."
    ),
) -> None:
    """The main job: recompute -> validate -> promote what passed -> report."""
    bf = Backfill.from_config(config)
    names = _split(partitions)
    result = run_with_progress(bf, start=start, end=end, partitions=names, max_parallel=max_parallel, force=force)
    held = f", {len(result.held)} held by another run" if result.held else ""
    out.print(
        f"recompute: {len(result.written)} written, {len(result.skipped)} skipped, {len(result.failed)} failed{held}"
    )
    checked = bf.validate(start, end, names)
    print_verdicts(checked)
    if promote_passing:
        passing = [v.partition for v in checked.verdicts if v.verdict == "pass"]
        if passing:
            _, rec = bf.promote(passing)
            assert rec is not None
            out.print(
                f"promoted {len(rec.partitions)} partition(s) as {rec.id}: live version "
                f"{rec.live_version_before} -> {rec.live_version_after}"
            )
        else:
            out.print("promote: no partition passed; live is untouched")
    paths = bf.report(report_dir or bf.config.base_dir / "report")
    out.print(f"report: {paths['html']}")
    problems = [f"{len(result.failed)} partition(s) failed to recompute"] if result.failed else []
    if result.held:
        problems.append(result.held_summary())
    if not checked.ok:
        problems.append(failed_validation(checked))
    if problems:
        fail("; ".join(problems))


@app.command()
@handle_errors
def demo(
    directory: Path = typer.Argument(..., help="Folder for the demo (created if missing)."),
    format: str = typer.Option("iceberg", "--format", help="iceberg (offline, default) or delta (via Sail)."),
    days: int = typer.Option(60, min=2, max=366, help="Daily partitions in the demo's live table."),
    run_recompute: bool = typer.Option(True, "--run/--no-run", help="Also recompute the range into the shadow."),
) -> None:
    """Write a self-contained example (live table, v2 transform, config, suite) and recompute it."""
    from shadow_backfill.demo import demo_range, seed_live_table, write_demo

    if format not in ("iceberg", "delta"):
        raise UsageError(f"--format must be 'iceberg' or 'delta', not {format!r}")
    cfg = write_demo(directory, format, days)
    bf = seed_live_table(cfg, days)
    start, end = demo_range(days)
    out.print(f"live table {bf.live_table}: {days} daily partitions {start}..{end} (v1 logic)")
    if run_recompute:
        result = run_with_progress(bf, start=start, end=end)
        out.print(
            f"shadow table {bf.shadow_table}: {len(result.written)} written, {len(result.skipped)} skipped, "
            f"{len(result.failed)} failed; version {result.shadow_version}"
        )
        fail_if_incomplete(result)
        verdicts = bf.validate()
        print_verdicts(verdicts)
        paths = bf.report(directory / "report")
        out.print(f"report: {paths['html']}")
    out.print(f"config: {cfg}\nnext: shadow-backfill status {cfg}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
