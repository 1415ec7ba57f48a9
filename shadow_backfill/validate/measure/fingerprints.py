"""Order-independent fingerprints of each side's keys and of each compared column's
(key, value) pairs, per partition, computed in the profile job's one scan.

Where a column's fingerprints agree on both sides of a partition, its (key, value) pairs are
the same multiset there: no key changed that column, so the key grouping need not carry it
(`FastMeasurer.run`). A validation pays for the key grouping of a column only where the
column changed somewhere; a shadow identical to live carries no column at all.

A fingerprint is exact integer sums of two 64-bit hashes of (key, value) per row, each hash
summed as two 32-bit halves, so no sum can overflow below 2^31 rows per partition and side
(Spark 4's ANSI mode fails a long sum that does). Sums rather than xor: a repeated row adds
again instead of cancelling. The two hashes are xxhash64 chained from two different starts,
as independent as two seeds: the key's two hashes, and each column's value chained onto them
(`hashes`). A difference is hidden only if both 64-bit sums collide at
once, about 2^-128 per partition and column for data not crafted against xxhash64; the row and
null counts must agree as well. `tests/e2e/test_fingerprints.py` checks that a collision of
one hash is caught by the other, and that swaps, repeats and nulls are seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, Row
from pyspark.sql import functions as F

from shadow_backfill.validate.measure.plan import SHADOW_FLAG, side_name

_SECOND = "sb-fingerprint"  # the second hash's start: a salt chained in before the key


def hashes(keys: Sequence[str], value: str | None) -> list[Column]:
    """The two 64-bit hashes of a row's key and (when given) one column's value. Each part
    is hashed with whether it is null: xxhash64 skips a null, so (key null, value "a") and
    (key "a", value null) would otherwise hash alike.

    A column's hash chains its value onto the key's hash (`key_hash`) rather than hashing the
    key's parts again: the key's two hashes are then one subexpression of every column's,
    which Spark computes once per row. At 4.05 M rows per side what the fingerprints add to
    the profile's grouping fell from about 1.8 to 1.4 task seconds
    (`bench/results/parts-probe-identical*.json`).
    The chain keeps what the sums need: two keys that collide on one key hash are told apart
    by the other (the chains start from independent hashes), so a change is hidden only where
    both sums collide by chance, or two keys collide on both of their hashes at once.
    `tests/e2e/test_speed_plans.py` fails if a column's hash stops reusing the key's."""
    first, second = key_hash(keys)
    if value is None:
        return [first, second]
    part = [F.col(value), F.col(value).isNull()]
    return [F.xxhash64(first, *part), F.xxhash64(second, *part)]


def key_hash(keys: Sequence[str]) -> tuple[Column, Column]:
    """A row's key as two independent 64-bit hashes: from the parts, and from a salt before them."""
    parts = [p for n in keys for p in (F.col(n), F.col(n).isNull())]
    return F.xxhash64(*parts), F.xxhash64(F.lit(_SECOND), *parts)


def _halves(h: Column) -> list[Column]:
    return [F.shiftright(h, 32), h.bitwiseAND(F.lit(0xFFFFFFFF))]


def _name(j: int | None, n: int) -> str:
    return f"__fp_{'k' if j is None else j}_{n}"


def aggregations(keys: Sequence[str], compared: Sequence[str]) -> list[Column]:
    """The sums, as aggregate columns of a grouping by (partition, side): four for the key set,
    four per compared column."""
    out = []
    for j, c in [(None, None), *enumerate(compared)]:
        parts = [half for h in hashes(keys, c) for half in _halves(h)]
        out += [F.sum(p).alias(_name(j, n)) for n, p in enumerate(parts)]
    return out


@dataclass
class Fingerprints:
    """Per partition text and side, the sums of the key set (`None`) and of each column."""

    compared: Sequence[str]
    enabled: bool = True  # false without keys: no (key, value) pairs to sum
    sides: dict[tuple[str, str], dict[str | None, tuple[int, ...]]] = field(default_factory=dict)

    def read(self, partition: str, row: Row) -> None:
        """A profile row's sums (its side from its flag) into the table."""
        found: dict[str | None, tuple[int, ...]] = {}
        for j, c in [(None, None), *enumerate(self.compared)]:
            found[c] = (int(row["__rows"]), *(int(row[_name(j, n)] or 0) for n in range(4)))
        self.sides[(partition, side_name(row[SHADOW_FLAG]))] = found

    def changed(self, partition: str) -> set[str]:
        """The columns a matched key of `partition` may have changed: those whose (key, value)
        pairs differ between the sides; none where a side has no rows (no key is matched)."""
        live, shadow = self.sides.get((partition, "live")), self.sides.get((partition, "shadow"))
        if live is None or shadow is None:
            return set()
        return {c for c in self.compared if live[c] != shadow[c]}

    def agreed(self, partition: str) -> frozenset[str]:
        """The columns whose (key, value) pairs are the same multiset on both sides of
        `partition`, both sides having rows: their shadow values are live's, histogram and all."""
        live, shadow = self.sides.get((partition, "live")), self.sides.get((partition, "shadow"))
        if live is None or shadow is None:
            return frozenset()
        return frozenset(c for c in self.compared if live[c] == shadow[c])

    def keys_agree(self, partition: str) -> bool:
        """Whether both sides of `partition` have rows and the same multiset of keys."""
        live, shadow = self.sides.get((partition, "live")), self.sides.get((partition, "shadow"))
        return live is not None and shadow is not None and live[None] == shadow[None]

    def changed_columns(self, partitions: Sequence[str]) -> list[str]:
        """The compared columns (in their order) changed in at least one of `partitions`."""
        changed: set[str] = set()
        for p in partitions:
            changed |= self.changed(p)
        return [c for c in self.compared if c in changed]
