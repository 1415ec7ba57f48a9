"""Developer sessions, one per test tier and Spark line.

- `unit`: tests/unit, no PySpark imported (seconds); run it on every change.
- `tests-spark4`: the default line (PySpark 4.1, its own virtualenv `.venv-spark4`): every tier
  on every backend (classic Spark, Sail, a real Spark Connect server) and the multi-executor test.
- `tests-spark35`: the second line (PySpark 3.5, the current environment): the unit tier, the
  format contract on every backend of the line (classic Spark, Sail), one end-to-end scenario
  per backend (`smoke`) and the kill trials on classic Spark (`slow`, their own slice of the
  seeded kill points): what can differ between Spark lines is how Spark, its JVM and the
  formats' runtimes behave, which the contract, one full loop and the kills exercise; the rest of
  the suite tests the tool's own logic, the same on both lines.
- `lint`, `typecheck`.

Each pytest process writes a JUnit file under `.ci-results/`; `nox -s times` prints the seconds
of each tier per line from them (`.ci/run` calls it last).
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.sessions = ["tests-spark35", "tests-spark4", "lint", "typecheck", "times"]
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
RESULTS = Path(".ci-results")

CLASSIC = "not sail and not cluster and not connect"
# One pytest process per kind of Spark session (one Python process holds one kind): the classic
# group (Iceberg, Delta with delta-spark, Parquet, and the classic-only tests), Sail, a real
# Spark Connect server (Spark 4 only: Spark 3.5's server cannot be bound to loopback), and the
# multi-executor test on local-cluster.
LINES = {
    "4.1": [
        ("formats e2e", CLASSIC),
        ("formats e2e", "sail"),
        ("formats e2e", "connect"),
        ("e2e", "cluster"),
    ],
    "3.5": [
        ("formats", CLASSIC),
        ("formats", "sail"),
        # and the kill trials (`slow`) on classic Spark: each line kills at its own slice of the
        # seeded kill points, so that CI as a whole covers twice as many on each classic backend
        ("e2e", f"(smoke or slow) and ({CLASSIC})"),
        ("e2e", "smoke and sail"),
    ],
}


def _pytest(session: nox.Session, python: str, name: str, paths: list[str], *args: str) -> None:
    """One pytest process; its JUnit file is `.ci-results/<name>.xml` and its wall time is printed."""
    RESULTS.mkdir(exist_ok=True)
    started = time.monotonic()
    # the slowest tests in the log: where CI time goes
    session.run(
        python,
        "-m",
        "pytest",
        *paths,
        *args,
        "--durations=10",
        f"--junitxml={RESULTS / name}.xml",
        *session.posargs,
        external=True,
    )
    session.log(f"time: {name}: {time.monotonic() - started:.0f} s")


def _line(session: nox.Session, python: str, line: str) -> None:
    _pytest(session, python, f"{line}-unit", ["tests/unit"])
    for tiers, group in LINES[line]:
        paths = [f"tests/{t}" for t in tiers.split()]
        slug = group.replace(" ", "-").replace("(", "").replace(")", "")
        _pytest(session, python, f"{line}-{tiers.replace(' ', '+')}-{slug}", paths, "-m", group)


@nox.session(python=False)
def unit(session: nox.Session) -> None:
    """The unit tier in the current environment: no JVM, no PySpark imported."""
    _pytest(session, "python", "unit", ["tests/unit"])


@nox.session(python=False, name="tests-spark35")
def tests_spark35(session: nox.Session) -> None:
    """The second line, PySpark 3.5, in the current environment (`pip install -e '.[spark35,...]'`)."""
    import pyspark

    if not pyspark.__version__.startswith("3.5."):
        session.error(f"tests-spark35 needs PySpark 3.5 in this environment, found {pyspark.__version__}")
    _line(session, "python", "3.5")


@nox.session(python=False, name="tests-spark4")
def tests_spark4(session: nox.Session) -> None:
    """The default line, PySpark 4.1, in its own virtualenv `.venv-spark4` (made with the stock
    pip of `python3 -m venv`, created once and then reused)."""
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
    _line(session, python, "4.1")


@nox.session(python=False)
def times(session: nox.Session) -> None:
    """Seconds per tier and line, summed from the JUnit files of the last runs (setup included:
    a tier's first test carries its Spark session's start)."""
    rows: dict[tuple[str, str], float] = {}
    for path in sorted(RESULTS.glob("*.xml")):
        line = path.stem.split("-")[0] if path.stem[0].isdigit() else "current"
        for case in ET.parse(path).iter("testcase"):
            parts = (case.get("classname") or "").split(".")  # tests.<tier>.<module>
            tier = parts[1] if len(parts) > 2 else "?"
            rows[(line, tier)] = rows.get((line, tier), 0.0) + float(case.get("time") or 0)
    for (line, tier), seconds in sorted(rows.items()):
        session.log(f"tier time: PySpark {line}: {tier}: {seconds:.0f} s")


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
