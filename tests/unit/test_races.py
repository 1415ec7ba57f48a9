"""A metadata read or a Delta write that lost a race with a commit is tried again; any other failure is not."""

from __future__ import annotations

import pytest

from shadow_backfill.formats.races import SCAN_RACE, is_delta_commit_race, read_again_on_commit_race


def _failing(times: int, message: str) -> tuple[list[int], object]:
    calls: list[int] = []

    def read() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise RuntimeError(f"(java.lang.IllegalStateException) {message}: resolved snapshot 1 vs scan snapshot 2")
        return "rows"

    return calls, read


def test_a_read_that_raced_a_commit_is_read_again() -> None:
    calls, read = _failing(2, SCAN_RACE)
    assert read_again_on_commit_race(read) == "rows"  # type: ignore[arg-type]
    assert len(calls) == 3


def test_other_failures_and_a_race_that_never_ends_are_raised() -> None:
    calls, read = _failing(1, "Table not found")
    with pytest.raises(RuntimeError, match="Table not found"):
        read_again_on_commit_race(read)  # type: ignore[arg-type]
    assert len(calls) == 1
    calls, read = _failing(10, SCAN_RACE)
    with pytest.raises(RuntimeError, match=SCAN_RACE):
        read_again_on_commit_race(read, attempts=3)  # type: ignore[arg-type]
    assert len(calls) == 3


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("io.delta.exceptions.ConcurrentAppendException: Files were added to partition [ds=2024-01-01]"),
        RuntimeError("Generic delta kernel error: Failed to commit transaction: 3"),
        RuntimeError("Generic DeltaTable error: Missing commit file: expected version 0, found 8"),
    ],
)
def test_delta_writes_that_lost_to_another_commit_are_tried_again(error: Exception) -> None:
    assert is_delta_commit_race(error)


def test_other_delta_failures_are_not_races() -> None:
    assert not is_delta_commit_race(RuntimeError("DELTA_MISSING_DELTA_TABLE: /lake/t is not a Delta table"))
    assert not is_delta_commit_race(ValueError("division by zero"))
