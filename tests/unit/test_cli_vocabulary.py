"""One vocabulary across the command line: every command walked (Typer's Click tree, no Spark),
each option of a known meaning spelled one way, no Typer placeholder (`<bool>`, `{config}`) in
a help page, `--json` on every command that prints a result, choices listed, and an old
spelling still accepted for one release with one `warning:` line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.cli.spelling import RENAMED
from shadow_backfill.formats import format_names

# A parameter's name in the code -> the one option that gives it, on every command.
CANONICAL = {
    "report_dir": "--report",
    "as_json": "--json",
    "dry_run": "--dry-run",
    "allow_warn": "--allow-warn",
    "canary": "--canary",
    "chunk_size": "--chunk-size",
    "allow_code_change": "--allow-code-change",
    "max_parallel": "--max-parallel",
    "force": "--force",
    "promotion": "--promotion",
    "partitions": "--partitions",
}
# Commands that print no result document: what they print is a path, or a line per change.
# `notify-test` checks a person's wiring: its `--dry-run` prints the messages themselves.
NO_RESULT = {
    "demo",
    "report",
    "rollback",
    "gc",
    "pipeline rollback",
    "pipeline report",
    "notify-test",
    "pipeline notify-test",
}
# Commands with writing options that belong to the main job: `backfill` has what `promote` and
# `run` have (a pipeline promotes its set in one commit per layer: no canary there).
BACKFILL_HAS = {
    "backfill": ["--allow-warn", "--canary", "--chunk-size", "--allow-code-change", "--report", "--json"],
    "pipeline backfill": ["--allow-warn", "--chunk-size", "--allow-code-change", "--report", "--json"],
}


def _commands() -> dict[str, Any]:
    """Every command by its path under `shadow-backfill` (Typer's own Click: read by attribute)."""
    root: Any = get_command(app)
    found = {}
    for name, cmd in root.commands.items():
        if hasattr(cmd, "commands"):
            found.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            found[name] = cmd
    return found


def _visible_options(cmd: Any) -> dict[str, list[str]]:
    return {p.name: p.opts for p in cmd.params if p.param_type_name == "option" and not p.hidden}


def test_an_option_of_one_meaning_has_one_name_everywhere() -> None:
    seen: dict[str, set[str]] = {}
    for path, cmd in _commands().items():
        for name, opts in _visible_options(cmd).items():
            if name in CANONICAL:
                assert opts[0] == CANONICAL[name], f"{path}: {name} is spelled {opts[0]}"
            for opt in opts:
                seen.setdefault(opt, set()).add(name)
    shared = {opt: names for opt, names in seen.items() if len(names) > 1}
    assert not shared, f"one spelling, several meanings: {shared}"
    old = {old for old, _new in RENAMED.values()}
    assert not old & set(seen), f"an old spelling is still shown: {old & set(seen)}"


@pytest.mark.parametrize("path", sorted(_commands()))
def test_help_shows_no_typer_placeholder(path: str) -> None:
    done = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert done.exit_code == 0, done.output
    assert "<bool>" not in done.output
    usage = next(line for line in done.output.splitlines() if "Usage:" in line)
    assert not re.search(r"\{\w+\}", usage), usage
    assert re.search(r" (CONFIG|PIPELINE|DIRECTORY)\s*$", usage), usage


def test_the_top_help_shows_no_bool_placeholder() -> None:
    done = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "<bool>" not in done.output


def test_every_command_that_prints_a_result_has_json() -> None:
    missing = [p for p, cmd in _commands().items() if p not in NO_RESULT and "as_json" not in _visible_options(cmd)]
    assert not missing, f"no --json: {missing}"


def test_backfill_takes_the_options_of_run_and_promote() -> None:
    commands = _commands()
    for path, wanted in BACKFILL_HAS.items():
        given = {opt for opts in _visible_options(commands[path]).values() for opt in opts}
        assert set(wanted) <= given, f"{path} lacks {set(wanted) - given}"


def test_choices_are_listed() -> None:
    done = CliRunner().invoke(app, ["demo", "--help"], env={"COLUMNS": "200"})
    assert "|".join(format_names()) in done.output
    refused = CliRunner().invoke(app, ["demo", "somewhere", "--format", "csv"])
    assert refused.exit_code == 2
    assert "error: invalid value for '--format'" in refused.output


def test_an_old_spelling_still_works_and_warns_once(tmp_path: Path) -> None:
    cfg = str(tmp_path / "missing.yaml")  # the command runs, and stops before any engine
    new = CliRunner().invoke(app, ["report", cfg, "--report", str(tmp_path / "r")])
    old = CliRunner().invoke(app, ["report", cfg, "--out", str(tmp_path / "r")])
    warned = [line for line in old.stderr.splitlines() if line.startswith("warning:")]
    assert warned == ["warning: --out is deprecated: use --report (the old spelling goes in the next release)"]
    assert not [line for line in new.stderr.splitlines() if line.startswith("warning:")]
    # the same command ran to the same ending (the config is missing), not "no such option"
    assert old.exit_code == new.exit_code == 2
    assert old.stderr.splitlines()[-1] == new.stderr.splitlines()[-1]
    assert "missing.yaml" in new.stderr


def test_every_old_spelling_is_still_taken(tmp_path: Path) -> None:
    commands = _commands()
    for path, (old, new) in RENAMED.items():
        hidden = {o for p in commands[path].params if p.hidden for o in p.opts}
        assert old in hidden, f"{path} no longer takes {old}"
        assert new in {o for opts in _visible_options(commands[path]).values() for o in opts}


def test_neither_spelling_is_one_error_line(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["report", str(tmp_path / "missing.yaml")])
    assert done.exit_code == 2
    assert done.stderr.strip() == "error: give --report DIR"
