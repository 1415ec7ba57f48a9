"""The environment of a real Airflow for the operator's tests (tests/airflow), in its own venv (`.venv-airflow`,
made by `nox -s tests`): a temporary `AIRFLOW_HOME` with its SQLite metadata database migrated
by `airflow db migrate`, the example DAGs (examples/airflow) as the DAGs folder, and the tool's
CLI from the README's venv (`SB_AIRFLOW_CLI`, default `.venv/bin/shadow-backfill`), so the
dependency sets of Airflow and Spark stay apart as in production.

Airflow reads its configuration when it is first imported, so the environment is set here, at
import, before any test module imports Airflow. Outside the Airflow venv these tests are
skipped, unless `SB_AIRFLOW_REQUIRED=1` (CI sets it: a missing Airflow fails there).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from support.receiver import Receiver, receiver  # noqa: E402

# One OpenLineage backend on loopback for the whole process, for Airflow's provider (the task's
# events) and the tool's own client (the command's events, nested under the task's run).
_SERVER = receiver("ok")
LINEAGE: Receiver = _SERVER.__enter__()
LINEAGE_URL = LINEAGE.url.removesuffix("/hook")


def close_lineage() -> None:
    """Stop the backend (the session's end)."""
    _SERVER.__exit__(None, None, None)


HOME = Path(tempfile.mkdtemp(prefix="sb-airflow-home-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(HOME),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "examples" / "airflow"),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "SPARK_LOCAL_IP": "127.0.0.1",
        # the API's tokens (the approval's answer): a key of the length SHA-512 wants
        "AIRFLOW__API_AUTH__JWT_SECRET": "sb-airflow-tests-" + "k" * 64,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "http", "url": LINEAGE_URL}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "airflow-tests",
        "OPENLINEAGE_URL": LINEAGE_URL,
    }
)
CLI = os.environ.get("SB_AIRFLOW_CLI", str(ROOT / ".venv" / "bin" / "shadow-backfill"))
os.environ["SHADOW_BACKFILL_CLI"] = CLI
