"""The terminal recording of the README's quick start (`docs/assets/quickstart/`, made by its
`record.sh` with `script`) shows what issue 60 promised a newcomer: a bar per step of the main
job, each ticked in order, no line of Ivy's or Spark's own, and a summary that leads with the
counts. A recording made before those changes fails here, so a stale one cannot stand in the
docs as evidence."""

from __future__ import annotations

import re
from pathlib import Path

RECORDING = Path(__file__).parents[2] / "docs" / "assets" / "quickstart" / "quickstart.typescript"
STEPS = ("recompute", "validate", "promote", "report")
JVM_CHATTER = (":: resolving", ":: loading settings", "Ivy Default Cache", " WARN ", " INFO ", "log4j", "SparkContext")
ENGINE_CHATTER = ("sail_python::", "sail_session::", "sail_common::", "sail_plan::")


def _screen() -> str:
    text = RECORDING.read_text(encoding="utf-8", errors="replace")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_the_recording_shows_a_ticked_bar_per_step_in_order() -> None:
    screen = _screen()
    last = screen[screen.rindex("✓ recompute") :]
    at = [last.find(f"✓ {step}") for step in STEPS]
    assert -1 not in at and at == sorted(at), last[:800]
    ticked = dict(re.findall(r"✓ (\w+)\s+━+\s+(\d+/\d+)", last))
    assert ticked == {"recompute": "60/60", "validate": "60/60", "promote": "57/57", "report": "1/1"}, ticked


def test_the_recording_has_no_jvm_chatter_and_ends_as_the_readme_says() -> None:
    screen = _screen()
    assert not [word for word in JVM_CHATTER + ENGINE_CHATTER if word in screen]
    summary = screen[screen.rindex("✓ report") :]
    assert "backfill of warehouse/delta/features: 60 partition(s): 57 pass, 0 warn, 3 fail" in summary
    assert re.search(r"promoted 57 partition\(s\) into warehouse/delta/features as promote-\S+", summary)
    assert "error: 3 partition(s) failed validation: 2024-01-10, 2024-02-05, 2024-02-20" in summary
    assert '[COMMAND_EXIT_CODE="1"]' in summary
