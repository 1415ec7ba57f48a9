"""A backfill of several tables as one: layers recomputed upstream first, each reading its
upstream layers' shadows of this run (never live), judged per layer and across layers, and
promoted as a set, upstream first, rolled back as a set, downstream first.

Every layer is an ordinary `Backfill` (its own config, suites, contract and history); this
module only chains them. All layers share one Spark session and one state store, so a layer's
transform reads its upstream's shadow through the session and a pipeline promotion is one
record with its members.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from pyspark.sql import DataFrame, SparkSession

from shadow_backfill.api import Backfill
from shadow_backfill.commands import Commands, Judged
from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import RefusedError, UsageError
from shadow_backfill.ownership import holding_tables
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.pipeline.gate import PipelineVerdict, pipeline_verdicts
from shadow_backfill.pipeline.layer_states import LayerStates, written
from shadow_backfill.pipeline.layer_steps import LayerSteps, merged, pipeline_chunks
from shadow_backfill.pipeline.preflight import check_command
from shadow_backfill.pipeline.promotion import SetPromotion
from shadow_backfill.pipeline.results import PipelineBackfill, PipelinePromotion, PipelineRun, PipelineValidation
from shadow_backfill.pipeline.schedule import Task, run_chunks
from shadow_backfill.pipeline.spec import PipelineFile, load_pipeline
from shadow_backfill.progress import Progress, whole_step
from shadow_backfill.recompute import ProgressCallback, RunOptions
from shadow_backfill.results import RunResult
from shadow_backfill.run_plan import RunPlan, joined_plans
from shadow_backfill.selection import Selection
from shadow_backfill.state import PipelineRecord, StateStore
from shadow_backfill.transform import Inputs
from shadow_backfill.workflow import PromotionPolicy, approval_of, check_approval

P = ParamSpec("P")
R = TypeVar("R")


def one_at_a_time(method: Callable[Concatenate[Pipeline, P], R]) -> Callable[Concatenate[Pipeline, P], R]:
    """A command that writes holds every layer's table while it runs (`_exclusive`), once every
    layer passed its checks (`preflight.check_command`)."""

    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: Pipeline, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._holding_for(method.__name__, signature.bind(self, *args, **kwargs).arguments):
            return method(self, *args, **kwargs)

    return wrapper


class Pipeline(Commands[PipelineRun, dict[str, RunPlan], PipelineValidation, PipelineBackfill]):
    """Everything the tool does for one pipeline file. Spark opens on first use, from the first
    layer's config (every layer's Spark settings are the same: `load_pipeline` checks). The
    commands one table has too (`run`, `dry_run`, `validate`, `backfill`, ...) are declared
    once, in `commands.Commands`."""

    def __init__(self, file: PipelineFile, spark: SparkSession | None = None, *, read_only: bool = False) -> None:
        """`read_only`: a dry run's pipeline, every layer read-only (`Backfill.read_only`)."""
        self.file = file
        self.read_only = read_only
        self._spark = spark
        # The partitions of the command at hand: what a layer's `inputs` hold of its upstreams.
        self._window: list[str] = []
        self._holding = False
        self._finished: PipelineRecord | None = None  # a cut-off promotion this command finished

    @classmethod
    def from_file(cls, path: str | Path, spark: SparkSession | None = None) -> Pipeline:
        return cls(load_pipeline(path), spark)

    @property
    def order(self) -> list[str]:
        """The layers, upstream first."""
        return list(self.file.order)

    @cached_property
    def layers(self) -> dict[str, Backfill]:
        """Each layer's Backfill; none opens Spark until a command needs it (`_open`)."""
        return {
            key: Backfill(self.file.configs[key], self._spark, self._inputs_for(key), read_only=self.read_only)
            for key in self.order
        }

    @cached_property
    def states(self) -> LayerStates:
        """What each layer holds now, read once per step (`LayerStates.forget`)."""
        return LayerStates(self.file, self.layers)

    @cached_property
    def steps(self) -> LayerSteps:
        """The layers' steps inside a pipeline command (`layer_steps`)."""
        return LayerSteps(self.file, self.layers, self.states)

    def _held(self, command: str, chosen: Selection, **arguments: Any) -> AbstractContextManager[None]:
        selected = {"start": chosen.start, "end": chosen.end, "partitions": chosen.partitions}
        return self._holding_for(command, selected | arguments)

    def _holding_for(self, command: str, arguments: Mapping[str, Any]) -> AbstractContextManager[None]:
        """Every layer checked before the lease, the first write (`preflight.check_command`,
        `arguments` by name), then every layer's table held (`_exclusive`)."""
        if not self._holding:
            check_command(self, command, arguments)
        return self._exclusive()

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold every layer's table alone for the command (`ownership`), the layers' own
        commands passing through; a command inside another (`backfill` runs `run`, `validate`,
        `promote`) holds them once."""
        if self._holding:
            yield
            return
        with holding_tables(self.store, [self.layers[k].owned_name for k in self.order]) as owner:
            self._holding = True
            self._finished = None
            for bf in self.layers.values():
                bf.hold.owner = owner
            try:
                self._finish_cut_off()
                yield
            finally:
                self._holding = False
                for bf in self.layers.values():
                    bf.hold.owner = None

    def _open(self) -> None:
        """One Spark session for every layer, opened from the first layer's config; the start
        of every command that writes, so it also drops what earlier commands read."""
        self.states.forget()
        self.open_session()

    def open_session(self) -> None:
        """The session every layer shares (`_open`), opened once."""
        if self._spark is None:
            self._spark = self.layers[self.order[0]].spark
        for bf in self.layers.values():
            bf.share_session(self._spark)

    @property
    def store(self) -> StateStore:
        return self.layers[self.order[0]].store

    def for_dry_run(self) -> Pipeline:
        """A read-only twin for a dry-run command (`Backfill.for_dry_run`): no state store
        created; this pipeline is unchanged."""
        return Pipeline(self.file, self._spark, read_only=True)

    @property
    def scheme(self) -> PartitionScheme:
        """The first layer's partition scheme (every layer's granularity is the same)."""
        return self.layers[self.order[0]].scheme

    def _inputs_for(self, key: str) -> Inputs | None:
        """A layer's upstream shadows as this run wrote them: the partitions of the command's
        range that each upstream has written (a transform filters them as it filters today)."""
        deps = self.file.depends_on(key)
        if not deps:
            return dict  # a first layer's transform may take `inputs` too: it gets none

        def inputs() -> dict[str, DataFrame]:
            frames = {}
            for dep in deps:
                upstream = self.layers[dep]
                done = [p for p in self._window if written(self.states.records(dep).get(p))]
                # pinned to the version read now: other chunks of the upstream layer may commit
                # while this chunk's transform runs (Iceberg refuses a scan whose snapshot moved)
                version = upstream.table_format.current_version(upstream.shadow_table)
                frames[dep] = (
                    upstream.read_shadow(done, version) if done else upstream.read_shadow(version=version).limit(0)
                )
            return frames

        return inputs

    # ---- which partitions are ready --------------------------------------------------------------

    def _keys(self, chosen: Selection, *, required: bool) -> list[str]:
        """The command's partitions: a range or a list, or (where allowed) every partition a
        layer of the pipeline has recomputed."""
        if chosen.given:
            return self.scheme.select(start=chosen.start, end=chosen.end, partitions=chosen.partitions)
        if required:
            raise UsageError("give --start and --end, or --partitions")
        known = {p for key in self.order for p in self.states.records(key)}
        if not known:
            raise UsageError(f"nothing recomputed yet in pipeline {self.file.name}: run it first")
        return self.scheme.sort(known)

    @property
    def configs(self) -> list[BackfillConfig]:
        """The layers' configs, upstream first."""
        return [self.file.configs[key] for key in self.order]

    @property
    def _lead(self) -> Backfill:
        return self.layers[self.order[0]]

    @property
    def _report_folder(self) -> Path:
        return self.file.path.parent / "report"

    # ---- commands ----------------------------------------------------------------------------

    def _run(self, chosen: Selection, options: RunOptions, on_progress: ProgressCallback | None) -> PipelineRun:
        """Every layer in chunks (`pipeline.schedule`): a chunk of a layer runs once its upstream
        layers' same chunk is done, beside other layers' chunks. A layer's partition waits for
        its upstream partitions (see `LayerStates.not_ready`); one written before its upstream
        was rewritten is redone. Once the time box says stop, no chunk of any layer starts
        (those in flight finish)."""
        self._open()
        requested = self._keys(chosen, required=True)
        self._window = requested
        cap = self._cap(options.max_parallel)
        timebox = options.timebox
        chunks = pipeline_chunks(requested, cap)
        for bf in self.layers.values():  # loaded once, before threads share them
            bf.transform  # noqa: B018
        blocked: dict[str, dict[str, str]] = {key: {} for key in self.order}
        not_started: dict[str, list[str]] = {key: [] for key in self.order}
        leaving = threading.Lock()
        steps = {key: options.progress.step(f"recompute {key}", len(requested)) for key in self.order}

        def work(task: Task) -> RunResult | None:
            key, i = task
            if timebox is not None and timebox.reason is not None:
                with leaving:
                    not_started[key].extend(chunks[i])
                return None
            ran = self.steps.run_chunk(key, chunks[i], blocked, options, on_progress)
            steps[key].advance(len(chunks[i]))
            return ran

        try:
            done = run_chunks(self.order, len(chunks), {k: self.file.depends_on(k) for k in self.order}, cap, work)
        finally:
            self.steps.drop_views()
        for step in steps.values():
            step.done()
        runs = {key: [r for (k, _), r in sorted(done.items()) if k == key and r is not None] for key in self.order}
        by_layer = {key: merged(found) for key, found in runs.items()}
        for key, result in by_layer.items():  # partitions a stop left inside a chunk that had started
            not_started[key].extend(result.not_started if result is not None else [])
        left = {key: self.scheme.sort(keys) for key, keys in not_started.items() if keys}
        stopped = timebox.reason if timebox is not None and left else None
        return PipelineRun(requested, by_layer, blocked, stopped, left)

    def _plan(self, chosen: Selection, options: RunOptions) -> dict[str, RunPlan]:
        """Each layer planned from its own records (`Backfill.dry_run`): a partition written
        before its upstream was rewritten shows as skipped here, and the run redoes it."""
        self._open()
        keys = self._keys(chosen, required=True)
        cap = self._cap(options.max_parallel)
        plans = {}
        for key in self.order:  # as `run` splits the work: the range in `cap` chunks, each one at a time
            bf = self.layers[key]
            parts = [
                bf.dry_run(
                    partitions=c,
                    max_parallel=1,
                    chunk_size=options.chunk_size,
                    force=options.force,
                    allow_code_change=options.allow_code_change,
                )
                for c in pipeline_chunks(keys, cap)
            ]
            plans[key] = joined_plans(parts, cap, chosen.window)
        return plans

    def _cap(self, max_parallel: int | None) -> int:
        """Chunks in flight at once across the pipeline: the option, the file, the first layer."""
        return max_parallel or self.file.spec.run.max_parallel or self.layers[self.order[0]].config.run.max_parallel

    def _validate(self, chosen: Selection, progress: Progress) -> PipelineValidation:
        self._open()
        keys = self._keys(chosen, required=False)
        self._window = keys
        for key in self.order:
            with whole_step(progress, f"validate {key}", len(keys)):
                self.steps.validate_layer(key, keys)
        return PipelineValidation(self.verdicts(keys))

    def verdicts(self, keys: Sequence[str] | None = None) -> list[PipelineVerdict]:
        """Each partition's verdict in every layer (from the store) and for the pipeline."""
        self.states.forget()
        keys = list(keys) if keys is not None else self._keys(Selection(), required=False)
        layers: dict[str, dict[str, str]] = {}
        rows: dict[str, dict[str, int]] = {}
        for key in self.order:
            records = self.states.records(key)
            rows[key] = {p: r.rows for p, r in records.items() if written(r) and r.rows is not None}
            layers[key] = {}
            for p in keys:
                verdict = self.states.layer_verdict(key, p)
                if verdict is not None:
                    layers[key][p] = verdict
        return pipeline_verdicts(keys, layers, rows, self.file.spec.consistency)

    @one_at_a_time
    def promote(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        *,
        allow_warn: bool | None = None,
    ) -> PipelinePromotion:
        """Promote the partitions that passed in every layer, one commit per layer, upstream
        first; if a layer's commit is refused or fails, the layers committed before it are rolled
        back (`pipeline.promotion`). A promotion a kill cut off is finished first (the result's
        `finished`)."""
        self._open()
        keys = self._keys(Selection(start, end, partitions), required=False)
        chosen = PromotionPolicy.of(self.configs, allow_warn=allow_warn).passing(
            (v.partition, v.verdict) for v in self.verdicts(keys)
        )
        refused = self._sets.refused(chosen, allow_warn)
        if refused and partitions is not None:
            first = sorted(refused)[0]
            raise RefusedError(f"{first}: {refused[first]} (named partitions are promoted all or none)")
        chosen = [p for p in chosen if p not in refused]
        record = self._sets.promote(chosen, allow_warn) if chosen else None
        return PipelinePromotion(chosen, record, refused, self._finished)

    @one_at_a_time
    def approve(self, partitions: list[str], *, reason: str, by: str | None = None) -> PipelinePromotion:
        """Promote partitions held for approval (pipeline verdict `warn`) that a person approved,
        as one set (`promote`), all or none; the set and each layer's promotion record who (`by`,
        default the current user), when and why. Refused (exit 2) unless every one is held."""
        self._open()
        keys = self._keys(Selection(partitions=partitions), required=True)
        check_approval(keys, {v.partition: v.verdict for v in self.verdicts(keys)}, reason, by)
        refused = self._sets.refused(keys, True)
        if refused:
            first = sorted(refused)[0]
            raise RefusedError(f"{first}: {refused[first]} (approved partitions are promoted all or none)")
        record = self._sets.promote(keys, True, approval_of(reason, by))
        return PipelinePromotion(keys, record, refused, self._finished)

    @property
    def _sets(self) -> SetPromotion:
        return SetPromotion(self.layers, self.order, self.store, str(self.file.path))

    @property
    def finished_cut_off(self) -> PipelineRecord | None:
        """The set promotion a kill had cut off that the last command finished before its own
        work (every writing command does), or None."""
        return self._finished

    def _finish_cut_off(self) -> None:
        """Finish a promotion a kill cut off between two layers' commits, before anything else."""
        record = self._sets.cut_off()
        if record is not None:
            self._open()
            self._finished = self._sets.finish(record)

    @one_at_a_time
    def rollback(self, promotion_id: str) -> PipelineRecord:
        """Undo a pipeline promotion: each layer's promotion, downstream first."""
        self._open()
        return self._sets.rollback(promotion_id)

    def history(self) -> list[PipelineRecord]:
        """The pipeline's promotions and rollbacks of the set, oldest first (no Spark)."""
        return self.store.pipeline_records(str(self.file.path))

    def selected(
        self, start: str | None = None, end: str | None = None, partitions: Sequence[str] | None = None
    ) -> list[str]:
        """The partitions a read-only command shows: a range or a list, or every partition a
        layer has recomputed (no Spark)."""
        named = list(partitions) if partitions is not None else None
        return self._keys(Selection(start, end, named), required=False)

    def report(self, out_dir: str | Path, keys: Sequence[str] | None = None) -> dict[str, Path]:
        """Each layer's reports in a folder of its own, and the pipeline's (one calendar per
        layer and the pipeline verdict, with the layer that failed each partition). `keys`
        narrows the pipeline's calendar; a layer's own report keeps all its verdicts."""
        from shadow_backfill.pipeline.report import write_pipeline_report

        folder = Path(out_dir)
        layer_reports: dict[str, Path] = {}
        for key in self.order:
            if self.layers[key].verdicts():
                layer_reports[key] = self.layers[key].report(folder / key)["html"]
        verdicts = self.verdicts(keys)
        return write_pipeline_report(self.file.name, self.order, verdicts, layer_reports, folder)

    def _judged_nothing(self, run: PipelineRun, promote: bool) -> PipelineBackfill:
        return PipelineBackfill(run, PipelineValidation([]), None, {})

    def _promote_passing(self, job: Judged[PipelineRun, PipelineValidation]) -> PipelineBackfill:
        """The set promotion of what passed in every layer and is not live in all."""
        fresh = self._sets.not_yet_live(job.passing) if job.promote else []
        promotion = None
        if fresh:
            with whole_step(job.progress, "promote", len(fresh)):
                promotion = self.promote(partitions=fresh)
        with whole_step(job.progress, "report"):
            reports = self.report(job.report_to)
        return PipelineBackfill(job.run, job.checked, promotion, reports)


__all__ = ["Pipeline"]
