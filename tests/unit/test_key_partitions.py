"""The key grouping's shuffle sized to its keys (`measure/key_partitions.py`): a number only
where the session's would give a task more than its share, the session's setting read only
then, and at the benchmark's sizes the numbers measured to end the spill (18 M rows per side:
8 partitions spilled 3.9 GB, 32 none) and to leave the 4 M-row plan as Spark's; and a task's
share following its executor's memory per core, as Spark's settings give it."""

from __future__ import annotations

import pytest

from shadow_backfill.validate.measure.key_partitions import (
    MIB,
    TASK_BYTES,
    key_partitions,
    key_row_bytes,
    memory_bytes,
    task_bytes,
    tasks_needed,
)

pytestmark = pytest.mark.unit


def _unread() -> int:
    raise AssertionError("the session's setting was read where it cannot matter")


def test_a_key_row_is_spark_s_layout_of_the_grouping_s_columns() -> None:
    one_long_key = key_row_bytes(1, 0, 0)
    assert key_row_bytes(1, 0, 1) - one_long_key == 16, "one value per side, 8 bytes each"
    assert key_row_bytes(2, 0, 0) - one_long_key == 8, "a long key column"
    assert key_row_bytes(1, 1, 0) - one_long_key == 16, "a string key's bytes beside its word"
    assert key_row_bytes(1, 0, 31) - key_row_bytes(1, 0, 30) == 16 + 8, "a second null bitmap word at 64 fields"


def test_the_tasks_needed_give_each_at_most_its_share() -> None:
    assert tasks_needed([0, 0], 100, 1000) == 1
    assert tasks_needed([10, 0], 100, 1000) == 1
    assert tasks_needed([10, 1], 100, 1000) == 2, "a byte past the share is a task more"
    assert tasks_needed([5, 5], 100, 1000) == 1


def test_only_a_number_above_the_session_s_is_asked_for() -> None:
    assert key_partitions(1, _unread) is None, "one task's worth: Spark's plan, the session not asked"
    assert key_partitions(8, lambda: 8) is None
    assert key_partitions(9, lambda: 8) == 9
    assert key_partitions(9, lambda: 200) is None, "never fewer than the session's"
    assert key_partitions(9, lambda: None) is None, "an engine that keeps no such setting: left to it"


@pytest.mark.parametrize(
    ("rows_per_side", "fewest", "most"),
    [(4_050_000, 8, 8), (18_000_000, 32, 32), (40_000_000, 64, 80)],
)
def test_the_benchmark_s_sizes(rows_per_side: int, fewest: int, most: int) -> None:
    """`python -m bench scale`'s `logic` scenario: 90 daily partitions, one long key, five
    grouped columns, on the tool's 8 shuffle partitions."""
    row = key_row_bytes(1, 0, 5)
    assert row == 176
    needed = tasks_needed([rows_per_side // 90] * 90, row, TASK_BYTES)
    assert fewest <= (key_partitions(needed, lambda: 8) or 8) <= most


@pytest.mark.parametrize(
    ("settings", "mib"),
    [
        ({"spark.master": "local[2]"}, 96),  # the measured set-up, by construction
        ({"spark.master": "local[2]", "spark.driver.memory": "2g"}, 96 * (2048 - 300) / (1024 - 300)),
        ({"spark.master": "local[4]"}, 48),
        ({"spark.master": "local-cluster[2,1,1024]"}, 192),
        ({"spark.master": "yarn", "spark.executor.memory": "8g", "spark.executor.cores": "4"}, 523.2),
        ({"spark.master": "k8s://x", "spark.executor.memory": "8192m", "spark.memory.fraction": "0.3"}, 1046.5),
    ],
)
def test_a_task_s_share_follows_its_executor_s_memory_per_core(settings: dict[str, str], mib: float) -> None:
    assert task_bytes(settings) / MIB == pytest.approx(mib, abs=0.1)


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"spark.master": "local[2]", "spark.driver.memory": "lots"},
        {"spark.master": "yarn", "spark.executor.cores": "x"},
    ],
)
def test_settings_that_cannot_be_read_give_the_measured_share(settings: dict[str, str]) -> None:
    """Among them no master at all: an engine that keeps none (Sail)."""
    assert task_bytes(settings) == TASK_BYTES


def test_memory_sizes_as_spark_writes_them() -> None:
    assert memory_bytes("4g") == 4 * 1024 * MIB
    assert memory_bytes("512m") == memory_bytes("512") == 512 * MIB, "a bare number is MB"
    assert memory_bytes("2k") == memory_bytes("2kb") == 2048
    assert memory_bytes("100b") == 100
    with pytest.raises(ValueError, match="lots"):
        memory_bytes("lots")
