"""The order of a pipeline run's work: each layer's chunks, run side by side with other layers'
chunks whenever their own upstream chunks are done, at most `cap` at once.

Why chunks and not layers: with one layer after another, the first layer's slowest chunk holds
every downstream chunk back, and a run over a month waits for all of raw before any staging
starts. A chunk (the same partitions in every layer) needs only its own partitions upstream, so
staging's first chunk runs while raw's second is still being written. Pure Python: the work is
a callable, so the rules are tested without Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

R = TypeVar("R")
Task = tuple[str, int]  # (layer, chunk index)


def ready(pending: Sequence[Task], done: set[Task], depends_on: Mapping[str, Sequence[str]]) -> list[Task]:
    """The pending tasks whose upstream layers' same chunk is done, in the order given."""
    return [t for t in pending if all((dep, t[1]) in done for dep in depends_on[t[0]])]


def run_chunks(
    order: Sequence[str],
    chunks: int,
    depends_on: Mapping[str, Sequence[str]],
    cap: int,
    work: Callable[[Task], R],
) -> dict[Task, R]:
    """Run `work` once per (layer, chunk), at most `cap` at once, each after its upstream
    chunks; earlier chunks and upstream layers first when several are ready. An exception in
    one task ends the run once the tasks in flight have finished, and is raised."""
    pending = [(key, i) for i in range(chunks) for key in order]
    done: set[Task] = set()
    results: dict[Task, R] = {}
    with ThreadPoolExecutor(max_workers=max(1, cap)) as pool:
        running: dict[Future[R], Task] = {}
        while pending or running:
            for task in ready(pending, done, depends_on)[: max(1, cap) - len(running)]:
                pending.remove(task)
                running[pool.submit(work, task)] = task
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                task = running.pop(future)
                results[task] = future.result()
                done.add(task)
    return results
