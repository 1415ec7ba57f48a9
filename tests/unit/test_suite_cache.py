"""A suite GX accepted once is not checked by GX again (`validate.suite_cache`): importing GX
costs seconds per process, most of a small table's validation. Each load runs in a fresh
interpreter, as each command does (and GX imports PySpark, which the unit tier must not), and
reports whether it imported GX."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shadow_backfill.validate.suite_cache import accepted_before, remember_accepted

NOT_NULL = {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "x"}}
PROBE = """
import sys
from pathlib import Path
from shadow_backfill.errors import ConfigError
from shadow_backfill.validate.suites import load_suite
for name in sys.argv[1:]:
    try:
        print(len(load_suite(Path(name)).expectations), end=" ")
    except ConfigError as exc:
        print("refused" if "invalid kwargs" in str(exc) else exc, end=" ")
print("great_expectations" in sys.modules)
"""


def _load(cache: Path, *suites: Path) -> list[str]:
    env = {**os.environ, "SHADOW_BACKFILL_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", PROBE, *map(str, suites)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_suite_gx_accepted_is_loaded_again_without_gx_and_a_refused_one_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, good, bad = tmp_path / "cache", tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"name": "s", "expectations": [NOT_NULL]}))
    bad.write_text(json.dumps({"expectations": [{**NOT_NULL, "kwargs": {}}]}))
    assert _load(cache, bad, bad, good) == ["refused", "refused", "1", "True"], "GX checks the first loads"
    assert len(list(cache.iterdir())) == 1, "only the accepted suite is kept"
    assert _load(cache, good) == ["1", "False"], "the same text in the next command: GX not imported"
    good.write_text(json.dumps({"name": "s", "expectations": [NOT_NULL, NOT_NULL]}))
    monkeypatch.setenv("SHADOW_BACKFILL_CACHE_DIR", str(cache))
    assert not accepted_before(good.read_text()), "another text is checked by GX again"


def test_a_cache_that_cannot_be_written_only_means_gx_checks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("SHADOW_BACKFILL_CACHE_DIR", str(tmp_path / "file" / "cache"))
    remember_accepted("{}")
    assert not accepted_before("{}")
