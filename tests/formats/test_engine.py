"""What each engine can do is found once per session, and is what the measuring jobs were
written for: if Spark lost the array form of `percentile_approx`, or Sail gained it, the profile
job would take its other form without a word, so each backend pins down what it has."""

from __future__ import annotations

from support import Backend, MakeBackfill

from shadow_backfill.validate.measure.capabilities import engine_capabilities


def test_engine_capabilities_are_probed_once_per_session(make: MakeBackfill, backend: Backend) -> None:
    bf = make()
    found = engine_capabilities(bf.spark)
    assert found.array_percentiles is not backend.name.endswith("-sail"), found
    assert engine_capabilities(bf.spark) is found, "probed again in the same session"
