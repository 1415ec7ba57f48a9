"""The commands one table (`api.Backfill`) and a pipeline (`pipeline.runner.Pipeline`) share,
declared once: their public signatures, the `Selection` and `RunOptions` each turns its
arguments into, and the main job (`backfill`) step by step.

Why a base class: the two facades are the documented API, and their `run`, `dry_run`,
`validate` and `backfill` must take the same arguments in the same order; written twice they had
drifted (a table's `run` took `chunk_size`, a pipeline's did not) and the main job's stop
handling and promotable set were two copies. What differs is left to one hook per step: how a
command is checked and held (`_held`), how it runs (`_run`, `_plan`, `_validate`), and how the
job promotes what passed and what it returns (`_promote_passing`, `_judged_nothing`).
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar

from shadow_backfill.progress import NO_PROGRESS, Progress
from shadow_backfill.recompute import ProgressCallback, RunOptions
from shadow_backfill.selection import Selection
from shadow_backfill.timebox import TimeBox
from shadow_backfill.windows import AsOf, Window, last_window, time_zone
from shadow_backfill.workflow import PromotionPolicy, stop_of, to_judge

if TYPE_CHECKING:
    from typing import Unpack

    from shadow_backfill.config import BackfillConfig
    from shadow_backfill.partitions import PartitionScheme
    from shadow_backfill.table import TableContext
    from shadow_backfill.vocabulary import CheckStatus


class RunSettings(TypedDict, total=False):
    """How `run`, `dry_run` and `backfill` recompute, given as keywords (each omitted one:
    the config's default, `RunOptions`)."""

    max_parallel: int | None
    """Chunks in flight at once."""
    chunk_size: int | None
    """Partitions per chunk (one commit each); in a pipeline, within each chunk of a layer."""
    force: bool
    """Recompute partitions already written too."""
    allow_code_change: bool
    """Recompute although the transform's code changed since partitions were written."""


class Ran(Protocol):
    """What the main job reads of a run's result (`RunResult`, `PipelineRun`)."""

    stopped: str | None

    @property
    def requested(self) -> Sequence[str]: ...
    @property
    def finished(self) -> Sequence[str]: ...


class HasVerdict(Protocol):
    @property
    def partition(self) -> str: ...
    @property
    def verdict(self) -> CheckStatus | str | None: ...


class Checked(Protocol):
    """What the main job reads of a validation's result: each partition's verdict."""

    @property
    def verdicts(self) -> Sequence[HasVerdict]: ...


class Lead(Protocol):
    """The table whose time zone and partition scheme resolve a window: the table itself, or a
    pipeline's first layer (every layer's are the same: `load_pipeline` checks)."""

    config: BackfillConfig

    @property
    def table(self) -> TableContext: ...
    @property
    def scheme(self) -> PartitionScheme: ...


RunT = TypeVar("RunT", bound=Ran)
PlanT = TypeVar("PlanT")
ValidationT = TypeVar("ValidationT", bound=Checked)
BackfillT = TypeVar("BackfillT")


@dataclass(frozen=True)
class Judged(Generic[RunT, ValidationT]):
    """The main job once validated: what its last step (`Commands._promote_passing`) works
    from."""

    run: RunT
    checked: ValidationT
    passing: list[str]
    """The partitions `policy` promotes, in order (some may be live already)."""
    policy: PromotionPolicy
    report_to: Path
    promote: bool
    """The job is to promote (`backfill(promote=...)`)."""
    progress: Progress = NO_PROGRESS
    """Who follows the job: its `promote` and `report` steps."""


class Commands(ABC, Generic[RunT, PlanT, ValidationT, BackfillT]):
    """The shared commands of a table and a pipeline (see the module's docstring)."""

    read_only: bool

    @property
    @abstractmethod
    def configs(self) -> list[BackfillConfig]:
        """The configs of the tables a command works on, upstream first."""

    @property
    @abstractmethod
    def _lead(self) -> Lead: ...

    @property
    @abstractmethod
    def _report_folder(self) -> Path:
        """Where the main job writes its reports when it is not told."""

    @abstractmethod
    def for_dry_run(self) -> Commands[RunT, PlanT, ValidationT, BackfillT]:
        """A read-only twin for a dry-run command, sharing the session; this object is unchanged."""

    @abstractmethod
    def report(self, out_dir: str | Path) -> dict[str, Path]: ...

    # ---- the hooks: one per step -------------------------------------------------------------

    @abstractmethod
    def _held(self, command: str, chosen: Selection, **arguments: Any) -> AbstractContextManager[None]:
        """The writing command's checks before its first write, then its hold on its table(s)
        while it runs (`arguments`: the command's others that the checks read, by name)."""

    @abstractmethod
    def _run(self, chosen: Selection, options: RunOptions, on_progress: ProgressCallback | None) -> RunT: ...

    @abstractmethod
    def _plan(self, chosen: Selection, options: RunOptions) -> PlanT:
        """`dry_run` on the read-only twin."""

    @abstractmethod
    def _validate(self, chosen: Selection, progress: Progress) -> ValidationT: ...

    def _before_promoting(self) -> None:
        """What the main job settles before its run when it is to promote (nothing by default)."""

    @abstractmethod
    def _judged_nothing(self, run: RunT, promote: bool) -> BackfillT:
        """The main job's result when its stopped run leaves nothing to judge."""

    @abstractmethod
    def _promote_passing(self, job: Judged[RunT, ValidationT]) -> BackfillT:
        """The main job's end: with `job.promote`, promote what of `job.passing` live does not
        hold already; write the reports; say what was done."""

    # ---- the partitions ----------------------------------------------------------------------

    def last_selection(self, last: int, lag: str | dt.timedelta = "0", as_of: AsOf = None) -> Selection:
        """The `last` newest partitions complete now, or at `as_of` (a scheduler's logical
        date), resolved once (`last_window`): fixed as keys, so every later step of the command
        sees the same ones (a range or a list needs no resolving: `Selection(start, end,
        partitions)`)."""
        window = self.last_window(last, lag, as_of)
        return Selection.of_window(window, self.window_keys(window))

    def last_window(self, last: int, lag: str | dt.timedelta = "0", as_of: AsOf = None) -> Window:
        """The `last` newest partitions complete at `as_of` (default now) - `lag`
        (`windows.last_window`), by the scheme read from live (a pipeline's first layer: every
        layer has the same granularity and time zone)."""
        lead = self._lead
        return last_window(lead.table.scheme, lead.config.time_zone, last, lag, as_of)

    def window_keys(self, window: Window) -> list[str]:
        """The window's partitions as keys (a list: an hour a time zone skips is not one)."""
        scheme = self._lead.scheme
        return [scheme.key(p) for p in window.periods]

    def timebox(self, until: str | None = None, max_duration: str | None = None) -> TimeBox:
        """The time box of `--until HH:MM` (the config's `time_zone`; a pipeline's layers share
        one) and `--max-duration D`."""
        return TimeBox.from_options(until, max_duration, time_zone(self._lead.config.time_zone))

    # ---- the commands ------------------------------------------------------------------------

    def run(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timebox: TimeBox | None = None,
        progress: Progress = NO_PROGRESS,
        **how: Unpack[RunSettings],
    ) -> RunT:
        """Recompute partitions into the shadow table (see `shadow-backfill run`); a pipeline
        recomputes every layer, upstream first, in chunks (`pipeline.schedule`), at most
        `max_parallel` chunks at once, a layer's partition waiting for its upstream ones.
        `how`: `max_parallel`, `chunk_size`, `force`, `allow_code_change` (`RunSettings`).
        `timebox`: once it says stop, no further chunk starts (the result's `stopped`,
        `not_started`). Its checks run before the table's hold (`preflight`). `progress`: follows
        its `recompute` step (`shadow_backfill.progress`; a pipeline's, one per layer)."""
        chosen = Selection(start, end, partitions)
        with self._held("run", chosen):
            return self._run(chosen, RunOptions(timebox=timebox, progress=progress, **how), on_progress)

    def dry_run(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        *,
        window: Window | None = None,
        **how: Unpack[RunSettings],
    ) -> PlanT:
        """What `run` would do (for a pipeline, in each layer), from the state store and
        metadata only: nothing is written, no hold taken, and a state store that does not exist
        yet is not created (the plan reads an empty one). `window`: the `--last` window the
        partitions came from, named in the plan; `how`: as for `run` (`RunSettings`)."""
        planner = self if self.read_only else self.for_dry_run()  # this object's format writes
        return planner._plan(Selection(start, end, partitions, window), RunOptions(**how))

    def validate(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        *,
        progress: Progress = NO_PROGRESS,
    ) -> ValidationT:
        """Run the validation gate (see `shadow-backfill validate`); verdicts go to the state
        store. Without partitions, every partition recomputed is validated. A pipeline validates
        every layer against its own live table, then judges each partition across the pipeline
        (`gate.pipeline_verdicts`). `progress`: follows its `validate` step (a pipeline's, one
        per layer)."""
        chosen = Selection(start, end, partitions)
        with self._held("validate", chosen):
            return self._validate(chosen, progress)

    def backfill(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        *,
        promote: bool = True,
        report_dir: str | Path | None = None,
        on_progress: ProgressCallback | None = None,
        timebox: TimeBox | None = None,
        promote_partial: bool = False,
        progress: Progress = NO_PROGRESS,
        **how: Unpack[RunSettings],
    ) -> BackfillT:
        """The main job: recompute -> validate -> promote what passed -> report.

        Only partitions whose verdict is `pass` (or `warn`, with `promote.allow_warn`; in a
        pipeline, of every layer) are promoted, by name, so the promotion is all-or-nothing over
        them: a partition refused at the last moment (live changed after validation) refuses the
        promotion instead of quietly shrinking it. A table promotes in one commit (or a canary
        first, with `promote.canary`), a pipeline as a set, upstream first. Partitions live
        already holds from this shadow are not promoted again.

        A run its `timebox` stopped is validated and promoted only with `promote_partial`, and
        then only over the partitions it finished (in every layer). A table's canary a kill left
        unchecked is finished first, and a failed one stops the job. `how`: the run's settings,
        as for `run` (`RunSettings`). `progress`: follows each step (recompute, validate,
        promote, report), so a terminal's bar never freezes on the first."""
        chosen = Selection(start, end, partitions)
        with self._held("backfill", chosen, report_dir=report_dir):
            report_to = Path(report_dir or self._report_folder)
            policy = PromotionPolicy.of(self.configs, partial=promote_partial)
            if promote:
                self._before_promoting()
            run = self.run(start, end, partitions, on_progress=on_progress, timebox=timebox, progress=progress, **how)
            run.stopped = stop_of(run.stopped, timebox)
            if run.stopped is not None:
                chosen = Selection.of_keys(to_judge(run.requested, run.finished, run.stopped, policy))
                if chosen.empty:  # nothing judged: the reports of earlier verdicts stay
                    return self._judged_nothing(run, promote)
            checked = self.validate(chosen.start, chosen.end, chosen.partitions, progress=progress)
            passing = policy.passing((v.partition, v.verdict) for v in checked.verdicts)
            return self._promote_passing(Judged(run, checked, passing, policy, report_to, promote, progress))


__all__ = ["Commands", "Judged", "RunSettings", "Selection"]
