"""Developer sessions, one per test tier and Spark line.

- `unit`: tests/unit, no PySpark imported (seconds); run it on every change.
- `changed`: the inner loop: the unit tier, ruff and mypy, then the test modules the change
  reaches on one backend per engine, with the kill trials' minimum (minutes).
- `tests`: what CI runs: the groups of both Spark lines and the static checks, two processes at
  a time, longest first. The S3 group and the 3.5 classic group run only when the change can
  change their outcome (`.ci/ci_plan.py`); `nox -s tests -- --full` runs everything.
- `tests-spark4`, `tests-spark35`: one line, every group of it, one at a time.
- `lint`, `typecheck`, `docs`, `times`, `bench`.

Each pytest process writes a JUnit file under `.ci-results/` (and, run side by side, its output
in a `.log` there); `nox -s times` prints the seconds of each tier per line from them. The venvs
of both lines are cached per machine (`$SB_CI_CACHE`, default `~/.cache/shadow-backfill/ci`),
keyed by what decides their contents, with the clone installed into them editable; so are the
groups' last seconds (the order of the next run) and the last full green run (the gate).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent / ".ci"))
import ci_plan

nox.options.sessions = ["tests", "times"]
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Two banners of the docs plugins about a coming MkDocs 2 (we pin mkdocs<2), at every build.
os.environ.setdefault("DISABLE_MKDOCS_2_WARNING", "true")
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
RESULTS = Path(".ci-results")
CACHE = Path(os.environ.get("SB_CI_CACHE", Path.home() / ".cache" / "shadow-backfill" / "ci"))
TIMES, LAST_FULL = CACHE / "times.json", CACHE / "last-full.json"
# The kill trials' soak: seconds of trials at random points per group, after each backend's
# minimum of real kills (tests/e2e/test_kill.py). `changed` runs the minimum alone.
SOAK_SECONDS = os.environ.get("SB_SOAK_SECONDS", "60")

CLASSIC = "not sail and not cluster and not connect and not s3"
SPARK4_VENV = ".venv-spark4"
SPARK4_REQUIREMENTS = (".[spark4,delta,sail,dev]", "pyspark[connect]>=4.1,<4.2")
# A real Airflow in a venv of its own (tests/airflow): Airflow, its OpenLineage and standard
# providers and the test tools; this clone goes in without its dependencies (the operator needs
# pydantic, PyYAML and sqlglot only), and the tool's CLI it runs is the README's venv's: the
# dependency sets of Airflow and Spark stay apart, as the operator's docs advise.
AIRFLOW_VENV = ".venv-airflow"
AIRFLOW_REQUIREMENTS = (
    "apache-airflow==3.3.2",
    "apache-airflow-providers-standard>=1.9",
    "apache-airflow-providers-openlineage>=2.8",
    "sqlglot>=30",
    "pytest>=8",
)
# One pytest process per kind of Spark session (one Python process holds one kind): the classic
# group (Iceberg, Delta with delta-spark, Parquet, and the classic-only tests), Sail, a real
# Spark Connect server (Spark 4 only: Spark 3.5's server cannot be bound to loopback), the
# multi-executor test on local-cluster, and the tables on a real S3 server (its session carries
# Hadoop's s3a connector). Each entry: name, tiers, -m expression.
LINES = {
    "4.1": [
        ("formats-classic", "formats", CLASSIC),
        ("e2e-classic", "e2e", CLASSIC),
        ("connect", "formats e2e", "connect"),
        ("sail", "formats e2e", "sail"),
        ("cluster", "e2e", "cluster"),
        # the format contract and the user's loop, kills and concurrent writers with the tables on
        # a real S3-compatible server on loopback (SeaweedFS): `store` tests
        ("s3", "formats e2e", "s3 and store"),
    ],
    "3.5": [
        # the format contract, one scenario per backend (`smoke`) and, on classic Spark, the kill
        # trials (`slow`): what can differ between Spark lines is how Spark, its JVM and the
        # formats' runtimes behave
        ("classic", "formats e2e", f"(formats or smoke or slow) and ({CLASSIC})"),
        ("sail", "formats e2e", "(formats or smoke) and sail"),
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
    # the inner loop's groups: a change may reach no test of an engine (pytest's exit code 5)
    may_select_nothing: bool = False

    def command(self, posargs: list[str], basetemp: str) -> list[str]:
        if self.argv:
            return list(self.argv)
        junit = f"--junitxml={RESULTS / self.name}.xml"
        # --durations: the slowest tests in the log, where CI time goes
        return [self.python, "-m", "pytest", *self.paths, *self.args, "--durations=10", junit, *posargs]

    @property
    def waits_for(self) -> str | None:
        """The venv this group's interpreter lives in, when CI installs it during the run."""
        return self.python if self.python in (f"{SPARK4_VENV}/bin/python", f"{AIRFLOW_VENV}/bin/python") else None


