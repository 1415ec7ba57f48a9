"""What the CLI prints for each result object: tables and summary lines, never markup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from shadow_backfill.cli import telling
from shadow_backfill.cli.consoles import console, out
from shadow_backfill.cli.output import end, write_log
from shadow_backfill.command_result import table_backfill, table_canary, table_promotion, table_run, table_validation
from shadow_backfill.outcome import finished_canaries_outcome
from shadow_backfill.vocabulary import VERDICT_STYLES, CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.pipeline.results import PipelineValidation
    from shadow_backfill.state import PipelineRecord

STATUS_STYLE = {"written": "green", "running": "yellow", "pending": "dim", "failed": "red"}
NAMES_IDS = {"kind", "undoes", "undone by", "members"}  # history columns that can hold an id


def run_summary(result: Any, label: str) -> str:
    held = f", {len(result.held)} held by another run" if result.held else ""
    held += f", {len(result.not_started)} not started (stopped)" if result.not_started else ""
    return (
        f"{label}: {len(result.written)} written, {len(result.skipped)} skipped (already written), "
        f"{len(result.failed)} failed{held} in {len(result.chunks)} chunk(s); "
        f"the shadow table is at version {result.shadow_version}"
    )


def print_failed(run: Any) -> None:
    """The failed partitions (the first ten) before the line that counts them; their whole
    errors, where a line was kept of pages of trace, go to a log file that one line names."""
    for key in sorted(run.failed)[:10]:
        console.print(Text.assemble(("failed", "red"), f" {key}: {run.failed[key]}"))
    log_failures(run)


def log_failures(run: Any) -> None:
    """The run's whole errors to a log file, named on one line (nothing if none was kept)."""
    if run.details:
        # One chunk's partitions share one error: written once, under the partitions it failed.
        keys_by_error: dict[str, list[str]] = {}
        for key in sorted(run.details):
            keys_by_error.setdefault(run.details[key], []).append(key)
        log = write_log("".join(f"failed {', '.join(keys)}:\n{text}\n\n" for text, keys in keys_by_error.items()))
        console.print(f"full details of the failures: {log}" if log else "no log of the failures could be written")


def fail_if_incomplete(result: Any, target: str = "") -> None:
    """Exit as a run that ended (`command_result.table_run`), after naming what failed."""
    print_failed(result)
    end(telling.told(table_run(result, target)))


def status_table(table_name: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=f"{table_name} ({len(rows)} partitions)")
    whole_column(table, "partition", [r["partition"] for r in rows])
    for col in ("status", "verdict", "rows", "shadow version", "attempts", "seconds", "error"):
        table.add_column(col, no_wrap=col in ("status", "verdict"))
    for r in rows:
        table.add_row(
            r["partition"],
            Text(r["status"], style=STATUS_STYLE.get(r["status"], "")),
            verdict_cell(r["verdict"], stale=r["validated_version"] != r["shadow_version"]),
            "" if r["rows"] is None else str(r["rows"]),
            "" if r["shadow_version"] is None else str(r["shadow_version"]),
            str(r["attempts"]),
            "" if r["duration_s"] is None else f"{r['duration_s']:.1f}",
            (r["error"] or "")[:80],
        )
    return table


def verdict_cell(verdict: str | None, *, stale: bool) -> Text:
    """A partition's last verdict; one judged on an earlier write of the partition says so, as
    `promote` refuses it until it is validated again."""
    if verdict is None:
        return Text("")
    return Text.assemble((str(verdict), VERDICT_STYLES[str(verdict)]), (" (stale)", "dim") if stale else "")


def whole_column(table: Table, head: str, names: list[str]) -> None:
    """A column of what the next command takes (`rollback --promotion <id>`, `--partitions`):
    printed whole, on one line, at any terminal width; the other columns give way."""
    table.add_column(head, no_wrap=True, min_width=max((len(n) for n in names), default=None))


def exit_for_verdicts(result: Any, target: str = "") -> None:
    """`validate`'s exit code (`command_result.table_validation`)."""
    end(telling.told(table_validation(result, target)))


