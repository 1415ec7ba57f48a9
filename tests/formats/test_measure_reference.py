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
from pyspark.sql import functions as F
from support import Backend, MakeBackfill

from shadow_backfill.config.validation import Tolerance
from shadow_backfill.validate.measure import sample_cut
from shadow_backfill.validate.measure.fast import FastMeasurer
from shadow_backfill.validate.measure.reference import ReferenceMeasurer
from shadow_backfill.validate.measurements import Histogram, PartitionProfile

SCHEMA = "id long, ds date, amount double, qty int, label string, flag boolean, note string"
ADDED = "added_score"
DAYS = [dt.date(2024, 3, d) for d in range(1, 8)]
MAIN, REPEATED, EMPTY, ONE_ROW, NO_LIVE, NO_SHADOW, NULLS = DAYS
TOLERANCE = Tolerance(abs=1e-9, rel=0.0)
MAX_CATEGORIES = 8
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
    for side in (live, shadow):  # not-a-number and infinities, on both sides
        side += [(2000, MAIN, math.nan, 1, "l0", True, "nan"), (2001, MAIN, math.inf, 1, "l0", True, "inf")]
        side += [(2002, MAIN, -math.inf, 1, "l0", True, "-inf"), (2003, MAIN, -0.0, 1, "l0", True, "-0")]
    shadow.append((None, MAIN, 1.0, 1, "l1", False, "null key"))
    live.append((None, MAIN, 1.0, 1, "l1", False, "null key"))
    repeated = [_row(i, REPEATED, rnd) for i in range(40)]
    live += repeated
    shadow += repeated + repeated[:4]  # fan-out duplicates: the same rows again
    shadow.append((7, REPEATED, 999.0, *repeated[7][3:]))  # a repeated key with another amount
    i, day, amount, qty, _, flag, _ = repeated[8]
    shadow.append((i, day, amount, qty, "l7", flag, None))  # ... another text, and a null
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
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
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
    if fk is None or rk is None:
        return bad + ([] if fk is rk else [f"keys {fk} != {rk}"]) + _compare_columns(fast, ref, sketched)
    counts = ("added", "removed", "matched", "changed", "duplicates")
    if [getattr(fk, n) for n in counts] != [getattr(rk, n) for n in counts]:
        bad.append(f"keys {fk} != {rk}")
    if set(fk.by_column) != set(rk.by_column):
        bad.append(f"compared columns {sorted(fk.by_column)} != {sorted(rk.by_column)}")
    for c, d in rk.by_column.items():
        f = fk.by_column[c]
        same_diffs = (f.abs_diffs is None) == (d.abs_diffs is None) and (
            d.abs_diffs is None or all(_close(a, b) for a, b in zip(f.abs_diffs or (), d.abs_diffs, strict=True))
        )
        if f.changed != d.changed or not same_diffs:
            bad.append(f"{c}: {f} != {d}")
    return bad + _compare_columns(fast, ref, sketched)


def _compare_columns(fast: PartitionProfile, ref: PartitionProfile, sketched: bool) -> list[str]:
    bad = []
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
                    or (fs.extremes is None) != (rs.extremes is None)
                    or not all(_close(a, b) for a, b in zip(fs.extremes or (), rs.extremes or (), strict=True))
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


Measured = tuple[dict[str, PartitionProfile], dict[str, PartitionProfile], dict[str, PartitionProfile]]