def _groups(python: str, line: str) -> list[Group]:
    groups = [Group(f"{line}-unit", python, ("tests/unit",))]
    for name, tiers, mark in LINES[line]:
        paths = tuple(f"tests/{t}" for t in tiers.split())
        groups.append(Group(f"{line}-{name}", python, paths, ("-m", mark)))
    return groups


PYTEST_SELECTED_NOTHING = 5  # pytest's exit code when no test was selected


def _run_group(
    session: nox.Session, group: Group, quiet: bool, posargs: list[str], env: dict[str, str]
) -> tuple[bool, float]:
    """Run one group, its output in `.ci-results/<name>.log` when `quiet` (groups run side by
    side), and say how long it took. Its temporary folder is its own, and goes when it passed."""
    RESULTS.mkdir(exist_ok=True)
    basetemp = tempfile.mkdtemp(prefix=f"sb-{group.name}-")
    started = time.monotonic()
    log = (RESULTS / f"{group.name}.log").open("w") if quiet else None
    argv = group.command(posargs, basetemp)
    if not group.argv:
        argv += ["-p", "no:cacheprovider", f"--basetemp={basetemp}"]
    with log or contextlib.nullcontext():
        code = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    if code == PYTEST_SELECTED_NOTHING and group.may_select_nothing:
        code = 0
    seconds = time.monotonic() - started
    if code == 0:
        shutil.rmtree(basetemp, ignore_errors=True)
    elif quiet:
        print((RESULTS / f"{group.name}.log").read_text()[-20000:])
    session.log(f"time: {group.name}: {seconds:.0f} s ({'passed' if code == 0 else 'FAILED'})")
    return code == 0, seconds


def _installed(venv: Future[str]) -> bool:
    """The venv's install finished and did not fail (a failed one is raised by the lane)."""
    return venv.done() and venv.exception() is None


def _run_lanes(
    session: nox.Session,
    order: list[Group],
    lanes: int,
    ready: dict[str, Future[str]] | None = None,
    posargs: Sequence[str] = (),
    env: dict[str, str] | None = None,
    took: dict[str, float] | None = None,
) -> dict[str, float]:
    """Run the groups `lanes` at a time, each lane pulling the next group in `order` as it frees
    up, and fail the session if a group failed; returns each group's seconds. Why two lanes on 2
    cores: a pytest process of small Spark jobs keeps the cores about 70% busy (it waits on JVM
    starts, its own polling and Spark's scheduling); two side by side fill the gaps. A group of
    the 4.1 line (or the Airflow group) waits for its venv in `ready`, and a lane takes another
    group meanwhile."""
    pending, lock = list(order), threading.Lock()
    seconds: dict[str, float] = {} if took is None else took  # filled as groups end, failed or not
    failed: list[str] = []

    def next_group() -> Group | None:
        while True:
            with lock:
                if not pending:
                    return None
                usable = [g for g in pending if g.waits_for is None or ready is None or _installed(ready[g.waits_for])]
                if usable:
                    pending.remove(usable[0])
                    return usable[0]
                venv = pending[0].waits_for
            assert ready is not None and venv is not None
            ready[venv].result()  # an install that failed raises here, and the session fails

    def lane() -> None:
        while (group := next_group()) is not None:
            default_env = {"SB_SOAK_SECONDS": SOAK_SECONDS, "SB_AIRFLOW_REQUIRED": "1"}
            ok, spent = _run_group(session, group, lanes > 1, list(posargs), env or default_env)
            seconds[group.name] = spent
            if not ok:
                failed.append(group.name)

    with ThreadPoolExecutor(max_workers=lanes) as pool:
        for f in [pool.submit(lane) for _ in range(lanes)]:
            f.result()
    if failed:
        session.error(f"failed: {', '.join(failed)}")
    return seconds


def _venv_cache(link: str, requirements: tuple[str, ...]) -> Path:
    """Where the venv `link` stands for is cached on this machine (`ci_plan.venv_digest`)."""
    version = subprocess.run(["python3", "--version"], capture_output=True, text=True, check=True).stdout
    digest = ci_plan.venv_digest(Path("pyproject.toml").read_bytes(), version, requirements)
    return CACHE / "venvs" / f"{Path(link).name.lstrip('.')}-{digest}"


