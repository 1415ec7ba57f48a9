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
Each task is given a share of its execution memory (`task_bytes`, from the session's memory
settings): `TASK_BYTES`, 96 MB, on the smallest set-up the tool runs on, a 1 GB driver running
two tasks (about 217 MB each), and the same fraction, 0.44, elsewhere: less than half, because
the map doubles as it grows. Measured with the benchmark's `logic` scenario (five grouped columns,
176 bytes a key; `python -m bench sizing`): at 18 M rows per side this asks for 32 partitions,
where nothing spilled and the measuring jobs took 74 s, against 111 s and 3.9 GB spilled on 8
and 84 s with the session set to 32; at 4.05 M rows it leaves Spark's 8, where nothing spills
either (sized to 11 there, it took 24.7 s against 23.5 s: the grouping's
partial aggregation moves above the shuffle, into each reader). Not measured on a cluster:
its executors' memory per core sets its tasks' share the same way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping

MIB = 1024 * 1024
TASK_BYTES = 96 * MIB  # per-key state a task is given on the smallest set-up (module docstring)
SMALLEST_SHARE = MIB  # the least `task_bytes` gives, however small a task's memory
_RESERVED = 300 * MIB  # the heap Spark's unified memory manager keeps for the system
# The settings a task's share is read from (`task_bytes`).
MEMORY_SETTINGS = (
    "spark.master",
    "spark.driver.memory",
    "spark.executor.memory",
    "spark.executor.cores",
    "spark.memory.fraction",
)
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


def execution_per_task(heap: int, cores: int, fraction: float = 0.6) -> float:
    """Bytes of execution memory a task has when every core of an executor runs one: Spark's
    unified pool, (heap - 300 MB) x `spark.memory.fraction`, shared by its running tasks."""
    return max(0.0, (heap - _RESERVED) * fraction / max(1, cores))


# `TASK_BYTES` as a fraction of a task's execution memory on the set-up it was measured on (a
# 1 GB driver running two tasks: about 217 MB): the same headroom on any other.
_SHARE = TASK_BYTES / execution_per_task(1024 * MIB, 2)


def task_bytes(settings: Mapping[str, str | None]) -> int:
    """The per-key state a task of the key grouping is given, from the session's memory
    settings (`MEMORY_SETTINGS`): the share of a task's execution memory measured not to spill
    on the smallest set-up, so a cluster whose executors have more memory per core gets fewer,
    larger tasks (one TB per side of 100-byte rows would otherwise ask for some 18,000). In local mode the
    driver runs the tasks (`local[N]`: N cores; `local-cluster[n,c,m]`: c cores of m MB).
    Settings that cannot be read: `TASK_BYTES`."""
    try:
        heap, cores = _executor(settings)
        fraction = float(settings.get("spark.memory.fraction") or 0.6)
    except ValueError:
        return TASK_BYTES
    return max(SMALLEST_SHARE, int(execution_per_task(heap, cores, fraction) * _SHARE))


def _executor(settings: Mapping[str, str | None]) -> tuple[int, int]:
    """(heap bytes, cores) of the process that runs a task."""
    master = settings.get("spark.master") or ""
    if not master:  # an engine that keeps no master (Sail): nothing to read a share from
        raise ValueError("no master")
    if cluster := re.fullmatch(r"local-cluster\[\s*\d+\s*,\s*(\d+)\s*,\s*(\d+)\s*\]", master):
        return int(cluster.group(2)) * MIB, int(cluster.group(1))
    if local := re.fullmatch(r"local(?:\[(\d+|\*)(?:\s*,\s*\d+)?\])?", master):
        n = local.group(1)
        cores = (os.cpu_count() or 1) if n == "*" else int(n or 1)
        return memory_bytes(settings.get("spark.driver.memory") or "1g"), cores
    return memory_bytes(settings.get("spark.executor.memory") or "1g"), int(settings.get("spark.executor.cores") or 1)


def memory_bytes(text: str) -> int:
    """Spark's memory size (`4g`, `512m`, `2048`: a bare number is MB); ValueError if not one."""
    found = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(b?)\s*", text.lower())
    if found is None:
        raise ValueError(text)
    number, unit, in_bytes = found.groups()
    return int(number) * 1024 ** ("bkmgt".index(unit or ("b" if in_bytes else "m")))


def tasks_needed(larger_sides: Iterable[int], row_bytes: int, share: int = TASK_BYTES) -> int:
    """The tasks that give each at most `share` bytes of per-key rows. `larger_sides`: per
    partition, the larger side's row count."""
    need = sum(larger_sides) * row_bytes
    return max(1, -(-need // share))  # ceiling


def key_partitions(needed: int, session_partitions: Callable[[], int | None]) -> int | None:
    """The key grouping's shuffle partitions: `needed`, where that is more than the session's
    (read only then: a Spark Connect server is asked over the network); else None, to leave
    Spark's plan as it is, as where the engine keeps no such setting (None: Sail)."""
    if needed <= 1:
        return None
    session = session_partitions()
    return needed if session is not None and needed > session else None
