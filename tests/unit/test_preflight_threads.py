"""The transform's source check runs in a pipeline's worker threads: parses must not collide.

CPython 3.11 fails two AST builds that interleave (gh-106905). The interleaving is forced the way
the CI met it: a garbage collection during one build runs a finaliser, and the finaliser lets
another thread in. The first test shows the harness meets the bug with a bare `ast.parse`, so the
second, through `parse_alone`, can fail."""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from shadow_backfill.preflight import check_function_source

SOURCE = Path(__file__).parents[1] / "sb_test_transforms.py"


class _Yields:
    """A cyclic object whose finaliser runs Python code, so the collector gives other threads a turn."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def _collisions(parse: Callable[[], object], threads: int = 4, rounds: int = 100) -> list[BaseException]:
    failures: list[BaseException] = []

    def work() -> None:
        for _ in range(rounds):
            if failures:
                return
            for _ in range(100):
                _Yields()
            try:
                parse()
            except SystemError as exc:
                failures.append(exc)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    return failures


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="only CPython 3.11 has gh-106905")
def test_the_harness_meets_the_collision_with_a_bare_parse() -> None:
    source = SOURCE.read_bytes()
    failures = _collisions(lambda: ast.parse(source))
    assert failures and "recursion depth mismatch" in str(failures[0])


def test_source_checks_in_threads_do_not_collide() -> None:
    assert _collisions(lambda: check_function_source(SOURCE, "sb_test_transforms:features")) == []