def _cached_venv(session: nox.Session, link: str, requirements: tuple[str, ...], clone_deps: bool = True) -> str:
    """`link` (a venv path in the clone) as a symlink to a venv cached per machine under a digest
    of pyproject.toml, the interpreter and `requirements`: the first run installs them (the cold
    path, what a new machine does); later runs install only this clone, editable and without its
    dependencies (seconds instead of a minute or more). A clone's own venv (a real folder) is
    used as it is, and updated. `clone_deps=False`: the clone goes in without its dependencies
    (the Airflow venv: `requirements` are all it holds besides)."""
    python = f"{link}/bin/python"
    install = ("-e", *requirements) if clone_deps else (*requirements,)
    if os.path.isdir(link) and not os.path.islink(link):
        session.run(python, "-m", "pip", "install", "-q", *install, external=True)
        if not clone_deps:
            session.run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", ".", external=True)
        return python
    cached = _venv_cache(link, requirements)
    complete = cached / ".complete"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(link)
    os.symlink(cached, link)
    if complete.exists():
        session.log(f"venv {link}: cached ({cached})")
        session.run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", ".", external=True)
        return python
    session.log(f"venv {link}: not cached, installing into {cached}")
    shutil.rmtree(cached, ignore_errors=True)
    session.run("python3", "-m", "venv", str(cached), external=True)
    session.run(python, "-m", "pip", "install", "-q", *install, external=True)
    if not clone_deps:
        session.run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", ".", external=True)
    complete.touch()
    return python


def _spark4_python(session: nox.Session) -> str:
    """PySpark 4.1's interpreter, in its own venv `.venv-spark4`, cached per machine."""
    return _cached_venv(session, SPARK4_VENV, SPARK4_REQUIREMENTS)


def _airflow_python(session: nox.Session) -> str:
    """A real Airflow's interpreter, in its own venv `.venv-airflow`, cached per machine."""
    return _cached_venv(session, AIRFLOW_VENV, AIRFLOW_REQUIREMENTS, clone_deps=False)


# The operator against a real Airflow: `dag.test()` of the example DAGs on the demo's tables,
# the tool's CLI from the README's venv (tests/airflow).
AIRFLOW = Group("airflow", f"{AIRFLOW_VENV}/bin/python", ("tests/airflow",))


def _check_spark35(session: nox.Session) -> None:
    import pyspark

    if not pyspark.__version__.startswith("3.5."):
        session.error(f"this session needs PySpark 3.5 in this environment, found {pyspark.__version__}")


@nox.session(python=False)
def unit(session: nox.Session) -> None:
    """The unit tier in the current environment: no JVM, no PySpark imported."""
    _run_lanes(session, [Group("unit", "python", ("tests/unit",))], 1)


@nox.session(python=False, name="tests-spark35")
def tests_spark35(session: nox.Session) -> None:
    """The second line alone, PySpark 3.5, in the current environment (`pip install -e '.[spark35,...]'`)."""
    _check_spark35(session)
    _run_lanes(session, _groups("python", "3.5"), 1, posargs=session.posargs)


@nox.session(python=False, name="tests-spark4")
def tests_spark4(session: nox.Session) -> None:
    """The default line alone, PySpark 4.1, in `.venv-spark4`."""
    _run_lanes(session, _groups(_spark4_python(session), "4.1"), 1, posargs=session.posargs)


# The static checks, as `nox -s lint typecheck` runs them; `tests` and `changed` run them too.
LINT = [("ruff", "check", "."), ("ruff", "format", "--check", "--exclude", "*.md", ".")]
TYPECHECK = ("mypy", "shadow_backfill")
# The docs site: built with `mkdocs build --strict` (a broken link or a reference page that no
# longer generates fails it), served on loopback and read in headless Chromium with no network
# (tests/docs: the diagrams draw, the config reference's keys stay whole, nothing is fetched from
# outside the site; its screenshots under the test's temporary folder).
DOCS = Group("docs", "python", ("tests/docs",))
STATIC = [
    Group("lint", "python", argv=("python", "-m", *LINT[0])),
    Group("format", "python", argv=("python", "-m", *LINT[1])),
    Group("typecheck", "python", argv=("python", "-m", *TYPECHECK)),
    DOCS,
]


