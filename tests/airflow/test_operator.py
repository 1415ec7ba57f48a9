"""The operator with a real Airflow 3.3: `dag.test()` of the example DAGs (examples/airflow)
against the demo's Delta tables on Sail, through the tool's real CLI in its own venv.

Each outcome is asserted as Airflow records it: a night that passes succeeds and a re-run of
its logical date selects the same partitions; a failing day fails the task without a retry,
with the summary pushed to XCom first; a run stopped by its time box is rescheduled and the
next try resumes it; held partitions skip the task, a person approves them through Airflow's
own REST API, and `approve` promotes them with the approver and the reason in the audit trail.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from airflow.models.hitl import HITLDetail
from airflow.models.taskinstance import TaskInstance
from airflow.models.taskreschedule import TaskReschedule
from airflow.utils.session import create_session
from airflow.utils.state import TaskInstanceState
from sb_airflow_env import CLI, LINEAGE, ROOT
from sqlalchemy import func, select

from shadow_backfill.integrations.airflow import XCOM_KEY

UTC = dt.timezone.utc
EXAMPLES = ROOT / "examples" / "airflow"
APPROVER, REASON = "alice", "spend +2% is the currency fix; INC-42"


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _demo(folder: Path, warn_above_pct: float | None = None) -> Path:
    """The README's demo on Sail (Delta); `warn_above_pct`: the spend changes a person must
    approve (v2 moves spend by +2% every day: every good day warns)."""
    subprocess.run([CLI, "demo", str(folder), "--no-run", "--format", "delta", "--remote", "sail"], check=True)
    config = folder / "backfill.yaml"
    if warn_above_pct is not None:
        data = yaml.safe_load(config.read_text())
        for column in ("spend", "spend_per_session"):
            data["validation"]["expected_changes"][column]["mean_change_pct"]["warn"] = warn_above_pct
        config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


@pytest.fixture(scope="module")
def demos(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("demos")
    return {"nightly": _demo(root / "nightly"), "approval": _demo(root / "approval", warn_above_pct=1.5)}


@pytest.fixture
def config_var(monkeypatch: pytest.MonkeyPatch, demos: dict[str, Path]) -> Iterator[Any]:
    """Point the Airflow Variable `shadow_backfill_config` at one demo (from the environment,
    as any secrets backend would provide it)."""

    def use(name: str) -> Path:
        monkeypatch.setenv("AIRFLOW_VAR_SHADOW_BACKFILL_CONFIG", str(demos[name]))
        return demos[name]

    yield use


def _states(run: Any) -> dict[str, str]:
    with create_session() as session:
        return {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}


def _summary(run: Any, task_id: str) -> dict[str, Any]:
    with create_session() as session:
        ti = run.get_task_instance(task_id, session=session)
        return ti.xcom_pull(task_ids=task_id, key=XCOM_KEY, session=session)


def _tries(run: Any, task_id: str) -> int:
    with create_session() as session:
        return run.get_task_instance(task_id, session=session).try_number


def test_a_night_that_passes_succeeds_and_a_rerun_selects_the_same_partitions(config_var: Any) -> None:
    config_var("nightly")
    nightly = _example("nightly_late_data").dag
    night = dt.datetime(2024, 1, 12, tzinfo=UTC)
    first = nightly.test(logical_date=night)
    assert _states(first) == {"backfill": "success"}
    done = _summary(first, "backfill")
    assert done["selected"] == ["2024-01-07", "2024-01-08", "2024-01-09"]
    assert (done["exit_code"], done["outcome"], done["promoted"]) == (0, "success", done["selected"])
    assert done["promotion_id"] and done["report"].endswith("report.html")

    again = nightly.test(logical_date=night)  # months later, the same DAG run's date
    assert _states(again) == {"backfill": "success"}
    rerun = _summary(again, "backfill")
    assert rerun["selected"] == done["selected"], "a re-run of the same logical date selects the same days"
    assert rerun["promoted"] == [], "already live: nothing is promoted twice"


def test_a_failing_day_fails_the_task_without_a_retry_and_pushes_the_summary(config_var: Any) -> None:
    config_var("nightly")
    run = _example("nightly_late_data").dag.test(logical_date=dt.datetime(2024, 1, 13, tzinfo=UTC))
    assert _states(run) == {"backfill": "failed"}
    assert _tries(run, "backfill") == 1, "a data failure is not retried (the DAG allows 2 retries)"
    failed = _summary(run, "backfill")
    assert (failed["exit_code"], failed["outcome"], failed["failed"]) == (1, "fail", ["2024-01-10"])
    assert failed["line"] == "1 partition(s) failed validation: 2024-01-10"


def test_a_time_box_stop_is_rescheduled_and_the_next_try_resumes(
    config_var: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first try is stopped as a scheduler's SIGTERM stops it, right after its first chunk
    committed (`SHADOW_BACKFILL_STOP_AT`: a named point, no clock); Airflow reschedules the
    task, and the next try skips the written days and finishes the job."""
    config_var("nightly")
    stopped = tmp_path / "stopped"
    monkeypatch.setenv("SHADOW_BACKFILL_STOP_AT", f"recompute.after_commit={stopped}")
    nightly = _example("nightly_late_data").dag
    nightly.get_task("backfill").reschedule_after = dt.timedelta(seconds=1)  # the DAG's 10 minutes, shortened
    run = nightly.test(logical_date=dt.datetime(2024, 1, 20, tzinfo=UTC))
    assert stopped.exists(), "the first try was stopped after its first commit"
    with create_session() as session:
        reschedules = session.scalar(
            select(func.count())
            .select_from(TaskReschedule)
            .join(TaskInstance, TaskReschedule.ti_id == TaskInstance.id)
            .where(TaskInstance.dag_id == "shadow_backfill_nightly", TaskInstance.run_id == run.run_id)
        )
    assert reschedules == 1, "up_for_reschedule once, then the try that finished"
    assert _states(run) == {"backfill": "success"}
    resumed = _summary(run, "backfill")
    assert resumed["selected"] == ["2024-01-15", "2024-01-16", "2024-01-17"]
    assert resumed["counts"]["skipped"] >= 1, "the resumed try skipped what the stopped one wrote"
    assert resumed["promoted"] == resumed["selected"]


