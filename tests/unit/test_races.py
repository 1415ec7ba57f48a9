"""A metadata read that lost a race with a commit is read again; any other failure is not."""

from __future__ import annotations

import pytest

from shadow_backfill.formats.races import SCAN_RACE, read_again_on_commit_race


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
