"""The unit tier runs without PySpark: the config, partition keys, statistics, grading, reports
and the state store import none of it. Named to run last in the tier, after every other unit
test has imported and run what it needs."""

from __future__ import annotations

import sys

import pytest


def test_no_pyspark_module_was_imported(request: pytest.FixtureRequest) -> None:
    others = [i.nodeid for i in request.session.items if not i.get_closest_marker("unit")]
    if others:
        pytest.skip(f"other tiers in this process ({others[0]}, ...) import PySpark: run `pytest tests/unit`")
    loaded = sorted(m for m in sys.modules if m == "pyspark" or m.startswith("pyspark."))
    assert not loaded, f"the unit tier imported PySpark: {loaded[:5]}"
