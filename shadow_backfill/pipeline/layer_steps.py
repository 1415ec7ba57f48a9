"""How a pipeline runs its layers' chunks: a layer's chunk recomputes what is ready (stale
partitions rewritten), then, with gate `upstream_passed`, validates it for the layers that wait
on it. One object per pipeline: SQL layers read their upstreams through temporary views that a
lock keeps to one chunk at a time, and a command's options (its time box, read between chunks,
`chunk_size`, `allow_code_change`) reach every layer's run.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from shadow_backfill.errors import TransformError, first_line
from shadow_backfill.pipeline.layer_states import LayerStates, written
from shadow_backfill.recompute import ProgressCallback, RunOptions, chunked
from shadow_backfill.results import RunResult

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.pipeline.spec import PipelineFile


class LayerSteps:
    """The steps of one layer inside a pipeline command (`Pipeline.run`, `Pipeline.validate`)."""

    def __init__(self, file: PipelineFile, layers: Mapping[str, Backfill], states: LayerStates) -> None:
        self.file = file
        self.layers = layers
        self.states = states
        self.order = list(file.order)
        # One SQL layer chunk at a time: two would replace each other's views of their upstreams
        # (a view made before the other chunk's upstream partitions were written lacks them, and
        # Spark Connect resolves a view only when the query runs).
        self._views_lock = threading.Lock()

    def reads_views(self, key: str) -> bool:
        """A SQL layer with upstreams: it reads them as temporary views named by their keys."""
        return self.layers[key].config.transform.sql is not None and bool(self.file.depends_on(key))

    def drop_views(self) -> None:
        """The temporary views SQL layers read their upstreams by, once every chunk is done (a
        chunk still running may be about to read them): no other command sees them."""
        for key in self.order:
            if self.layers[key].config.transform.sql is not None:
                for dep in self.file.depends_on(key):
                    self.layers[key].spark.catalog.dropTempView(dep)

    def run_chunk(
        self,
        key: str,
        chunk: list[str],
        blocked: dict[str, dict[str, str]],
        options: RunOptions,
        on_progress: ProgressCallback | None,
    ) -> RunResult | None:
        """One layer's chunk: what is ready recomputed (stale partitions rewritten), then
        validated if a downstream layer waits for it to pass."""
        held = {p: why for p in chunk if (why := self.states.not_ready(key, p, blocked))}
        blocked[key].update(held)
        ready = [p for p in chunk if p not in held]
        stale = [p for p in ready if self.states.stale(key, p)]
        try:
            run = self.run_layer(key, ready, stale, options, on_progress)
        except TransformError as exc:  # broke before any write: its partitions failed, the rest goes on
            self.states.forget()
            run = RunResult(run_id="", requested=ready, skipped=[], failed=dict.fromkeys(ready, first_line(exc)))
        if self.file.spec.run.gate == "upstream_passed" and self.has_downstream(key):
            self.validate_layer(key, ready)
        return run

    def has_downstream(self, key: str) -> bool:
        return any(key in self.file.depends_on(other) for other in self.order)

    def run_layer(
        self,
        key: str,
        ready: list[str],
        stale: list[str],
        options: RunOptions,
        on_progress: ProgressCallback | None,
    ) -> RunResult | None:
        """One layer's recompute of `ready`, one chunk at a time (the pipeline runs chunks side
        by side); `stale` partitions are rewritten even if written. The time box is checked
        again between the layer's own chunks, as for one table."""
        bf = self.layers[key]
        runs: list[RunResult] = []
        rest = ready if options.force else [p for p in ready if p not in stale]
        todo = [(stale, True)] if stale and not options.force else []  # (partitions, force)
        todo += [(rest, options.force)] if rest else []
        with self._views_lock if self.reads_views(key) else contextlib.nullcontext():
            for keys, force in todo:
                runs.append(
                    bf.run(
                        partitions=keys,
                        max_parallel=1,
                        chunk_size=options.chunk_size,
                        force=force,
                        allow_code_change=options.allow_code_change,
                        on_progress=on_progress,
                        timebox=options.timebox,
                    )
                )
        self.states.forget()
        return merged(runs)

    def validate_layer(self, key: str, keys: Sequence[str]) -> None:
        """Validate the layer's partitions written since their upstreams (a stale one waits
        for its rewrite)."""
        fresh = [p for p in keys if written(self.states.records(key).get(p)) and not self.states.stale(key, p)]
        if fresh:
            self.layers[key].validate(partitions=fresh)
            self.states.forget()


def pipeline_chunks(keys: Sequence[str], cap: int) -> list[list[str]]:
    """The range in `cap` chunks, each run through every layer (see `pipeline.schedule`)."""
    return chunked(keys, max(1, math.ceil(len(keys) / cap)))


def merged(runs: list[RunResult]) -> RunResult | None:
    """Two runs of one layer (the stale partitions, then the rest) as one result."""
    if not runs:
        return None
    out = runs[-1]
    versions = [r.shadow_version for r in runs if r.shadow_version is not None]
    out.shadow_version = max(versions) if versions else None
    out.run_id = next((r.run_id for r in reversed(runs) if r.run_id), "")
    for earlier in runs[:-1]:
        out.requested = earlier.requested + out.requested
        out.skipped = earlier.skipped + out.skipped
        out.written = {**earlier.written, **out.written}
        out.failed = {**earlier.failed, **out.failed}
        out.held = {**earlier.held, **out.held}
        out.chunks = earlier.chunks + out.chunks
        out.not_started = earlier.not_started + out.not_started
        out.stopped = out.stopped or earlier.stopped
    return out


__all__ = ["LayerSteps", "merged", "pipeline_chunks"]