def _measure_both(
    make: MakeBackfill,
    backend: Backend,
    keys: list[str],
    sample_rows: int,
    corpus: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] | None = None,
    grouped: list[str] | None = None,
    mirrored: set[str] | None = None,
    task_share: int | None = None,
) -> Measured:
    """The corpus written to the backend and read back, measured by the fast jobs and by the
    reference: (fast, reference on live's exact deciles, reference on the fast path's edges);
    `grouped`: the columns the fast key grouping must have carried; `mirrored`: the partitions
    whose live rows it must have left out (shadow's standing for both sides); `task_share`: the
    key grouping's per-task share, small enough that it is sized to more tasks than the
    session's shuffle partitions (`key_partitions.py`)."""
    bf = make(seed_live=False)
    fmt, spark = bf.table_format, bf.spark
    live_rows, shadow_rows = corpus or _corpus()
    for table, rows in ((bf.live_table, live_rows), (bf.shadow_table, shadow_rows)):
        df = spark.createDataFrame(rows, SCHEMA)
        fmt.create(table, df.schema, ["ds"], data=df)
    texts = [d.isoformat() for d in DAYS]
    shadow, live = fmt.read_partitions(bf.shadow_table, texts), fmt.read_partitions(bf.live_table, texts)
    # a column only shadow has (a logic change that adds one): its nulls, moments and range
    shadow = shadow.withColumn(ADDED, F.when(F.col("qty") % 2 == 0, F.col("amount") * 2))
    unique = ["id", "label"]
    options: dict[str, Any] = {"keys": keys, "max_categories": MAX_CATEGORIES, "tolerance": TOLERANCE}
    sizing = {} if task_share is None else {"task_share": task_share}
    measurer = FastMeasurer(
        shadow, live, partition="ds", unique_columns=unique, sample_rows=sample_rows, **options, **sizing
    )
    fast = measurer.run(texts)
    if task_share is not None and _sketched(backend):
        assert measurer.key_partitions is None, "Sail keeps no shuffle partitions: its plan is left to it"
    elif task_share is not None:
        session = int(spark.conf.get("spark.sql.shuffle.partitions"))
        assert measurer.key_partitions is not None and measurer.key_partitions > session, measurer.key_partitions
    if grouped is not None:
        assert measurer.grouped == grouped
    if mirrored is not None:
        assert measurer.mirrored == mirrored
    reference = ReferenceMeasurer("ds", unique_columns=unique, **options)
    exact = reference.measure(shadow, live, texts)
    if not _sketched(backend):
        return fast, exact, exact
    fast_edges = {
        k: {c: list(m.histogram.edges) for c, m in p.columns.items() if m.histogram is not None}
        for k, p in fast.items()
    }
    return fast, exact, reference.measure(shadow, live, texts, edges=fast_edges)


def _sketched(backend: Backend) -> bool:
    return backend.name.endswith("-sail")  # DataFusion's percentile is a t-digest


def _agree(
    backend: Backend,
    fast: dict[str, PartitionProfile],
    exact: dict[str, PartitionProfile],
    on_fast_edges: dict[str, PartitionProfile],
) -> None:
    bad = {k: _compare(fast[k], on_fast_edges[k], _sketched(backend)) for k in fast}
    assert not any(bad.values()), {k: v for k, v in bad.items() if v}
    for k in fast:  # a sketch's edges against the exact ones
        for c, m in exact[k].columns.items():
            f = fast[k].columns[c].histogram
            if _sketched(backend) and m.histogram is not None and f is not None:
                _sketched_edges(f, m.histogram, k, c)


