"""The Airflow tier's fixtures: skipped outside the Airflow venv unless `SB_AIRFLOW_REQUIRED=1`
(CI sets it: a missing Airflow fails there); the environment Airflow reads at its first import is
set by `sb_airflow_env`, imported here before any test module imports Airflow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("SB_AIRFLOW_REQUIRED") != "1":
    pytest.importorskip("airflow", reason="tests/airflow run in the Airflow venv (.venv-airflow)")

from sb_airflow_env import HOME, close_lineage


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The metadata database, migrated once per session (a few seconds on SQLite)."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    return HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the lineage backend while its thread still runs: left to the interpreter's exit, the
    receiver's cleanup would wait for a server thread that is already frozen."""
    close_lineage()
