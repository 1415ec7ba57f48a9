"""The fast measuring jobs against the reference measurer, on every backend: the same
measurements from two unrelated ways of computing them.

The fast jobs (`FastMeasurer`: one grouping by key, binary-searched bins, pairs of bins coded
in one number, per-key histograms recounted where a key repeats) are where a wrong count would
hide; the reference (`validate/measure/reference.py`) is a null-safe full outer join and plain
groupings. They must agree exactly on every count and on the deciles (below 10,000 rows a
classic engine's `percentile_approx` is exact; Sail's is a t-digest, so there each decile is
held only to be ascending and in live's range: its bins are then counted by both on its edges),
and within 1e-9 relative on means, deviations, sums and
differences (float sums in another order).

The corpus holds what breaks a measurer: nulls in values and in a key, fan-out duplicate keys,
a repeated key with different values, an empty partition and one-row partitions, float noise
below the tolerance, text and boolean columns, a partition with no live side and one with no
shadow side, and a text column past `max_categories`.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from typing import Any

import pytest
from support import Backend, MakeBackfill

from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.reference import ReferenceMeasurer
from shadow_backfill.validate.measurements import Histogram, PartitionProfile

SCHEMA = "id long, ds date, amount double, qty int, label string, flag boolean, note string"
DAYS = [dt.date(2024, 3, d) for d in range(1, 8)]
MAIN, REPEATED, EMPTY, ONE_ROW, NO_LIVE, NO_SHADOW, NULLS = DAYS
TOLERANCE = (1e-9, 0.0)
RELATIVE = 1e-9


def _row(i: int, day: dt.date, rnd: random.Random) -> tuple[Any, ...]:
    amount = None if i % 17 == 0 else round(rnd.gauss(100, 30), 3)
    return (i, day, amount, i % 7, f"l{i % 4}", i % 3 == 0, f"note-{i}")


def _corpus() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rnd = random.Random(7)
    live: list[tuple[Any, ...]] = []
    shadow: list[tuple[Any, ...]] = []
    main = [_row(i, MAIN, rnd) for i in range(300)]
    live += main
    for r in main:
        i, day, amount, qty, label, flag, note = r
        if i % 10 == 1 and amount is not None:
            amount += 1e-12  # float noise, within tolerance
        if i % 25 == 2 and amount is not None:
            amount *= 1.5  # a real change
        if i % 40 == 3:
            label = "l9"  # a new category
        if i in (5, 6):
            continue  # removed keys
        shadow.append((i, day, amount, qty, label, flag, note))
    shadow += [(1000 + i, MAIN, 50.0 + i, 1, "l0", True, "new") for i in range(4)]  # added keys
    shadow.append((None, MAIN, 1.0, 1, "l1", False, "null key"))
    live.append((None, MAIN, 1.0, 1, "l1", False, "null key"))
    repeated = [_row(i, REPEATED, rnd) for i in range(40)]
    live += repeated
    shadow += repeated + repeated[:4]  # fan-out duplicates: the same rows again
    shadow.append((7, REPEATED, 999.0, *repeated[7][3:]))  # a repeated key with another amount
    live += [_row(1, ONE_ROW, rnd)]
    shadow += [(1, ONE_ROW, 2.5, 3, "l1", True, "one")]
    shadow += [_row(i, NO_LIVE, rnd) for i in range(12)]
    live += [_row(i, NO_SHADOW, rnd) for i in range(9)]
    nulls = [(i, NULLS, None, None, None, None, None) for i in range(6)]
    live += nulls
    shadow += nulls[:3] + [(i, NULLS, 1.0 * i, i, "x", True, None) for i in range(3, 6)]
    return live, shadow


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=1e-12)


def _sketched_edges(fast: Histogram, exact: Histogram, text: str, column: str) -> None:
    """A t-digest interpolates between values, so its deciles are not the exact ones: they
    must still be nine, ascending, and within live's range of deciles widened by one bin."""
    low, high = exact.edges[0], exact.edges[-1]
    width = (high - low) / 8 if high > low else 1.0
    assert len(fast.edges) == len(exact.edges), (text, column)
    assert list(fast.edges) == sorted(fast.edges), (text, column, fast.edges)
    assert low - width <= fast.edges[0] and fast.edges[-1] <= high + width, (text, column, fast.edges, exact.edges)


