"""The CLI starts light: `--help`, `--version` and every refusal that exits 2 before the engine
run without PySpark (seconds of JVM-free import) and without SQLAlchemy (the state store opens
only for a command that reads it; its import is deferred where it is needed). A module the CLI
imports at start that pulls either in fails here, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("heavy", ["pyspark", "sqlalchemy"])
def test_the_cli_starts_without(heavy: str) -> None:
    probe = (
        "import sys, shadow_backfill.cli.app\n"
        f"loaded = sorted(m for m in sys.modules if m == {heavy!r} or m.startswith({heavy + '.'!r}))\n"
        "print(','.join(loaded[:3]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"importing the CLI loaded {heavy}: {done.stdout.strip()}"


def test_nothing_is_logged_after_the_command_ends() -> None:
    """What runs at exit (py4j talking to a JVM that is going down, here a stand-in registered
    first so it runs last) prints no traceback after the command's last line."""
    probe = (
        "import atexit, logging, sys\n"
        "atexit.register(lambda: logging.exception('py4j: Exception while sending command.'))\n"
        "from shadow_backfill.cli.app import main\n"
        "sys.argv = ['shadow-backfill', '--version']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("shadow-backfill ")
    assert done.stderr == "", done.stderr