def print_verdicts(result: Any) -> None:
    table = Table(
        title=f"validation {result.validation_id}: the shadow table at version {result.shadow_version} "
        f"against live at version {result.live_version}"
    )
    for col in ("partition", "verdict", "rows live → shadow", "reasons"):
        table.add_column(col)
    for v in result.verdicts:
        live, shadow = (n if n is not None else "" for n in (v.metrics.live_rows, v.metrics.shadow_rows))
        reasons = "; ".join(c.message for c in v.reasons[:3]) + (" …" if len(v.reasons) > 3 else "")
        table.add_row(
            v.partition,
            Text(v.verdict, style=VERDICT_STYLES[v.verdict]),
            f"{live} → {shadow}",
            reasons,
        )
    out.print(table)
    c = result.counts
    out.print(f"{c['pass']} pass, {c['warn']} warn, {c['fail']} fail in {result.seconds:.1f} s")
    out.print(skipped_note(result.verdicts), end="")


def skipped_note(verdicts: list[Any]) -> str:
    """Small partitions pass without any distribution test: say so, and what to do about it."""
    parts = [v for v in verdicts if any(c.status == CheckStatus.SKIPPED for c in v.checks)]
    if not parts:
        return ""
    n = sum(1 for v in parts for c in v.checks if c.status == CheckStatus.SKIPPED)
    return (
        f"note: {n} distribution checks in {len(parts)} partition(s) were not judged (too few rows); "
        "bound the intended change with validation.expected_changes (docs: concepts, the change contract)\n"
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


def promoted_line(rec: Any) -> str:
    approved = f" (approved by {rec.approved_by})" if rec.approved_by else ""
    return (
        f"promoted {len(rec.partitions)} partition(s) into {rec.live_table} as {rec.id}{approved}: "
        f"live version {rec.live_version_before} -> {rec.live_version_after}"
    )


def history_table(recs: list[Any]) -> Table:
    table = Table(title="promotions and rollbacks")
    whole_column(table, "id", [r.id for r in recs])
    for col in ("kind", "at", "partitions", "live version", "undoes", "undone by", "schema", "user", "approved"):
        # Columns that name another row's id fold it over lines rather than cut it.
        table.add_column(col, overflow="fold" if col in NAMES_IDS else "ellipsis")
    for r in recs:
        parts = ", ".join(r.partitions[:3]) + (f" (+{len(r.partitions) - 3})" if len(r.partitions) > 3 else "")
        step = {"canary": " (canary)", "rest": f" (after canary {r.steps_of})"}.get(r.step or "", "")
        table.add_row(
            r.id,
            r.kind + step,
            r.at.strftime("%Y-%m-%d %H:%M:%S") if r.at else "",
            parts,
            f"{r.live_version_before} → {r.live_version_after}",
            r.target or (f"v{r.to_version}" if r.to_version else ""),
            r.undone_by or "",
            ", ".join(r.schema_change),
            r.user or "",
            f"{r.approved_by}: {r.approval_reason}" if r.approved_by else "",
        )
    return table


def print_backfill(result: Any, target: str = "", *, verbose: bool = False) -> None:
    """The main job's result, what matters first (`backfill_summary`); exits 1 (one error line)
    if anything did not pass. The recompute's full errors go to a log file one line names."""
    if verbose:
        out.print(run_summary(result.run, "recompute"))
        if result.validation.validation_id:
            print_verdicts(result.validation)
    for line in backfill_summary(result, target):
        out.print(line)
    if result.canary is not None:
        print_canary_failures(result.canary)
    log_failures(result.run)
    end(telling.told(table_backfill(result, target)))


def backfill_summary(result: Any, target: str = "") -> list[Text]:
    """The main job in a few lines: the counts, each failed and held partition with its first
    reason, what was promoted (with the id `rollback --promotion` takes) and the report. The
    per-partition table is `--verbose`'s, or `validate`'s: sixty rows buried the three that
    failed."""
    account = table_backfill(result, target)
    first = {v.partition: v.reasons[0].message for v in result.validation.verdicts if v.reasons}
    failed = {
        k: account.failed.get(k) or first.get(k, "verdict fail")
        for k in account.selected
        if k in account.failed or account.judged.get(k) == CheckStatus.FAIL
    }
    held = {k: f"{why}: {first[k]}" if k in first else why for k, why in account.held.items() if k not in failed}
    c = account.counts
    lines = [
        Text(
            f"backfill of {target or result.run.run_id}: {len(account.selected)} partition(s): {c['pass']} pass, "
            f"{c['warn']} warn, {c['fail']} fail; {len(held)} held, {c['promoted']} promoted"
        )
    ]
    lines += _listed("failed", "red", failed) + _listed("held", "yellow", held)
    if result.run.stopped and not result.validation.validation_id:
        lines.append(Text("validate: skipped, the run was stopped (--promote-partial judges what it finished)"))
    lines += [Text(line) for line in _promotion_lines(result)]
    if result.reports:
        lines.append(Text(f"report: {result.reports['html']}"))
    return lines


def _listed(word: str, style: str, why: dict[str, str], most: int = 10) -> list[Text]:
    """A line per partition with its reason, the first `most` of them."""
    lines = [Text.assemble((word, style), f" {k}: {reason}") for k, reason in list(why.items())[:most]]
    if len(why) > most:
        lines.append(Text(f"… and {len(why) - most} more {word} (--verbose lists every partition)"))
    return lines


def _promotion_lines(result: Any) -> list[str]:
    """What the job's last step did to live: promoted (and as which id), already live, nothing."""
    lines = []
    if result.already_live:
        ids = ", ".join(sorted(set(result.already_live.values())))
        lines.append(f"promote: {len(result.already_live)} passing partition(s) already live from this shadow ({ids})")
    if result.canary is not None:
        lines += canary_lines(result.canary)
    elif result.promotion is not None:
        lines.append(promoted_line(result.promotion))
    elif result.promote_requested and not result.already_live and result.validation.validation_id:
        lines.append("promote: no partition passed; live is untouched")
    return lines


def _rows(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def print_run_plan(plan: Any) -> None:
    """A dry run's plan: the window it chose, a table of the partitions, and one summary line."""
    if plan.window is not None:
        w = plan.window
        out.print(
            f"window: the last {w.last} partition(s) complete at {w.cutoff.isoformat()} "
            f"(now {w.now.isoformat()} minus the lag), time zone {w.zone}",
            markup=False,
        )
    table = Table(title=f"{plan.shadow_table} from {plan.live_table}: dry run, nothing written")
    for col in ("partition", "action", "reason", "chunk", "live rows", "shadow rows"):
        table.add_column(col)
    for p in plan.partitions:
        style = "green" if p.action == "recompute" else "dim"
        chunk = "" if p.chunk is None else str(p.chunk + 1)
        table.add_row(
            p.partition, Text(p.action, style=style), p.reason, chunk, _rows(p.live_rows), _rows(p.shadow_rows)
        )
    out.print(table)
    out.print(
        f"would recompute {len(plan.to_recompute)} partition(s) in {len(plan.chunks)} chunk(s) of up to "
        f"{plan.chunk_size} ({plan.max_parallel} at once) and skip {len(plan.to_skip)} already written",
        markup=False,
    )


def print_promotion(plan: Any, record: Any, target: str = "", command: str = "promote") -> None:
    """A promotion's plan (or an approval's: `command`), then its line; exits 1 if it committed
    nothing (`command_result.table_promotion`)."""
    print_plan(plan, dry_run=False)
    end(telling.told(table_promotion(plan, record, target, command)))
    out.print(promoted_line(record))


def say_recorded(bf: Any) -> None:
    """Record, and say, each promotion or rollback a kill cut off between its commit and its
    row in the state store: the rerun finishes it (from the commit's own audit trail)."""
    known = {r.id for r in bf.store.promotions(bf.live_table)}
    for rec in bf.history(reconcile_live=True):
        if rec.id not in known:
            out.print(
                f"{rec.id}: finished a {rec.kind} of {len(rec.partitions)} partition(s) cut off by a kill "
                "after its commit (recorded from live's history)",
                markup=False,
            )


def print_finished_canaries(finished: list[Any]) -> None:
    """Canaries a kill had left unchecked, finished by this command, a line each; exits 1 if one
    failed on live (it was rolled back, and nothing else is promoted: `outcome.canary_outcome`)."""
    for f in finished:
        out.print(f.line(), markup=False)
    end(finished_canaries_outcome(finished))


def print_canary(result: Any, target: str = "") -> None:
    """A canary promotion, step by step; exits 1 naming the check if the canary was rolled back
    (or a canary a kill had left unchecked failed its checks now)."""
    print_finished_canaries(result.finished)
    if result.canary is None:
        print_plan(result.plan, dry_run=False)
    else:
        canary_steps(result)
    end(telling.told(table_canary(result, target)))


def canary_lines(result: Any) -> list[str]:
    """A canary promotion's steps: the canary, its checks on live, the rest."""
    passed = sum(1 for c in result.checks if c.status == CheckStatus.PASS)
    lines = [
        "canary: " + promoted_line(result.canary),
        f"canary checks on live: {passed} of {len(result.checks)} passed",
    ]
    return lines + (["rest: " + promoted_line(result.rest)] if result.rest is not None else [])


def canary_steps(result: Any) -> None:
    """Print a canary promotion's steps, and the failed checks if they rolled it back."""
    for line in canary_lines(result):
        out.print(line)
    print_canary_failures(result)


def print_canary_failures(result: Any) -> None:
    """The checks on live that rolled a canary back (the first ten), on stderr."""
    if result.rolled_back is not None:
        for c in result.failed[:10]:
            console.print(Text.assemble(("failed", "red"), f" {c.message}"))


def verdict_table(order: list[str], result: PipelineValidation) -> Table:
    """Each partition's verdict in every layer and for the pipeline, with what held it back."""
    table = Table(title="pipeline verdicts")
    for head in ["partition", *order, "pipeline", "held back by"]:
        table.add_column(head)
    for v in result.verdicts:
        cells = [Text(str(v.layers.get(k) or "-"), style=VERDICT_STYLES.get(str(v.layers.get(k)), "")) for k in order]
        table.add_row(
            Text(v.partition),
            *cells,
            Text(str(v.verdict), style=VERDICT_STYLES[str(v.verdict)]),
            Text(", ".join(v.failed_in)),
        )
    return table


def pipeline_summary(result: PipelineValidation) -> list[Text]:
    """A pipeline job's verdicts in a few lines: the counts, and each partition that did not
    pass with the layers (or cross-layer checks) that held it back; the whole table is
    `--verbose`'s, or `pipeline validate`'s."""
    counts = {s: sum(1 for v in result.verdicts if v.verdict == s) for s in CheckStatus}
    lines = [
        Text(
            f"pipeline verdicts: {len(result.verdicts)} partition(s): {counts[CheckStatus.PASS]} pass, "
            f"{counts[CheckStatus.WARN]} warn, {counts[CheckStatus.FAIL]} fail"
        )
    ]
    for status, style in ((CheckStatus.FAIL, "red"), (CheckStatus.WARN, "yellow")):
        why = {v.partition: "in " + ", ".join(v.failed_in) for v in result.verdicts if v.verdict == status}
        lines += _listed(str(status), style, why)
    return lines


def members(rec: PipelineRecord) -> str:
    """A set promotion's members: each layer and its own promotion id."""
    return ", ".join(f"{k} {pid}" for k, pid in rec.members)


def pipeline_history_table(recs: list[PipelineRecord]) -> Table:
    table = Table(title="pipeline history")
    whole_column(table, "id", [r.id for r in recs])
    for head in ("kind", "state", "partitions", "members", "undone by", "approved"):
        table.add_column(head, overflow="fold" if head in NAMES_IDS else "ellipsis")
    for r in recs:
        approved = f"{r.approved_by}: {r.approval_reason}" if r.approved_by else ""
        cells = (r.id, r.kind, r.state, str(len(r.partitions)), members(r), r.undone_by or "", approved)
        table.add_row(*(Text(c) for c in cells))
    return table
