"""The README's quick start, run as a user runs it: its commands, read from the README, in a
fresh process each, in an empty folder. If the README's commands or what it says of their
outcome drift from the tool, this fails."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"


def quick_start_commands() -> list[list[str]]:
    """The `shadow-backfill` commands of the bash block under `## Quick start` (the set-up line's
    venv and pip steps are the environment this test already runs in)."""
    text = README.read_text()
    section = text.split("\n## Quick start\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        for step in line.split("&&"):
            argv = shlex.split(step)
            if argv and argv[0] == "shadow-backfill":
                commands.append(argv[1:])
    return commands


def test_the_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    commands = quick_start_commands()
    assert [c[0] for c in commands] == ["demo", "backfill"], commands
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SHADOW_BACKFILL_LOG_DIR": str(tmp_path / "logs")}
    done = []
    for argv in commands:
        cmd = [sys.executable, "-m", "shadow_backfill.cli", *argv]
        done.append(subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env))
    setup, main = done
    assert setup.returncode == 0, setup.stderr[-3000:]
    # what the README says of the main job: 57 days promoted in one commit, 3 fail, exit 1
    assert main.returncode == 1, main.stdout[-3000:] + main.stderr[-3000:]
    assert "57 pass, 0 warn, 3 fail" in main.stdout, main.stdout[-3000:]
    assert "promoted 57 partition(s) into warehouse/delta/features" in main.stdout
    assert "3 partition(s) failed validation: 2024-01-10, 2024-02-05, 2024-02-20" in main.stderr
    doc = json.loads((tmp_path / "demo" / "report" / "report.json").read_text())
    assert len(doc["partitions"]) == 60
    assert (tmp_path / "demo" / "report" / "report.html").is_file()
