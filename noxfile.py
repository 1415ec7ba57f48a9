"""Developer sessions. They run in the current environment (`pip install -e '.[dev]'` first):
the test suite needs a JVM and jars that a fresh nox virtualenv would only download again."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """One pytest process per group, because one Python process holds one kind of Spark session
    (local, Spark Connect, local-cluster): the classic-Spark group (every `backend` test on
    Iceberg, plus the classic-only tests), then the Sail group (every `backend` test on Delta over
    Spark Connect, plus the Sail-only tests), then the multi-executor test."""
    session.run("python", "-m", "pytest", "-m", "not sail and not cluster", *session.posargs)
    session.run("python", "-m", "pytest", "-m", "sail", *session.posargs)
    session.run("python", "-m", "pytest", "-m", "cluster", *session.posargs)


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
