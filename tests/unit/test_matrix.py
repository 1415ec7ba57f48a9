"""The test matrix is a cross (tests/conftest.py `_on_axis`): an engine's second format keeps the
format contract and only the e2e tests marked `each_backend` or `smoke`. A slip in the rule
would drop coverage silently, so the selection itself is checked, by collecting the Spark
Connect group in a child process (collection starts no JVM)."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _collected(mark: str) -> dict[str, set[str]]:
    """Test ids (without their parameters) per backend of one group."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/formats", "tests/e2e", "-m", mark, "--collect-only", "-q"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids: dict[str, set[str]] = defaultdict(set)
    for line in out.splitlines():
        if "::" in line and "[" in line:
            test, params = line.split("[", 1)
            backend = next((b for b in ("iceberg-connect", "delta-connect") if b in params), None)
            if backend:
                ids[backend].add(test)
    return ids


def test_an_engines_second_format_keeps_the_format_tier_and_the_each_backend_tests() -> None:
    ids = _collected("connect")
    reference, pairing = ids["iceberg-connect"], ids["delta-connect"]
    contract = {t for t in reference if t.startswith("tests/formats/test_contract.py")}
    assert contract and contract <= pairing
    e2e = {t for t in pairing if t.startswith("tests/e2e/")}
    assert "tests/e2e/test_kill.py::test_killed_promotion_is_all_or_nothing" in e2e
    assert "tests/e2e/test_promote.py::test_promote_exactly_the_passing_partitions_then_roll_back" in e2e
    # the catalogue of bad input is the engine's and the format's, not their pairing's
    assert not any("test_bad_input" in t for t in e2e)
    assert e2e < {t for t in reference if t.startswith("tests/e2e/")}
