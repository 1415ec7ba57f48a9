"""CI's own decisions (`.ci/ci_plan.py`): which groups a change runs, in which order, when a
cached venv may be reused, and what the inner loop runs. Pure code: no git history is needed
except where a test makes its own repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / ".ci"))
import ci_plan

S3 = "4.1-s3"
CLASSIC35 = "3.5-classic"
GROUPS = ["4.1-e2e-classic", S3, CLASSIC35, "lint"]


def _runs(choices: list[ci_plan.Choice]) -> dict[str, bool]:
    return {c.group: c.runs for c in choices}


def test_the_gated_groups_are_the_ones_the_noxfile_names() -> None:
    assert set(ci_plan.GATED) == {S3, CLASSIC35}


def test_a_change_to_the_judge_alone_skips_the_gated_groups_and_says_why() -> None:
    last = ci_plan.LastFull("a" * 40, commits_since=2)
    choices = ci_plan.select(GROUPS, last, ["shadow_backfill/validate/judge.py", "docs/index.md"], full=False)
    assert _runs(choices) == {"4.1-e2e-classic": True, S3: False, CLASSIC35: False, "lint": True}
    skipped = next(c for c in choices if c.group == S3)
    assert "aaaaaaaaaa" in skipped.why


@pytest.mark.parametrize(
    "path",
    [
        "shadow_backfill/formats/delta.py",
        "shadow_backfill/state/locks.py",
        "shadow_backfill/session.py",
        "pyproject.toml",
    ],
)
def test_a_change_to_the_storage_side_runs_both_gated_groups(path: str) -> None:
    choices = ci_plan.select(GROUPS, ci_plan.LastFull("b" * 40, 1), [path], full=False)
    assert all(_runs(choices).values())
    assert path in next(c for c in choices if c.group == S3).why


def test_the_object_store_test_runs_only_the_s3_group() -> None:
    choices = ci_plan.select(GROUPS, ci_plan.LastFull("b" * 40, 1), ["tests/e2e/test_object_store.py"], full=False)
    assert _runs(choices)[S3] and not _runs(choices)[CLASSIC35]


@pytest.mark.parametrize(
    ("last", "changed", "full", "words"),
    [
        (None, None, False, "no full green run is recorded"),
        (ci_plan.LastFull("c" * 40, None), None, False, "not in this history"),
        (ci_plan.LastFull("c" * 40, ci_plan.FULL_EVERY + 1), [], False, "commits since the last full green run"),
        (ci_plan.LastFull("c" * 40, 0), [], True, "--full"),
    ],
)
def test_everything_runs_without_a_recent_full_run_or_when_asked(
    last: ci_plan.LastFull | None, changed: list[str] | None, full: bool, words: str
) -> None:
    choices = ci_plan.select(GROUPS, last, changed, full)
    assert all(_runs(choices).values())
    assert words in next(c for c in choices if c.group == S3).why


def test_the_longest_group_goes_first_after_what_must_go_first() -> None:
    seconds = {"a": 10.0, "b": 300.0, "c": 50.0}
    assert ci_plan.schedule(["a", "b", "c"], seconds) == ["b", "c", "a"]
    assert ci_plan.schedule(["a", "b", "c"], seconds, first=["a"]) == ["a", "b", "c"]
    # a group never timed takes its default, then 60 s
    assert ci_plan.schedule(["x", "4.1-e2e-classic"], {}) == ["4.1-e2e-classic", "x"]


PYPROJECT = b"""
[project]
name = "x"
dependencies = ["pydantic>=2"]
[project.optional-dependencies]
dev = ["pytest"]
[tool.pytest.ini_options]
markers = ["a: one"]
"""


def test_the_venv_key_changes_with_what_decides_the_venv_only() -> None:
    base = ci_plan.venv_digest(PYPROJECT, "Python 3.11.7", [".[dev]"])
    assert base == ci_plan.venv_digest(PYPROJECT, "Python 3.11.7", [".[dev]"])
    # a new pytest marker or ruff rule is no new venv; a dependency or an extra is
    assert base == ci_plan.venv_digest(
        PYPROJECT.replace(b'"a: one"', b'"a: one", "b: two"'), "Python 3.11.7", [".[dev]"]
    )
    assert base != ci_plan.venv_digest(PYPROJECT.replace(b"pydantic>=2", b"pydantic>=2.5"), "Python 3.11.7", [".[dev]"])
    assert base != ci_plan.venv_digest(
        PYPROJECT.replace(b'["pytest"]', b'["pytest", "nox"]'), "Python 3.11.7", [".[dev]"]
    )
    assert base != ci_plan.venv_digest(PYPROJECT, "Python 3.12.1", [".[dev]"])
    assert base != ci_plan.venv_digest(PYPROJECT, "Python 3.11.7", [".[dev,docs]"])


def test_a_change_reaches_the_tests_that_import_it_but_not_through_the_facades() -> None:
    graph = {
        "shadow_backfill": {"shadow_backfill.api"},
        "shadow_backfill.api": {"shadow_backfill.validate.check", "shadow_backfill.promote"},
        "shadow_backfill.validate.check": {"shadow_backfill.validate.judge"},
        "shadow_backfill.validate.judge": set(),
        "shadow_backfill.promote": set(),
    }
    tests = {
        "tests/e2e/test_everything.py": {"shadow_backfill"},
        "tests/unit/test_check.py": {"shadow_backfill.validate.check"},
        "tests/unit/test_judge_rules.py": set(),
        "tests/e2e/test_promote.py": {"shadow_backfill"},
    }
    assert ci_plan.reached_tests(["shadow_backfill.validate.judge"], graph, tests) == [
        "tests/unit/test_check.py",
        "tests/unit/test_judge_rules.py",
    ]
    assert ci_plan.reached_tests(["shadow_backfill.promote"], graph, tests) == ["tests/e2e/test_promote.py"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def test_the_change_since_a_run_is_read_from_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "shadow_backfill").mkdir()
    (repo / "shadow_backfill" / "session.py").write_text("")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "two")
    (repo / "new.txt").write_text("")
    assert ci_plan.changed_since(first, repo) == ["new.txt", "shadow_backfill/session.py"]
    assert ci_plan.commits_since(first, repo) == 1
    assert ci_plan.changed_since("0" * 40, repo) is None
