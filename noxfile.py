"""Developer sessions, one per test tier and Spark line.

- `unit`: tests/unit, no PySpark imported (seconds); run it on every change.
- `tests`: what CI runs, both Spark lines below and the static checks (ruff, mypy), two
  processes at a time.
- `tests-spark4`: the default line (PySpark 4.1, its own virtualenv `.venv-spark4`): every tier
  on every backend (classic Spark, Sail, a real Spark Connect server) and the multi-executor test.
- `tests-spark35`: the second line (PySpark 3.5, the current environment): the unit tier, the
  format contract on every backend of the line (classic Spark, Sail), one end-to-end scenario
  per backend (`smoke`) and the kill trials on classic Spark (`slow`, their own slice of the
  seeded kill points): what can differ between Spark lines is how Spark, its JVM and the
  formats' runtimes behave, which the contract, one full loop and the kills exercise; the rest of
  the suite tests the tool's own logic, the same on both lines.
- `lint`, `typecheck`, `docs`, `times`, `bench`.

Each pytest process writes a JUnit file under `.ci-results/` (and, run side by side, its output
in a `.log` there); `nox -s times` prints the seconds of each tier per line from them (`.ci/run`
calls it last)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nox

nox.options.sessions = ["tests", "times"]
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Two banners of the docs plugins about a coming MkDocs 2 (we pin mkdocs<2), at every build.
os.environ.setdefault("DISABLE_MKDOCS_2_WARNING", "true")
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
RESULTS = Path(".ci-results")

CLASSIC = "not sail and not cluster and not connect and not s3"
SPARK4_VENV = ".venv-spark4"
# One pytest process per kind of Spark session (one Python process holds one kind): the classic
# group (Iceberg, Delta with delta-spark, Parquet, and the classic-only tests), Sail, a real
# Spark Connect server (Spark 4 only: Spark 3.5's server cannot be bound to loopback), the
# multi-executor test on local-cluster, and the tables on a real S3 server (its session carries
# Hadoop's s3a connector). Each entry: tiers, -m expression.
LINES = {
    "4.1": [
        ("formats", CLASSIC),
        ("e2e", CLASSIC),
        ("formats e2e", "connect"),
        ("formats e2e", "sail"),
        ("e2e", "cluster"),
        # the format contract and the user's loop, kills and concurrent writers with the tables on
        # a real S3-compatible server on loopback (SeaweedFS), Iceberg and Delta: `store` tests
        ("formats e2e", "s3 and store"),
    ],
    "3.5": [
        # the format contract, one scenario per backend (`smoke`) and, on classic Spark, the kill
        # trials (`slow`): each line kills at its own slice of the seeded kill points, so that CI
        # as a whole covers twice as many on each classic backend
        ("formats e2e", f"(formats or smoke or slow) and ({CLASSIC})"),
        ("formats e2e", "(formats or smoke) and sail"),
    ],
}


@dataclass(frozen=True)
class Group:
    """One process of a lane: a pytest process (its name: its JUnit file is
    `.ci-results/<name>.xml`; interpreter, test folders, pytest arguments), or, given `argv`,
    a static check run as it is (ruff, mypy)."""

    name: str
    python: str
    paths: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()

    def command(self, posargs: list[str], basetemp: str) -> list[str]:
        if self.argv:
            return list(self.argv)
        # --durations: the slowest tests in the log, where CI time goes
        junit = f"--junitxml={RESULTS / self.name}.xml"
        return [
            self.python,
            "-m",
            "pytest",
            *self.paths,
            *self.args,
            "--durations=10",
            junit,
            *posargs,
            "-p",
            "no:cacheprovider",
            f"--basetemp={basetemp}",
        ]


def _groups(python: str, line: str) -> list[Group]:
    groups = [Group(f"{line}-unit", python, ("tests/unit",))]
    for tiers, mark in LINES[line]:
        slug = mark.replace(" ", "-").replace("(", "").replace(")", "")
        paths = tuple(f"tests/{t}" for t in tiers.split())
        groups.append(Group(f"{line}-{tiers.replace(' ', '+')}-{slug}", python, paths, ("-m", mark)))
    return groups


def _run_group(session: nox.Session, group: Group, quiet: bool) -> bool:
    """Run one group, its output in `.ci-results/<name>.log` when `quiet` (groups run side by
    side), and say how long it took. Its temporary folder is its own, and goes when it passed."""
    RESULTS.mkdir(exist_ok=True)
    basetemp = tempfile.mkdtemp(prefix=f"sb-{group.name}-")
    started = time.monotonic()
    log = (RESULTS / f"{group.name}.log").open("w") if quiet else None
    with log or contextlib.nullcontext():
        code = subprocess.call(group.command(session.posargs, basetemp), stdout=log, stderr=subprocess.STDOUT)
    if code == 0:
        shutil.rmtree(basetemp, ignore_errors=True)
    elif quiet:
        print((RESULTS / f"{group.name}.log").read_text()[-20000:])
    session.log(f"time: {group.name}: {time.monotonic() - started:.0f} s ({'passed' if code == 0 else 'FAILED'})")
    return code == 0


def _run_lanes(session: nox.Session, lanes: list[list[Group]], ready: Future[str] | None = None) -> None:
    """Run each lane's groups one after the other, the lanes side by side, and fail the session
    if a group failed. Why two lanes on 2 cores: a pytest process of small Spark jobs keeps the
    cores about 70% busy (it waits on JVM starts, its own polling and Spark's scheduling); two
    side by side fill the gaps (the classic format tier of both lines: 243 s one after the other,
    195 s side by side). A group of the 4.1 line first waits for `ready`, the install of its
    virtualenv, which runs beside the first group of the other lane."""

    def run(lane: list[Group]) -> list[str]:
        failed = []
        for group in lane:
            if ready is not None and group.python == f"{SPARK4_VENV}/bin/python":
                ready.result()
            if not _run_group(session, group, quiet=len(lanes) > 1):
                failed.append(group.name)
        return failed

    with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
        failed = [name for names in pool.map(run, lanes) for name in names]
    if failed:
        session.error(f"failed: {', '.join(failed)}")


def _spark4_python(session: nox.Session) -> str:
    """PySpark 4.1's interpreter, in its own virtualenv `.venv-spark4` (made with the stock pip of
    `python3 -m venv`, created once and then reused)."""
    python = f"{SPARK4_VENV}/bin/python"
    if not os.path.exists(python):
        session.run("python3", "-m", "venv", SPARK4_VENV, external=True)
    extras = [".[spark4,delta,sail,dev]", "pyspark[connect]>=4.1,<4.2"]
    session.run(python, "-m", "pip", "install", "-q", "-e", *extras, external=True)
    return python


def _check_spark35(session: nox.Session) -> None:
    import pyspark

    if not pyspark.__version__.startswith("3.5."):
        session.error(f"this session needs PySpark 3.5 in this environment, found {pyspark.__version__}")


@nox.session(python=False)
def unit(session: nox.Session) -> None:
    """The unit tier in the current environment: no JVM, no PySpark imported."""
    _run_lanes(session, [[Group("unit", "python", ("tests/unit",))]])


@nox.session(python=False, name="tests-spark35")
def tests_spark35(session: nox.Session) -> None:
    """The second line alone, PySpark 3.5, in the current environment (`pip install -e '.[spark35,...]'`)."""
    _check_spark35(session)
    _run_lanes(session, [_groups("python", "3.5")])


@nox.session(python=False, name="tests-spark4")
def tests_spark4(session: nox.Session) -> None:
    """The default line alone, PySpark 4.1, in `.venv-spark4`."""
    _run_lanes(session, [_groups(_spark4_python(session), "4.1")])


# The static checks, as `nox -s lint typecheck` runs them; `tests` runs them in a lane too.
LINT = [("ruff", "check", "."), ("ruff", "format", "--check", "--exclude", "*.md", ".")]
TYPECHECK = ("mypy", "shadow_backfill")
# The docs site: a broken link or a reference page that no longer generates fails the build.
DOCS = ("mkdocs", "build", "--strict", "--quiet", "--site-dir", str(RESULTS / "site"))
STATIC = [
    Group("lint", "python", argv=("python", "-m", *LINT[0])),
    Group("format", "python", argv=("python", "-m", *LINT[1])),
    Group("typecheck", "python", argv=("python", "-m", *TYPECHECK)),
    Group("docs", "python", argv=("python", "-m", *DOCS)),
]


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Both lines, every group, and the static checks (ruff, mypy), in two lanes (what CI runs).
    Seconds of each group in a fresh-clone CI run (2026-11-27, f70e68b; most of them paired):
    4.1 e2e classic 1,382, the S3 group 1,035, 4.1 Connect 580, 3.5 classic 576, 4.1 Sail 305,
    4.1 format tier classic 300, cluster 48. So lane 1 holds the 4.1 classic e2e group and
    Connect, lane 2 the rest. The 4.1 venv's install runs beside the 3.5 classic group; the 4.1
    classic group starts while the 3.5 one runs (they resolve their runtimes in different Ivy
    caches, Spark 3.5's and 4.x's), and the groups that resolve in 4.x's later (the S3 group's
    hadoop-aws, the Connect server, the 4.1 format tier) start long after it, one at a time."""
    _check_spark35(session)
    unit4, formats4, e2e4, connect4, sail4, cluster4, s3_4 = _groups(f"{SPARK4_VENV}/bin/python", "4.1")
    unit35, classic35, sail35 = _groups("python", "3.5")
    # lane 1 starts with what needs no 4.1 venv (the 3.5 Sail and unit groups, ruff and mypy)
    # while that venv is installed
    lanes = [[sail35, unit35, *STATIC, e2e4, unit4, connect4], [classic35, s3_4, cluster4, formats4, sail4]]
    with ThreadPoolExecutor(max_workers=1) as installer:
        _run_lanes(session, lanes, ready=installer.submit(_spark4_python, session))


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
    for argv in LINT:
        session.run(*argv)


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    session.run(*TYPECHECK)


@nox.session(python=False)
def docs(session: nox.Session) -> None:
    """The documentation site into `.ci-results/site` (`mkdocs serve` to read it while writing)."""
    session.run(*DOCS)


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Every benchmark scenario and the table of ratios against the targets (not part of CI:
    minutes of seeded workloads; results land in bench/results/*.json)."""
    session.run("python", "-m", "bench", "all", *session.posargs)
