"""Developer sessions. `tests-spark35`, `lint` and `typecheck` run in the current environment
(`pip install -e '.[spark35,delta,sail,dev]'` first); `tests-spark4` keeps its own virtualenv
with PySpark 4.1. The jars come from Spark's Ivy cache (`~/.ivy2` for 3.5, `~/.ivy2.5.2` for 4)."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests-spark35", "tests-spark4", "lint", "typecheck"]
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


CLASSIC = "not sail and not cluster and not connect"
# Spark 3.5's Connect server cannot be bound to loopback (no bind-address setting), so the real
# server's group runs on Spark 4; Sail, an engine of its own whatever the PySpark, runs on 3.5.
GROUPS = {"3.5": (CLASSIC, "sail", "cluster"), "4": (CLASSIC, "connect", "cluster")}


def _groups(session: nox.Session, python: str, line: str) -> None:
    """One pytest process per group, because one Python process holds one kind of Spark session
    (local, Spark Connect, local-cluster): the classic-Spark group (every `backend` test on
    Iceberg and on Delta with delta-spark, plus the classic-only tests), then the Spark Connect
    group (every `backend` test on Delta over Sail on 3.5; on Iceberg and Delta over a real Spark
    Connect server on 4), then the multi-executor test."""
    for group in GROUPS[line]:
        # the slowest tests in the log: where CI time goes (issue 13: CI within 25 minutes)
        session.run(python, "-m", "pytest", "-m", group, "--durations=15", *session.posargs, external=True)


@nox.session(python=False, name="tests-spark35")
def tests_spark35(session: nox.Session) -> None:
    """The suite on PySpark 3.5, in the current environment (`pip install -e '.[spark35,...]'`)."""
    import pyspark

    if not pyspark.__version__.startswith("3.5."):
        session.error(f"tests-spark35 needs PySpark 3.5 in this environment, found {pyspark.__version__}")
    _groups(session, "python", "3.5")


@nox.session(python=False, name="tests-spark4")
def tests_spark4(session: nox.Session) -> None:
    """The suite on PySpark 4.1, in its own virtualenv `.venv-spark4` (made with the stock pip
    of `python3 -m venv`, created once and then reused)."""
    venv = ".venv-spark4"
    python = f"{venv}/bin/python"
    if not os.path.exists(python):
        session.run("python3", "-m", "venv", venv, external=True)
    session.run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "-e",
        ".[spark4,delta,sail,dev]",
        "pyspark[connect]>=4.1,<4.2",
        external=True,
    )
    _groups(session, python, "4")


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", "--exclude", "*.md", ".")


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    session.run("mypy", "shadow_backfill")


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Every benchmark scenario and the table of ratios against the targets (not part of CI:
    minutes of seeded workloads; results land in bench/results/*.json)."""
    session.run("python", "-m", "bench", "all", *session.posargs)
