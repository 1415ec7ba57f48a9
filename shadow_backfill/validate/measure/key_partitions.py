"""How many tasks the key grouping's shuffle gets: enough that each task's per-key rows fit in
its memory, never fewer than the session's `spark.sql.shuffle.partitions`.

Why (issue 63, `docs/design/validation.md`, "At 40 M rows per side"): the key grouping is a
hash aggregation of one row per (partition, key), and each of its three readers runs that
aggregation again above the shared shuffle. On the tool's default of 8 shuffle partitions a
task held 2.25 M keys at 18 M rows per side, more than a 1 GB driver leaves a task for
execution, so every reader spilled (3.9 GB, against the plain join's 1.0 GB) and the ratio to
the join grew with the rows. On 32 partitions nothing spilled and the validation took 108 s
instead of 149 s. The profile job has counted each side's rows per partition before the facts
job is planned, so the grouping's size is known: `key_partitions` turns it into a number of
tasks, and `key_facts.by_key` shuffles by (partition, key) into that many (a `repartition`
that the grouping then needs no exchange of its own for, so its readers still share one
shuffle, and adaptive execution leaves a number the query asked for as it is).

The estimate is Spark's own layout of a per-key row (`UnsafeRow`: a null bitmap word, 8
bytes a field, a string's bytes beside), with the hash map's record header and slot, summed
over the larger side of each partition (a recompute keeps its keys: the union of the two
sides' keys is about the larger side; a change that replaces every key needs up to twice).
Each task is given `TASK_BYTES` of it, less than half of what a task has for execution with a
1 GB driver on two cores (about 217 MB), the smallest set-up the tool runs on, because the map
doubles as it grows. Measured with the benchmark's `logic` scenario (five grouped columns,
176 bytes a key): at 18 M rows per side this asks for 32 partitions, where nothing spilled
(on 8, 3.9 GB spilled; sized to 48 by a smaller share, the validation took 84 s against 115 s
on 8, and 86 s with the session set to 48), and at 4.05 M rows it leaves Spark's 8, where
nothing spills either (sized to 11 there, it took 24.7 s against 23.5 s: the grouping's
partial aggregation moves above the shuffle, into each reader). A cluster gives a task more,
and then some tasks are smaller than they need be, which costs little; a setting below the
need is what costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TASK_BYTES = 96 * 1024 * 1024  # per-key state a task is given (see the module docstring)
_WORD = 8  # bytes of a fixed-width field, and of the null bitmap per 64 fields, in an UnsafeRow
_RECORD = 32  # the hash map's record: two length words, the pointer slot and its hash
_STRING = 16  # an average partition or key string's bytes past its offset word


def key_row_bytes(key_fields: int, string_keys: int, compared: int) -> int:
    """Bytes one (partition, key) takes in the grouping's hash map: the key row (the partition,
    a string, and the key columns) and the value row (rows per side, and one value per side of
    each compared column)."""
    key_row = _WORD + _WORD * (1 + key_fields) + _STRING * (1 + string_keys)
    values = 2 + 2 * compared
    value_row = _WORD * (1 + values // 64) + _WORD * values
    return key_row + value_row + _RECORD


def tasks_needed(larger_sides: Iterable[int], row_bytes: int, task_bytes: int = TASK_BYTES) -> int:
    """The tasks that give each at most `task_bytes` of per-key rows. `larger_sides`: per
    partition, the larger side's row count."""
    need = sum(larger_sides) * row_bytes
    return max(1, -(-need // task_bytes))  # ceiling


def key_partitions(needed: int, session_partitions: Callable[[], int]) -> int | None:
    """The key grouping's shuffle partitions: `needed`, where that is more than the session's
    (read only then: a Spark Connect server is asked over the network); else None, to leave
    Spark's plan as it is."""
    if needed <= 1:
        return None
    return needed if needed > session_partitions() else None