def _answer_approval(dag_id: str, answer: dict[str, Any], seen: dict[str, Any]) -> None:
    """Answer the pending approval as a person does, through Airflow's own REST API (its real
    route, auth and JWT, in process), as soon as the task waits for input."""
    from airflow.api_fastapi.app import create_app, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    client = TestClient(create_app(apps="core"))
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=APPROVER, role="admin"))
    waiting = threading.Event()
    while not waiting.wait(0.2):
        with create_session() as session:
            row = session.execute(
                select(TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index)
                .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
                .where(
                    TaskInstance.dag_id == dag_id,
                    HITLDetail.responded_at.is_(None),
                    TaskInstance.state == TaskInstanceState.AWAITING_INPUT,
                )
            ).first()
        if row is not None:
            url = f"/api/v2/dags/{dag_id}/dagRuns/{row.run_id}/taskInstances/{row.task_id}/{row.map_index}/hitlDetails"
            headers = {"Authorization": f"Bearer {token}"}
            seen["subject"] = client.get(url, headers=headers).json()["subject"]
            seen["status"] = client.patch(url, json=answer, headers=headers).status_code
            return


def test_held_partitions_wait_for_a_person_and_approve_records_who_and_why(config_var: Any) -> None:
    config = config_var("approval")
    approval = _example("approval").dag
    seen: dict[str, Any] = {}
    answer = {"chosen_options": ["Approve"], "params_input": {"reason": REASON}}
    person = threading.Thread(target=_answer_approval, args=(approval.dag_id, answer, seen), daemon=True)
    person.start()
    run = approval.test(logical_date=dt.datetime(2024, 1, 12, tzinfo=UTC))
    person.join(timeout=60)
    assert seen == {"subject": "shadow-backfill: approve 2024-01-07, 2024-01-08, 2024-01-09?", "status": 200}
    assert _states(run) == {"backfill": "skipped", "approval": "success", "approve": "success"}
    held = _summary(run, "backfill")
    assert (held["exit_code"], held["outcome"], held["warned"]) == (
        3,
        "skip",
        ["2024-01-07", "2024-01-08", "2024-01-09"],
    )
    approved = _summary(run, "approve")
    assert approved["promoted"] == held["warned"]
    history = json.loads(
        subprocess.run([CLI, "history", str(config), "--json"], check=True, capture_output=True, text=True).stdout
    )
    last = history[-1]
    assert (last["approved_by"], last["approval_reason"], last["partitions"]) == (APPROVER, REASON, held["warned"])
    assert last["id"] == approved["promotion_id"]


def _lineage_until(found: Any, timeout: float = 60) -> list[dict[str, Any]]:
    """The events the backend has received once `found(events)` holds (Airflow's provider posts
    from a thread of its own, after the task ends)."""
    with LINEAGE._arrived:
        if not LINEAGE._arrived.wait_for(lambda: found([r.json() for r in LINEAGE.requests]), timeout):
            raise AssertionError(f"lineage: {len(LINEAGE.requests)} event(s), not the ones expected")
        return [r.json() for r in LINEAGE.requests]


def test_the_tools_lineage_nests_under_the_task_and_the_task_names_its_outputs(config_var: Any) -> None:
    """With the OpenLineage provider on, the tool's run events name the task's run as their
    parent (`OPENLINEAGE_PARENT_ID`), and the task's own COMPLETE event lists the live table the
    command promoted into, named as the tool's events name it; the tool's events keep the spec."""
    from support.openlineage_spec import validate_event

    config_var("nightly")
    job = "shadow_backfill_nightly.backfill"
    run = _example("nightly_late_data").dag.test(logical_date=dt.datetime(2024, 1, 25, tzinfo=UTC))
    assert _states(run) == {"backfill": "success"}
    summary = _summary(run, "backfill")
    assert summary["promoted"] == ["2024-01-20", "2024-01-21", "2024-01-22"]

    def this_task(e: dict[str, Any]) -> bool:
        nominal = e["run"]["facets"].get("nominalTime", {}).get("nominalStartTime", "")
        return e["job"]["name"] == job and e["eventType"] == "COMPLETE" and nominal.startswith("2024-01-25")

    events = _lineage_until(lambda events: any(this_task(e) for e in events))
    task = next(e for e in events if this_task(e))
    task_run = task["run"]["runId"]
    mine = [e for e in events if e["producer"].startswith("urn:shadow-backfill:")]
    nested = [e for e in mine if e["run"]["facets"].get("parent", {}).get("run", {}).get("runId") == task_run]
    assert [e["eventType"] for e in nested] == ["START", "COMPLETE"]
    for e in nested:
        parent = e["run"]["facets"]["parent"]["job"]
        assert (parent["namespace"], parent["name"]) == ("airflow-tests", job)
        validate_event(e, {"shadowBackfill": ROOT / "docs" / "lineage-facet.schema.json"})
    outputs = [{"namespace": d["namespace"], "name": d["name"]} for d in task["outputs"]]
    assert outputs == summary["outputs"] and len(outputs) == 1
    assert outputs[0]["name"].endswith("warehouse/delta/features")