def test_fast_measurements_equal_the_reference(
    make: MakeBackfill, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On every backend, with keys, and with the samples' cut on (it changes how the key counts
    are summed: per bucket, then per partition), which a validation takes from a million rows."""
    monkeypatch.setattr(sample_cut, "FROM_ROWS", 0)
    fast, exact, on_fast_edges = _measure_both(make, backend, ["id"], sample_rows=5)
    _agree(backend, fast, exact, on_fast_edges)
    assert any(p.samples for p in fast.values()), "the samples were taken, so the cut ran"
    # the corpus holds what it claims: every case reached both measurers
    main, repeated = exact[MAIN.isoformat()], exact[REPEATED.isoformat()]
    assert main.keys is not None and main.keys.added == 4 and main.keys.removed == 2
    assert main.keys.by_column["amount"].changed > 0 and main.keys.by_column["label"].changed > 0
    assert repeated.keys is not None and repeated.keys.duplicates == 6
    assert repeated.keys.by_column["amount"].changed == 1, "the repeated key with another amount"
    assert exact[EMPTY.isoformat()].live_rows == exact[EMPTY.isoformat()].shadow_rows == 0
    assert exact[NO_LIVE.isoformat()].live_missing and exact[NO_SHADOW.isoformat()].shadow_rows == 0
    assert main.columns["note"].categories is None, "past max_categories: not compared by frequency"
    assert main.columns["label"].categories is not None and "l9" in main.columns["label"].categories.new
    amount = main.columns["amount"].live
    assert amount is not None and amount.moments is not None and math.isnan(amount.moments.mean or 0.0)
    added = exact[NULLS.isoformat()].columns[ADDED]
    assert added.live is None and added.shadow is not None and added.shadow.extremes == (2.0 * 4, 2.0 * 4)


@pytest.mark.per_engine  # the key columns change the jobs' plan, not what a format reads
@pytest.mark.parametrize("keys", [[], ["id", "flag"]], ids=["no keys", "two key columns"])
def test_fast_measurements_equal_the_reference_without_keys_and_with_two(
    make: MakeBackfill, backend: Backend, keys: list[str]
) -> None:
    fast, exact, on_fast_edges = _measure_both(make, backend, keys, sample_rows=0)
    _agree(backend, fast, exact, on_fast_edges)
    if not keys:
        assert all(p.keys is None for p in fast.values()), "no key diff without keys"


@pytest.mark.per_engine  # the grouping's shuffle is the engine's, whatever the format
def test_a_key_grouping_sized_to_its_keys_measures_the_same(make: MakeBackfill, backend: Backend) -> None:
    """The key grouping shuffled into more tasks than the session's (as 18 M rows per side
    would be on 8 shuffle partitions: `key_partitions.py`) groups the same keys: every
    measurement still equals the reference's."""
    fast, exact, on_fast_edges = _measure_both(make, backend, ["id"], sample_rows=5, task_share=2048)
    _agree(backend, fast, exact, on_fast_edges)
    assert any(p.samples for p in fast.values())


def _one_column_changed() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Live as the corpus has it; shadow the same rows but `amount` changed on some keys and
    float noise on others, but for the day with fan-out duplicates on both sides, which did not
    change at all, and a day on one side only: every column but `amount` has the same (key,
    value) pairs on both sides."""
    live, _ = _corpus()
    live = [r for r in live if r[1] not in (NO_LIVE, NO_SHADOW)]
    live += [r for r in live if r[1] == REPEATED][:3]  # duplicates on both sides alike
    shadow = []
    for r in live:
        i, day, amount, *rest = r
        if day == REPEATED:  # a day with nothing changed, and keys repeated on both sides
            pass
        elif amount is not None and i is not None and i % 25 == 2:
            amount = amount * 1.5
        elif amount is not None and i is not None and i % 10 == 1:
            amount = amount + 1e-12  # noise within the tolerance: a fingerprint differs, no change
        shadow.append((i, day, amount, *rest))
    live += [_row(i, NO_SHADOW, random.Random(3)) for i in range(5)]
    return live, shadow


def _untouched(day: Any, corpus: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]) -> bool:
    """A day with rows on both sides and the same rows on each (as multisets)."""
    live, shadow = ([r for r in rows if r[1] == day] for rows in corpus)
    return bool(live) and sorted(map(repr, live)) == sorted(map(repr, shadow))


@pytest.mark.per_engine  # which columns are grouped is decided from the profile's sums alone
def test_columns_no_key_changed_are_left_out_of_the_key_grouping(make: MakeBackfill, backend: Backend) -> None:
    """Only `amount` changed: the key grouping carries it alone, and the measurements of the
    columns it left out (zero changes, zero differences, the histograms and categories from the
    rows) still equal the reference's."""
    corpus = _one_column_changed()
    unchanged = {REPEATED.isoformat(), *(d.isoformat() for d in DAYS if _untouched(d, corpus))}
    fast, exact, on_fast_edges = _measure_both(make, backend, ["id"], 5, corpus, grouped=["amount"], mirrored=unchanged)
    _agree(backend, fast, exact, on_fast_edges)
    main = exact[MAIN.isoformat()].keys
    assert main is not None and main.by_column["amount"].changed > 0 and main.by_column["qty"].changed == 0
    assert exact[REPEATED.isoformat()].keys.duplicates == 3  # type: ignore[union-attr]
