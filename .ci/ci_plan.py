"""What a CI run runs, and in which order: pure decisions, read by `noxfile.py` and tested in the
unit tier (`tests/unit/test_ci_plan.py`), so none of them needs a JVM to check.

- **Which groups run** (`select`): every group, except the two whose outcome only a change to
  the storage side can change (the S3 group, the 3.5 classic group), which run when the change
  since the last full green run touches what can change them (`GATED`), when this machine has no
  record of a full green run, when that record is too many commits back, or when asked
  (`--full`). Why: those two groups test how formats, the state store, the session and the
  runtimes behave on a second storage and a second Spark line; a change elsewhere (the judge,
  the reports, the CLI) cannot change their outcome, and they are a third of CI's work.
- **The order** (`schedule`): longest first from the last run's seconds, pulled by two lanes
  as each frees up (list scheduling), so the longest group never starts last.
- **The venvs' cache key** (`venv_digest`): what decides what a venv holds.
- **What `nox -s changed` runs** (`reached_tests`): the test modules a change reaches.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
# A full run stays good for this many commits: a longer stretch of gated runs is checked whole.
FULL_EVERY = 5
# Paths whose change can change the gated groups' outcome: the storage side of the tool (formats,
# the state store, the session and the runtimes it loads), what decides the environment and the
# groups, and the tests of those groups.
STORAGE_SIDE = (
    "shadow_backfill/formats/",
    "shadow_backfill/state/",
    "shadow_backfill/session.py",
    "shadow_backfill/resources/",
    "pyproject.toml",
    "noxfile.py",
    ".ci/",
    "tests/conftest.py",
    "tests/support/",
    "tests/formats/",
    "tests/e2e/test_kill.py",
)
GATED = {"4.1-s3": (*STORAGE_SIDE, "tests/e2e/test_object_store.py"), "3.5-classic": STORAGE_SIDE}
# Seconds per group when no run has been timed on this machine (a fresh-clone run, 2026-11-28).
DEFAULT_SECONDS = {
    "4.1-e2e-classic": 2307.0,
    "4.1-s3": 1932.0,
    "4.1-connect": 1177.0,
    "3.5-classic": 912.0,
    "4.1-formats-classic": 472.0,
    "4.1-sail": 338.0,
    "4.1-cluster": 90.0,
    "airflow": 150.0,
}


@dataclass(frozen=True)
class Choice:
    """One group's fate in this run, and why (`.ci/run` prints every line)."""

    group: str
    runs: bool
    why: str


@dataclass(frozen=True)
class LastFull:
    """The last full green run on this machine, as `nox -s tests` recorded it."""

    commit: str
    commits_since: int | None  # None: that commit is not in this clone's history


def changed_since(commit: str, cwd: Path = ROOT) -> list[str] | None:
    """The paths a change since `commit` touches (committed and not), or None if `commit` is not
    an ancestor of HEAD here."""
    known = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=cwd, capture_output=True)
    if known.returncode != 0:
        return None
    out = subprocess.run(["git", "diff", "--name-only", commit], cwd=cwd, capture_output=True, text=True, check=True)
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=cwd, capture_output=True, text=True, check=True
    )
    return sorted({*out.stdout.split(), *untracked.stdout.split()})


def commits_since(commit: str, cwd: Path = ROOT) -> int | None:
    out = subprocess.run(["git", "rev-list", "--count", f"{commit}..HEAD"], cwd=cwd, capture_output=True, text=True)
    return int(out.stdout) if out.returncode == 0 else None


def select(groups: Sequence[str], last: LastFull | None, changed: Sequence[str] | None, full: bool) -> list[Choice]:
    """Each group's fate: a gated group runs unless a full green run on this machine, few enough
    commits back, saw everything the change can affect; every other group always runs."""
    out = []
    for name in groups:
        gate = GATED.get(name)
        if gate is None:
            out.append(Choice(name, True, "runs on every change"))
        elif full:
            out.append(Choice(name, True, "a full run was asked for (--full)"))
        elif last is None:
            out.append(Choice(name, True, "no full green run is recorded on this machine"))
        elif last.commits_since is None or changed is None:
            out.append(Choice(name, True, f"the last full green run ({last.commit[:10]}) is not in this history"))
        elif last.commits_since > FULL_EVERY:
            why = f"{last.commits_since} commits since the last full green run (more than {FULL_EVERY})"
            out.append(Choice(name, True, why))
        elif touched := [p for p in changed if p.startswith(gate)]:
            more = f" and {len(touched) - 1} more" if len(touched) > 1 else ""
            out.append(Choice(name, True, f"the change touches {touched[0]}{more}"))
        else:
            why = f"nothing it can be changed by was touched since the full green run at {last.commit[:10]}"
            out.append(Choice(name, False, why))
    return out


def schedule(groups: Sequence[str], seconds: dict[str, float], first: Sequence[str] = ()) -> list[str]:
    """The order the lanes pull groups in: `first` as given (what needs no other venv, while one
    installs), then longest first by the seconds last measured (or the defaults). With two lanes
    pulling as they free up, the longest group starts at once and the short ones fill the end."""

    def cost(name: str) -> float:
        return seconds.get(name, DEFAULT_SECONDS.get(name, 60.0))

    rest = sorted((g for g in groups if g not in first), key=cost, reverse=True)
    return [*[g for g in first if g in groups], *rest]


