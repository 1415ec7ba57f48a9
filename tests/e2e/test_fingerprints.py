"""The fingerprints that let the key grouping leave a column out (`measure/fingerprints.py`):
every kind of change a key can see makes them differ, row order does not, and a collision of one
of the two hashes is caught by the other. Classic Spark: the sums are plain SQL, which the
differential test (`tests/formats/test_measure_reference.py`) runs on every engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pyspark.sql import functions as F

from shadow_backfill.validate.measure import fingerprints
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.profile_job import run_profile
from shadow_backfill.validate.measurements import PartitionProfile

pytestmark = pytest.mark.classic
SCHEMA = "ds int, id long, x double, s string"
LIVE = [(1, i, float(i), f"s{i}") for i in range(20)]


def _changed(spark: Any, shadow_rows: Sequence[tuple[Any, ...]]) -> set[str]:
    """The columns whose fingerprints differ between these shadow rows and `LIVE`, plus "keys"
    when the key sets' do."""
    shadow, live = (spark.createDataFrame(list(rows), SCHEMA) for rows in (shadow_rows, LIVE))
    m = FastMeasurer(shadow, live, partition="ds", keys=["id"], max_categories=5)
    prints = run_profile(m.union, m.plan, {}, {"1": PartitionProfile("1")}, {}, ["id"]).prints
    sides = [prints.sides[("1", side)] for side in ("live", "shadow")]
    return prints.changed("1") | ({"keys"} if sides[0][None] != sides[1][None] else set())


def _with(i: int, **values: Any) -> list[tuple[Any, ...]]:
    rows = list(LIVE)
    ds, key, x, s = rows[i]
    rows[i] = (ds, key, values.get("x", x), values.get("s", s))
    return rows


def test_every_change_a_key_can_see_is_seen(spark: Any) -> None:
    assert _changed(spark, list(reversed(LIVE))) == set(), "row order is no change"
    assert _changed(spark, _with(3, x=3.5)) == {"x"}
    assert _changed(spark, _with(3, s=None)) == {"s"}, "a null for a value"
    swapped = _with(3, x=4.0)
    swapped[4] = (1, 4, 3.0, "s4")
    assert _changed(spark, swapped) == {"x"}, "two keys' values swapped: same values, other pairs"
    repeated = [*LIVE[:-1], LIVE[0]]  # the last row gone, the first twice: same row count
    assert _changed(spark, repeated) == {"keys", "x", "s"}
    assert _changed(spark, [*LIVE, LIVE[0]]) == {"keys", "x", "s"}, "a fan-out duplicate adds, never cancels"


def test_a_null_moved_from_value_to_key_is_seen(spark: Any) -> None:
    """xxhash64 skips a null: without hashing whether each part is null, a row (key null,
    value "a") and a row (key "a", value null) hash alike, and the column's histogram or
    categories would be copied from live to a shadow that has other values."""
    schema = "ds int, id string, s string"
    live = spark.createDataFrame([(1, None, "a"), (1, "b", "b")], schema)
    shadow = spark.createDataFrame([(1, "a", None), (1, "b", "b")], schema)
    m = FastMeasurer(shadow, live, partition="ds", keys=["id"], max_categories=5)
    prints = run_profile(m.union, m.plan, {}, {"1": PartitionProfile("1")}, {}, ["id"]).prints
    assert "s" not in prints.agreed("1")


@pytest.mark.parametrize("broken", [0, 1], ids=["first key hash", "second key hash"])
def test_keys_colliding_on_one_key_hash_are_told_apart_by_the_other(
    spark: Any, monkeypatch: pytest.MonkeyPatch, broken: int
) -> None:
    """Each column's hashes chain onto the key's two (`fingerprints.key_hash`): with one of
    them constant, as if every key collided on it, two keys swapping their values are still
    seen through the other; with both constant, they could not be (so this test can fail)."""
    real = fingerprints.key_hash

    def one_broken(keys: Sequence[str]) -> tuple[Any, Any]:
        out = list(real(keys))
        out[broken] = F.lit(7).cast("long")
        return out[0], out[1]

    swapped = _with(3, x=4.0)
    swapped[4] = (1, 4, 3.0, "s4")  # keys 3 and 4 swap their values of x
    monkeypatch.setattr(fingerprints, "key_hash", one_broken)
    assert _changed(spark, swapped) == {"x"}
    monkeypatch.setattr(fingerprints, "key_hash", lambda keys: (F.lit(7).cast("long"),) * 2)
    assert _changed(spark, swapped) == set()


@pytest.mark.parametrize("broken", [0, 1], ids=["first hash", "second hash"])
def test_a_collision_of_one_hash_is_caught_by_the_other(
    spark: Any, monkeypatch: pytest.MonkeyPatch, broken: int
) -> None:
    """One of the two hashes made constant, as if every row collided on it: the other still
    tells the change apart; both constant, nothing could (so this test can fail)."""
    real = fingerprints.hashes

    def one_broken(keys: Sequence[str], value: str | None) -> list[Any]:
        out = real(keys, value)
        out[broken] = F.lit(7).cast("long")
        return out

    monkeypatch.setattr(fingerprints, "hashes", one_broken)
    assert _changed(spark, _with(3, x=3.5)) == {"x"}
    monkeypatch.setattr(fingerprints, "hashes", lambda keys, value: [F.lit(7).cast("long")] * 2)
    assert _changed(spark, _with(3, x=3.5)) == set()
