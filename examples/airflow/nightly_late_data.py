"""The nightly late-data job: every night, recompute the last 3 complete days (events arrive up
to 2 days late), validate them against live, promote what passed.

The window is counted from the DAG run's logical date (`as_of`, the operator's default), not
the worker's clock: a re-run of last Tuesday's run selects Tuesday's partitions. The time box
(`max_duration`) stops the run between chunks when the night's budget is spent; the task is
then rescheduled and the next try resumes where the run stopped.

Set the Airflow Variable `shadow_backfill_config` to the backfill config's path, and
`SHADOW_BACKFILL_CLI` in the worker's environment to the tool's command when it lives in a venv
of its own (default: `shadow-backfill` on the PATH).
"""

from __future__ import annotations

import datetime as dt
import os
import shlex

from airflow.sdk import DAG

from shadow_backfill.integrations.airflow import ShadowBackfillOperator

with DAG(
    "shadow_backfill_nightly",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,  # two nights' windows overlap: one run at a time
    # retries are for what a retry can fix (a lost worker); the operator fails a data failure
    # (exit 1) and a mistake (exit 2) without using them
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=5)},
    tags=["shadow-backfill"],
) as dag:
    ShadowBackfillOperator(
        task_id="backfill",
        config="{{ var.value.shadow_backfill_config }}",
        command="backfill",
        last=3,
        lag="2d",
        as_of="{{ logical_date }}",
        max_duration="{{ var.value.get('shadow_backfill_budget', '4h') }}",
        on_held="fail",  # nightly: a held day is a page, not a skip (see approval.py for the other way)
        reschedule_after=dt.timedelta(minutes=10),
        cli=shlex.split(os.environ.get("SHADOW_BACKFILL_CLI", "shadow-backfill")),
    )