def install_inputs(pyproject: bytes) -> bytes:
    """The parts of pyproject.toml that decide what a venv holds: the build system, the Python
    versions and the dependencies with their extras. The tools' settings beside them (pytest's
    markers, ruff, mypy) do not, and a change to them must not cost a new venv."""
    data = tomllib.loads(pyproject.decode())
    project = data.get("project", {})
    keys = ("dependencies", "optional-dependencies", "requires-python", "name")
    decisive = {"build-system": data.get("build-system"), "project": {k: project.get(k) for k in keys}}
    return json.dumps(decisive, sort_keys=True).encode()


def venv_digest(pyproject: bytes, python_version: str, requirements: Iterable[str]) -> str:
    """The cache key of a venv: what pyproject.toml installs, the interpreter and the
    requirements given to pip. The tool itself is installed editable, without its dependencies,
    into the cached venv at each run, so a change to its code never needs a new venv."""
    h = hashlib.sha256(install_inputs(pyproject))
    h.update(python_version.encode())
    h.update("\0".join(requirements).encode())
    return h.hexdigest()[:16]


def read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# `nox -s changed`: the test modules a change reaches. The entry points every end-to-end test goes
# through import nearly the whole package, so reaching through them would select every test:
# the walk up the import graph stops there, and the smoke scenario stands in for them.
FACADES = frozenset({"shadow_backfill", "shadow_backfill.api", "shadow_backfill.cli", "shadow_backfill.cli.app"})


def module_of(path: str) -> str | None:
    """`shadow_backfill/validate/judge.py` -> `shadow_backfill.validate.judge`."""
    if not path.endswith(".py") or not path.startswith("shadow_backfill/"):
        return None
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, known: frozenset[str]) -> set[str]:
    """The tool modules a file imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found |= subs or ({node.module} & known)
    return found


def importers(changed: Iterable[str], graph: dict[str, set[str]]) -> set[str]:
    """The changed modules and every module that imports one of them, up to the facades."""
    reached = set(changed)
    frontier = list(reached)
    while frontier:
        target = frontier.pop()
        for name, edges in graph.items():
            if target in edges and name not in reached and target not in FACADES:
                reached.add(name)
                frontier.append(name)
    return reached


def reached_tests(changed_modules: Iterable[str], graph: dict[str, set[str]], tests: dict[str, set[str]]) -> list[str]:
    """The test files (path -> tool modules it imports) that import a reached module or are named
    after a changed one (`test_judge*.py` for `validate/judge.py`)."""
    changed = set(changed_modules)
    reached = importers(changed, graph) - FACADES
    stems = {m.rsplit(".", 1)[-1] for m in changed}
    out = []
    for path, imported in sorted(tests.items()):
        name = Path(path).stem.removeprefix("test_")
        if imported & reached or any(name.startswith(stem) for stem in stems):
            out.append(path)
    return out


def write_json(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


def _tool_modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in (root / "shadow_backfill").rglob("*.py"):
        name = module_of(path.relative_to(root).as_posix())
        if name:
            out[name] = path
    return out


@dataclass(frozen=True)
class ChangedPlan:
    """What `nox -s changed` runs: the changed paths and the test files they reach."""

    paths: tuple[str, ...]
    tests: tuple[str, ...]


def changed_plan(base: str | None, root: Path = ROOT) -> ChangedPlan:
    """The change (against `base`; by default the uncommitted work, or the last commit when
    there is none) and the test files it reaches: the changed test files themselves, and those
    `reached_tests` finds from the changed tool modules."""
    if base is None:
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
        base = "HEAD" if dirty.strip() else "HEAD~1"
    paths = changed_since(base, root) or []
    modules = _tool_modules(root)
    known = frozenset(modules)
    graph = {name: imports_of(path.read_text(), known) - {name} for name, path in modules.items()}
    tests = {
        p.relative_to(root).as_posix(): imports_of(p.read_text(), known)
        for p in sorted((root / "tests").rglob("test_*.py"))
    }
    changed_modules = [m for p in paths if (m := module_of(p))]
    reached = set(reached_tests(changed_modules, graph, tests))
    reached |= {p for p in paths if p in tests and Path(root / p).exists()}
    # a format is loaded by name, not imported: a change to one reaches the format contract
    if any(p.startswith("shadow_backfill/formats/") for p in paths):
        reached |= {p for p in tests if p.startswith("tests/formats/")}
    return ChangedPlan(tuple(paths), tuple(sorted(reached)))


if __name__ == "__main__":  # `.ci/run`: the cache key of the set-up line's venv
    import sys

    if sys.argv[1:2] == ["digest"]:
        version = subprocess.run(["python3", "--version"], capture_output=True, text=True, check=True).stdout
        print(venv_digest((ROOT / "pyproject.toml").read_bytes(), version, sys.argv[2:]))