def _compare(fast: PartitionProfile, ref: PartitionProfile, sketched: bool) -> list[str]:
    bad = []
    if (fast.live_rows, fast.shadow_rows) != (ref.live_rows, ref.shadow_rows):
        bad.append(f"rows {fast.live_rows, fast.shadow_rows} != {ref.live_rows, ref.shadow_rows}")
    fk, rk = fast.keys, ref.keys
    assert fk is not None and rk is not None
    counts = ("added", "removed", "matched", "changed", "duplicates")
    if [getattr(fk, n) for n in counts] != [getattr(rk, n) for n in counts]:
        bad.append(f"keys {fk} != {rk}")
    for c, d in rk.by_column.items():
        f = fk.by_column[c]
        same_diffs = (f.abs_diffs is None) == (d.abs_diffs is None) and (
            d.abs_diffs is None or all(_close(a, b) for a, b in zip(f.abs_diffs or (), d.abs_diffs, strict=True))
        )
        if f.changed != d.changed or not same_diffs:
            bad.append(f"{c}: {f} != {d}")
    if set(fast.columns) != set(ref.columns):
        bad.append(f"columns {sorted(fast.columns)} != {sorted(ref.columns)}")
    for c, r in ref.columns.items():
        f = fast.columns.get(c)
        if f is None:
            continue
        for side in ("live", "shadow"):
            fs, rs = f.side(side), r.side(side)
            if (fs is None) != (rs is None) or (
                fs is not None
                and rs is not None
                and (
                    (fs.count, fs.null_rate) != (rs.count, rs.null_rate)
                    or (fs.moments is None) != (rs.moments is None)
                    or (
                        fs.moments is not None
                        and rs.moments is not None
                        and not all(
                            _close(getattr(fs.moments, m), getattr(rs.moments, m)) for m in ("mean", "std", "sum")
                        )
                    )
                )
            ):
                bad.append(f"{c} {side}: {fs} != {rs}")
        if f.categories != r.categories:
            bad.append(f"{c} categories: {f.categories} != {r.categories}")
        if (f.histogram is None) != (r.histogram is None):
            bad.append(f"{c} histogram: {f.histogram} != {r.histogram}")
        elif f.histogram is not None and r.histogram is not None:
            if not sketched and f.histogram.edges != r.histogram.edges:
                bad.append(f"{c} edges: {f.histogram.edges} != {r.histogram.edges}")
            if (f.histogram.live, f.histogram.shadow) != (r.histogram.live, r.histogram.shadow):
                bad.append(f"{c} bins: {f.histogram} != {r.histogram}")
    if fast.unique != ref.unique:
        bad.append(f"unique {fast.unique} != {ref.unique}")
    return bad


@pytest.mark.parametrize("max_categories", [8])
def test_fast_measurements_equal_the_reference(make: MakeBackfill, backend: Backend, max_categories: int) -> None:
    bf = make(seed_live=False)
    fmt, spark = bf.table_format, bf.spark
    live_rows, shadow_rows = _corpus()
    for table, rows in ((bf.live_table, live_rows), (bf.shadow_table, shadow_rows)):
        df = spark.createDataFrame(rows, SCHEMA)
        fmt.create(table, df.schema, ["ds"], data=df)
    keys = [d.isoformat() for d in DAYS]
    shadow = fmt.read_partitions(bf.shadow_table, keys)
    live = fmt.read_partitions(bf.live_table, keys)
    options: dict[str, Any] = {"keys": ["id"], "max_categories": max_categories, "tolerance": TOLERANCE}
    fast = FastMeasurer(shadow, live, partition="ds", unique_columns=["id", "label"], **options).run(keys)
    reference = ReferenceMeasurer("ds", unique_columns=["id", "label"], **options)
    sketched = backend.name.endswith("-sail")  # DataFusion's percentile is a t-digest
    exact = reference.measure(shadow, live, keys)
    fast_edges = {
        k: {c: list(m.histogram.edges) for c, m in p.columns.items() if m.histogram is not None}
        for k, p in fast.items()
    }
    on_fast_edges = reference.measure(shadow, live, keys, edges=fast_edges) if sketched else exact
    bad = {k: _compare(fast[k], on_fast_edges[k], sketched) for k in keys}
    assert not any(bad.values()), {k: v for k, v in bad.items() if v}
    for k in keys:  # a sketch's edges against the exact ones
        for c, m in exact[k].columns.items():
            f = fast[k].columns[c].histogram
            if sketched and m.histogram is not None and f is not None:
                _sketched_edges(f, m.histogram, k, c)
    # the corpus holds what it claims: every case reached both measurers
    main, repeated = exact[MAIN.isoformat()], exact[REPEATED.isoformat()]
    assert main.keys is not None and main.keys.added == 4 and main.keys.removed == 2
    assert main.keys.by_column["amount"].changed > 0 and main.keys.by_column["label"].changed > 0
    assert repeated.keys is not None and repeated.keys.duplicates == 5 and repeated.keys.changed == 1
    assert exact[EMPTY.isoformat()].live_rows == exact[EMPTY.isoformat()].shadow_rows == 0
    assert exact[NO_LIVE.isoformat()].live_missing and exact[NO_SHADOW.isoformat()].shadow_rows == 0
    assert main.columns["note"].categories is None, "past max_categories: not compared by frequency"
    assert main.columns["label"].categories is not None and "l9" in main.columns["label"].categories.new
