"""A backfill whose held partitions wait for a person: backfill -> (held) approval -> approve.

`backfill` promotes what passed; partitions whose verdict is `warn` (a change larger than the
config lets through on its own) are held: the task is skipped (`on_held="skip"`), which starts
the approval task. A person answers it in Airflow's UI (or its REST API) with a reason; on
"Approve", `approve` promotes exactly the held partitions in one commit, and the audit trail
records who approved them, when and why (`shadow-backfill history`). On "Reject", `approve` is
skipped and live keeps its old content for those partitions.

Set the Airflow Variable `shadow_backfill_config` to the config's path, and
`SHADOW_BACKFILL_CLI` in the worker's environment to the tool's command (default:
`shadow-backfill` on the PATH).
"""

from __future__ import annotations

import datetime as dt
import os
import shlex

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param

from shadow_backfill.integrations.airflow import XCOM_KEY, ShadowBackfillOperator

CLI = shlex.split(os.environ.get("SHADOW_BACKFILL_CLI", "shadow-backfill"))
HELD = f"ti.xcom_pull(task_ids='backfill', key='{XCOM_KEY}')"

with DAG(
    "shadow_backfill_with_approval",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["shadow-backfill"],
) as dag:
    backfill = ShadowBackfillOperator(
        task_id="backfill",
        config="{{ var.value.shadow_backfill_config }}",
        last=3,
        lag="2d",
        on_held="skip",
        cli=CLI,
    )
    approval = ApprovalOperator(
        task_id="approval",
        subject="shadow-backfill: approve {{ " + HELD + "['warned'] | join(', ') }}?",
        body=(
            "{{ " + HELD + "['line'] }}\n\nReport: {{ " + HELD + "['report'] }}\n"
            "Approve to promote these partitions into {{ " + HELD + "['target'] }}; give a reason."
        ),
        # `approve` refuses an empty reason (exit 2): the audit trail keeps it
        params={"reason": Param("", type="string", description="why they may go to live")},
        trigger_rule="all_skipped",  # only when the backfill held partitions
        response_timeout=dt.timedelta(days=2),
    )
    approve = ShadowBackfillOperator(
        task_id="approve",
        config="{{ var.value.shadow_backfill_config }}",
        command="approve",
        partitions="{{ " + HELD + "['warned'] | join(',') }}",
        reason="{{ ti.xcom_pull(task_ids='approval')['params_input']['reason'] }}",
        by="{{ ti.xcom_pull(task_ids='approval')['responded_by_user']['name'] }}",
        cli=CLI,
    )
    backfill >> approval >> approve
