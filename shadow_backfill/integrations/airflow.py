"""`ShadowBackfillOperator`: one command of the tool as an Airflow task (`pip install
'shadow-backfill[airflow]'`), whose states mean what the exit codes mean (`scheduling`).

Why a subprocess: the tool's engine (PySpark, a JVM, its jars) and Airflow's own dependencies
stay apart, in the worker's PATH or a venv of their own (`cli=`), as Soda and Cosmos advise, and
a JVM never lives in the worker's process. The task reads the command's `--json` result and
pushes its summary (`TaskSummaryDoc`) to the XCom `shadow_backfill` before it succeeds, fails,
is skipped or rescheduled. Nothing heavy is imported at DAG-parse time: this module imports
Airflow, pydantic, PyYAML and sqlglot only (the tool's config package), never PySpark.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowRescheduleException,
    AirflowSkipException,
)

from shadow_backfill.integrations.scheduling import (
    OnFailure,
    OnHeld,
    OnStopped,
    Selection,
    TaskOutcome,
    TaskSummaryDoc,
    command_line,
    outcome_of,
    read_result,
    summary_of,
)

XCOM_KEY = "shadow_backfill"
# `{{ logical_date }}`, and a run that has none (asset-triggered, or triggered with a null
# logical date: the name is then undefined) counts from when it was due to run.
RUN_DATE = "{{ logical_date if logical_date is defined and logical_date else dag_run.run_after }}"
TAIL_LINES = 20  # the stderr lines kept to name a crash that printed no result


class ShadowBackfillOperator(BaseOperator):
    """Run `command` (default `backfill`) on a table's `config` or a `pipeline` file.

    `as_of` (default the DAG run's logical date, `RUN_DATE`) is the instant `last`/`lag` count from, so a
    re-run of an old DAG run selects the partitions it selected then. Exit 0: success; 1: fails
    without retry (`on_failure="retry"` retries); 2: fails without retry; 3 (held for
    approval): `on_held` "skip" (default, so an approval task can follow), "fail" or "success";
    4 (stopped by the time box): `on_stopped` "reschedule" (default: the next try resumes the
    run after `reschedule_after`), "retry" or "fail"; anything else: a retryable failure."""

    template_fields: Sequence[str] = (
        "config",
        "pipeline",
        "as_of",
        "start",
        "end",
        "partitions",
        "lag",
        "until",
        "max_duration",
        "reason",
        "by",
    )
    ui_color = "#d9ead3"

    def __init__(
        self,
        *,
        config: str | None = None,
        pipeline: str | None = None,
        command: str = "backfill",
        as_of: str | None = RUN_DATE,
        last: int | None = None,
        lag: str | None = None,
        start: str | None = None,
        end: str | None = None,
        partitions: str | Sequence[str] | None = None,
        until: str | None = None,
        max_duration: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        on_held: OnHeld = "skip",
        on_failure: OnFailure = "fail",
        on_stopped: OnStopped = "reschedule",
        reschedule_after: dt.timedelta = dt.timedelta(minutes=5),
        cli: Sequence[str] = ("shadow-backfill",),
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        stop_grace: dt.timedelta = dt.timedelta(minutes=10),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (config is None) == (pipeline is None):
            raise ValueError("ShadowBackfillOperator takes one of config= or pipeline=")
        self.config, self.pipeline, self.command = config, pipeline, command
        self.as_of, self.last, self.lag = as_of, last, lag
        self.start, self.end, self.partitions = start, end, partitions
        self.until, self.max_duration, self.reason, self.by = until, max_duration, reason, by
        self.on_held, self.on_failure, self.on_stopped = on_held, on_failure, on_stopped
        self.reschedule_after, self.cli = reschedule_after, tuple(cli)
        self.extra_args, self.env, self.stop_grace = tuple(extra_args), env, stop_grace
        self._process: subprocess.Popen[str] | None = None
        self._summary: TaskSummaryDoc | None = None

    # ---- the command -------------------------------------------------------------------------

    def argv(self) -> list[str]:
        """The command line this task runs (after templating)."""
        chosen = Selection(
            start=self.start or None,
            end=self.end or None,
            partitions=self.partitions or None,
            last=self.last,
            lag=self.lag or None,
            as_of=self.as_of or None,
        )
        target = self.pipeline if self.pipeline is not None else self.config
        assert target is not None
        return command_line(
            self.cli,
            self.command,
            target,
            chosen,
            pipeline=self.pipeline is not None,
            until=self.until or None,
            max_duration=self.max_duration or None,
            reason=self.reason or None,
            by=self.by or None,
            extra=self.extra_args,
        )

    def execute(self, context: Context) -> dict[str, Any]:
        argv = self.argv()
        self.log.info("shadow-backfill: %s", " ".join(argv))
        environ = {**os.environ, **(self.env or {}), **_lineage_parent(context)}
        code, stdout, tail = self._run(argv, environ)
        outcome = outcome_of(code, on_held=self.on_held, on_failure=self.on_failure, on_stopped=self.on_stopped)
        target = self.pipeline or self.config or ""
        summary = summary_of(
            read_result(stdout), self.command, target, code, outcome, _last_error(tail) if code else ""
        )
        self._summary = summary
        pushed = summary.model_dump(mode="json")
        context["ti"].xcom_push(key=XCOM_KEY, value=pushed)  # before the task's state is decided
        return self._end(summary, pushed)

    def _end(self, summary: TaskSummaryDoc, pushed: dict[str, Any]) -> dict[str, Any]:
        """Success returns the summary; every other outcome raises what Airflow acts on."""
        why = f"shadow-backfill {summary.command} exited {summary.exit_code}: {summary.line or 'no reason printed'}"
        if summary.outcome == TaskOutcome.SUCCESS:
            return pushed
        if summary.outcome == TaskOutcome.SKIP:
            raise AirflowSkipException(why)
        if summary.outcome == TaskOutcome.FAIL:
            raise AirflowFailException(why)
        if summary.outcome == TaskOutcome.RESCHEDULE:
            self.log.info("%s; rescheduled in %s, the next try resumes the run", why, self.reschedule_after)
            raise AirflowRescheduleException(reschedule_date=dt.datetime.now(dt.timezone.utc) + self.reschedule_after)
        raise AirflowException(why)

    def _run(self, argv: list[str], environ: dict[str, str]) -> tuple[int, str, list[str]]:
        """The CLI as a child process: its stderr (progress, warnings, the error line) to the
        task's log as it comes, its stdout (the result) kept."""
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        chunks: list[str] = []
        # In the task's own process group: when Airflow's supervisor signals the task's group
        # (a kill, a timeout, its escalation to SIGKILL), the tool gets the same signal.
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
        self._process = process
        assert process.stdout is not None and process.stderr is not None
        errors, results = process.stderr, process.stdout

        def log_stderr() -> None:
            for line in errors:
                tail.append(line.rstrip("\n"))
                self.log.info("%s", line.rstrip("\n"))

        # Both pipes drained by threads: a large result or log never blocks the tool, even
        # while `on_kill` waits for it to stop.
        readers = [threading.Thread(target=log_stderr, daemon=True)]
        readers.append(threading.Thread(target=lambda: chunks.append(results.read()), daemon=True))
        for reader in readers:
            reader.start()
        code = process.wait()
        for reader in readers:
            reader.join()
        self._process = None
        return code, "".join(chunks), list(tail)

    def on_kill(self) -> None:
        """Stop the tool as a time box does (SIGTERM: it finishes its chunk, exits 4, and the
        next try resumes); after `stop_grace`, kill it."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=self.stop_grace.total_seconds())
        except subprocess.TimeoutExpired:
            process.kill()

    # ---- lineage -----------------------------------------------------------------------------

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The live tables the command wrote, named as the tool's own events name them (its
        events nest under this task through `OPENLINEAGE_PARENT_ID`)."""
        try:
            from airflow.providers.common.compat.openlineage.facet import Dataset
            from airflow.providers.openlineage.extractors import OperatorLineage
        except ImportError:
            return None
        summary = self._summary
        wrote = summary is not None and bool(summary.promoted)
        outputs = [Dataset(namespace=d.namespace, name=d.name) for d in summary.outputs] if wrote and summary else []
        return OperatorLineage(outputs=outputs)


def _lineage_parent(context: Context) -> dict[str, str]:
    """`OPENLINEAGE_PARENT_ID` of this task when the OpenLineage provider is installed, so the
    tool's run events name the task's run as their parent."""
    try:
        from airflow.providers.openlineage.plugins.macros import lineage_parent_id
    except ImportError:
        return {}
    try:
        return {"OPENLINEAGE_PARENT_ID": lineage_parent_id(context["ti"])}
    except Exception:  # the provider cannot name the run (disabled, not configured): no parent
        return {}


def _last_error(tail: Sequence[str]) -> str:
    """The tool's last `error:` line (a command that printed no result still printed one)."""
    for line in reversed(tail):
        if line.startswith("error: "):
            return line.removeprefix("error: ")
    return tail[-1] if tail else ""


__all__ = ["XCOM_KEY", "ShadowBackfillOperator"]