def _selection(session: nox.Session, groups: list[Group], full: bool) -> list[Group]:
    """The groups this run runs, each other one's reason printed (`ci_plan.select`)."""
    record = ci_plan.read_json(LAST_FULL)
    commit = str(record.get("commit", ""))
    last = ci_plan.LastFull(commit, ci_plan.commits_since(commit)) if commit else None
    changed = ci_plan.changed_since(commit) if commit else None
    choices = ci_plan.select([g.name for g in groups], last, changed, full)
    for c in choices:
        session.log(f"group {c.group}: {'runs' if c.runs else 'skipped'}: {c.why}")
    runs = {c.group for c in choices if c.runs}
    return [g for g in groups if g.name in runs]


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Both lines and the static checks, two lanes, longest first (what CI runs). `-- --full`
    runs every group whatever the change; other arguments go to every pytest process."""
    _check_spark35(session)
    full = "--full" in session.posargs
    posargs = [a for a in session.posargs if a != "--full"]
    cold = not (_venv_cache(SPARK4_VENV, SPARK4_REQUIREMENTS) / ".complete").exists()
    cold |= not (_venv_cache(AIRFLOW_VENV, AIRFLOW_REQUIREMENTS) / ".complete").exists()
    with ThreadPoolExecutor(max_workers=1) as installer:  # one pip at a time: 2 cores
        ready = {
            f"{SPARK4_VENV}/bin/python": installer.submit(_spark4_python, session),
            f"{AIRFLOW_VENV}/bin/python": installer.submit(_airflow_python, session),
        }
        if not cold:  # seconds: install this clone into the cached venvs, then longest first
            for venv in ready.values():
                venv.result()
        everything = [*_groups(f"{SPARK4_VENV}/bin/python", "4.1"), *_groups("python", "3.5"), AIRFLOW, *STATIC]
        chosen = _selection(session, everything, full)
        seconds = {k: float(v) for k, v in ci_plan.read_json(TIMES).items() if isinstance(v, (int, float))}
        # while the 4.1 venv installs (a new machine), the 3.5 groups and the static checks go first
        first = ci_plan.schedule([g.name for g in chosen if g.waits_for is None], seconds) if cold else []
        names = ci_plan.schedule([g.name for g in chosen], seconds, first)
        by_name = {g.name: g for g in chosen}
        took: dict[str, float] = {}
        try:
            _run_lanes(session, [by_name[n] for n in names], 2, ready, posargs, took=took)
        finally:  # a failed run's seconds order the next run as well; a narrowed run's do not
            if not posargs:
                ci_plan.write_json(TIMES, {**seconds, **took})
    if len(chosen) == len(everything) and not posargs:
        ci_plan.write_json(LAST_FULL, {"commit": _head()})
        session.log("recorded a full green run")


@nox.session(python=False)
def changed(session: nox.Session) -> None:
    """The inner loop, in the current environment (PySpark 3.5): the unit tier, ruff and mypy,
    then the test modules the change reaches (`ci_plan.reached_tests`) on one backend per engine
    (classic Spark and Sail; Connect is PySpark 4's), the kill trials' minimum only. The change:
    what differs from `--base` (default HEAD, or HEAD~1 when nothing is uncommitted)."""
    args = list(session.posargs)
    base = args[args.index("--base") + 1] if "--base" in args else None
    plan = ci_plan.changed_plan(base)
    session.log(f"changed: {', '.join(plan.paths) or 'nothing'}")
    session.log(f"reached tests: {', '.join(plan.tests) or 'none (the smoke scenario only)'}")
    _run_lanes(session, [Group("unit", "python", ("tests/unit",)), *STATIC[:3]], 2)
    # the reached modules and the promotion tests (the smoke scenario's file), on one backend of
    # each engine of this line, each engine in its own process
    spark_tests = sorted({*[t for t in plan.tests if not t.startswith("tests/unit/")], "tests/e2e/test_promote.py"})
    for backend, mark in (("iceberg", CLASSIC), ("delta-sail", "sail")):
        env = {"SB_SOAK_SECONDS": "0", "SB_BACKENDS": backend}
        group = Group(f"changed-{backend}", "python", tuple(spark_tests), ("-m", mark), may_select_nothing=True)
        _run_lanes(session, [group], 1, env=env)


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
    """The documentation site, built strict and checked in an offline headless browser
    (tests/docs; `mkdocs serve` to read it while writing)."""
    _run_lanes(session, [DOCS], 1, posargs=session.posargs)


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Every benchmark scenario and the table of ratios against the targets (not part of CI:
    minutes of seeded workloads; results land in bench/results/*.json)."""
    session.run("python", "-m", "bench", "all", *session.posargs)
