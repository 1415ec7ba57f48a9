"""The Python API: one object per config, mirroring the CLI.

from shadow_backfill import Backfill
bf = Backfill.from_config("demo/backfill.yaml")
bf.run(start="2024-01-01", end="2024-01-31")
bf.read_shadow(["2024-01-05"]).show()
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession

from shadow_backfill import canary as canaries
from shadow_backfill.canary import CanaryResult, FinishedCanary
from shadow_backfill.commands import Commands, Judged, RunSettings
from shadow_backfill.config import BackfillConfig, load_config
from shadow_backfill.errors import TableNotFoundError, UsageError, WriteError, os_reason
from shadow_backfill.formats.base import TableFormat
from shadow_backfill.formats.locations import table_spelling
from shadow_backfill.ledger import reconcile
from shadow_backfill.ownership import TableHold, writes_table
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.preflight import (
    approve_checks,
    backfill_checks,
    canary_checks,
    check_before_writing,
    promote_checks,
    rollback_checks,
    run_checks,
)
from shadow_backfill.progress import Progress, whole_step
from shadow_backfill.promote import Promoter, PromotionPlan
from shadow_backfill.recompute import ProgressCallback, Recompute, RunOptions
from shadow_backfill.report import ReportData, approvals_in_force, write_reports
from shadow_backfill.report.arrivals import late_arrivals
from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
from shadow_backfill.rollback import Rollback
from shadow_backfill.run_plan import RunPlan, plan_run
from shadow_backfill.selection import Selection
from shadow_backfill.session import open_session
from shadow_backfill.state import Approval, PartitionRecord, PromotionRecord, StateStore, VerdictRecord
from shadow_backfill.table import TableContext, open_store, open_table
from shadow_backfill.transform import Inputs, Transform, load_transform
from shadow_backfill.validate.validator import Validator
from shadow_backfill.workflow import PromotionPolicy, approval_of

if TYPE_CHECKING:
    from typing import Unpack

    from shadow_backfill.document import LateArrivalDoc
    from shadow_backfill.documents.suggest import SuggestionDoc


class Backfill(Commands[RunResult, RunPlan, ValidationResult, BackfillResult]):
    """Everything the tool does for one config. Spark and the state store open lazily. The
    commands a pipeline has too (`run`, `dry_run`, `validate`, `backfill`, ...) are declared
    once, in `commands.Commands`."""

    def __init__(
        self,
        config: BackfillConfig,
        spark: SparkSession | None = None,
        inputs: Inputs | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        """`inputs`: a pipeline's upstream layers, given to a transform that takes them.
        `read_only`: a dry run's object: the state store is read as it is, never created, and
        the format writes nothing (`TableFormat.read_only`), fixed for the object's life."""
        self.config = config
        self.live_table, self.shadow_table = config.live_table, config.shadow
        self.read_only = read_only
        self._config_scheme = PartitionScheme.from_spec(config.partition)
        self._spark = spark
        self._inputs = inputs
        self.hold = TableHold()  # on the live table while a command writes (`ownership`)
        self.live_checked = False  # `preflight.check_before_writing` passed the live table's checks

    @classmethod
    def from_config(cls, path: str | Path, spark: SparkSession | None = None) -> Backfill:
        return cls(load_config(path), spark)

    # ---- the moving parts, opened on first use ---------------------------------------------------

    def share_session(self, spark: SparkSession) -> None:
        """Use this session rather than open one: a pipeline's layers share one session, so each
        reads its upstream's shadow through it."""
        self._spark = spark

    @property
    def session_started(self) -> bool:
        """Whether this object has a Spark session (a command that never needed one has none)."""
        return self._spark is not None

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = open_session(self.config)
        return self._spark

    @property
    def configs(self) -> list[BackfillConfig]:
        """This object's one config, as a pipeline lists its layers' (`PromotionPolicy.of`)."""
        return [self.config]

    @property
    def _lead(self) -> Backfill:
        return self

    @property
    def _report_folder(self) -> Path:
        return self.config.base_dir / "report"

    @cached_property
    def store(self) -> StateStore:
        return open_store(self.config, read_only=self.read_only)

    @cached_property
    def table(self) -> TableContext:
        """The tables' context, built once (`table.open_table`): every command that reads or
        writes a table comes through here first."""
        return open_table(self.config, self.spark, lambda: self.store, read_only=self.read_only)

    @property
    def table_format(self) -> TableFormat:
        return self.table.fmt

    @property
    def scheme(self) -> PartitionScheme:
        """The partition scheme: the config's, completed from the live table once the table's
        context is built (a command that needs no table, such as `status`, keeps the config's)."""
        table = self.__dict__.get("table")
        return table.scheme if table is not None else self._config_scheme

    @cached_property
    def transform(self) -> Transform:
        return load_transform(self.config, self.table.scheme, self._inputs)

    def holding_table(self, command: str) -> AbstractContextManager[None]:
        """The live table held for a writing command, or refused at once if a pipeline command
        holds it (`ownership`). A read-only object (a dry run's) refuses every writing command:
        its store may be a throwaway and it would take no hold."""
        if self.read_only:
            raise UsageError(f"{command}: this object is read-only (a dry run's); it writes nothing")
        return self.hold.held(lambda: self.store, self.owned_name, command)

    @property
    def owned_name(self) -> str:
        """The live table as its hold names it: one spelling for every way a config may name it
        (case, the session catalog's prefix, a relative or `file:` path), so a second spelling
        cannot slip past a pipeline's hold."""
        return table_spelling(self.live_table, str(self.config.base_dir))

    # ---- reading -----------------------------------------------------------------------------

    def read_live(self, partitions: Sequence[str] | None = None, version: int | None = None) -> DataFrame:
        return self.table.read(self.live_table, partitions, version)

    def read_shadow(self, partitions: Sequence[str] | None = None, version: int | None = None) -> DataFrame:
        return self.table.read(self.shadow_table, partitions, version)

    # ---- commands ----------------------------------------------------------------------------

    def _held(self, command: str, chosen: Selection, **arguments: Any) -> AbstractContextManager[None]:
        """`run` and `backfill` pass their checks (`preflight`), then hold the table
        (`holding_table`); `validate` is checked only, and holds nothing: it writes verdicts,
        neither table."""
        if command == "validate":
            check_before_writing(self, chosen, required=False, live=False)
            return nullcontext()
        checks = backfill_checks if command == "backfill" else run_checks
        checks(self, chosen.start, chosen.end, chosen.partitions, **arguments)
        return self.holding_table(command)

    def _run(self, chosen: Selection, options: RunOptions, on_progress: ProgressCallback | None) -> RunResult:
        return self.recompute().run(self._options(chosen, options), on_progress=on_progress)

    @staticmethod
    def _options(chosen: Selection, options: RunOptions) -> RunOptions:
        """The recompute's options: the command's, over the partitions chosen."""
        return replace(options, start=chosen.start, end=chosen.end, partitions=chosen.partitions)

    def recompute(self) -> Recompute:
        return Recompute(self.table, self.transform)

    def _plan(self, chosen: Selection, options: RunOptions) -> RunPlan:
        self.require_live()
        return plan_run(self.recompute(), self._options(chosen, options), chosen.window)

    def for_dry_run(self) -> Backfill:
        """A read-only twin of this object for a dry-run command (`read_only`), sharing its
        session; this object is unchanged."""
        return Backfill(self.config, self._spark, self._inputs, read_only=True)

    def plan(
        self,
        start: str | None = None,
        end: str | None = None,
        partitions: list[str] | None = None,
        **how: Unpack[RunSettings],
    ) -> tuple[list[str], list[str]]:
        """(requested, to_do) without running anything; `how` as for `run` (only `force` and
        `allow_code_change` change the answer)."""
        check_before_writing(self, Selection(start, end, partitions))
        return self.recompute().plan(RunOptions(start=start, end=end, partitions=partitions, **how))

    def status(self) -> list[PartitionRecord]:
        """Every partition the state store knows for the shadow table, ascending."""
        recs = self.store.records(self.shadow_table)
        return [recs[k] for k in self.scheme.sort(recs)]

    def status_rows(self) -> list[dict[str, Any]]:
        """Status records with the latest verdict of each partition (None until validated)."""
        verdicts = self.store.verdicts(self.shadow_table)
        rows = []
        for r in self.status():
            row = r.as_dict()
            v = verdicts.get(r.partition)
            row["verdict"] = v.verdict if v else None
            row["validated_version"] = v.partition_version if v else None
            rows.append(row)
        return rows

    def _validate(self, chosen: Selection, progress: Progress) -> ValidationResult:
        validator = Validator(self.table)
        return validator.run(validator.select(chosen.start, chosen.end, chosen.partitions), progress=progress)

    def report(self, out_dir: str | Path) -> dict[str, Path]:
        """Write HTML, JSON, Markdown and JUnit reports from the stored verdicts (no Spark needed)."""
        verdicts = self.verdicts()
        if not verdicts:
            raise UsageError(f"no verdicts for {self.shadow_table} yet: run `shadow-backfill validate` first")
        approvals = approvals_in_force(self.store.promotions(self.live_table), self.shadow_table)
        history = self.store.metric_histories(self.shadow_table)
        data = ReportData(self.live_table, self.shadow_table, self.config.format, verdicts, approvals, history)
        data.late_arrivals = self.late_arrivals(history)
        folder = Path(out_dir)
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"report folder {str(folder)!r} is a file, not a folder")
        try:
            return write_reports(data, folder)
        except OSError as exc:
            culprit = Path(exc.filename) if exc.filename is not None else folder
            raise WriteError(f"cannot write the report to {str(culprit)!r}: {os_reason(culprit, exc)}") from None

    def promoter(self, approval: Approval | None = None) -> Promoter:
        """The table's promoter; `approval`: what each of its promotions records (`approve`)."""
        return Promoter(self.table, code_fingerprint=self._fingerprint_or_none(), approval=approval)

    def code_fingerprint(self) -> str | None:
        """The transform's code fingerprint (what the run pins), or None if it cannot be read."""
        return self._fingerprint_or_none()

    def _fingerprint_or_none(self) -> str | None:
        try:
            return self.transform.fingerprint
        except Exception:
            return None

    def plan_promotion(self, partitions: list[str] | None = None, *, allow_warn: bool | None = None) -> PromotionPlan:
        """What `promote` would do (the dry run): partitions, refusals with reasons, live version."""
        keys = self.named_keys(partitions)  # named partitions checked before the state store opens
        return self.promoter().plan(keys, allow_warn=self._allow_warn(allow_warn))

    @writes_table("promote", promote_checks)
    def promote(
        self, partitions: list[str] | None = None, *, allow_warn: bool | None = None, approval: Approval | None = None
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        """Promote passing partitions into live in one atomic commit. Naming partitions makes the
        promotion all-or-nothing: any refused partition refuses the whole promotion. A canary a
        kill left unchecked is finished first (`finish_unchecked_canaries`). `approval`: what
        the record carries (a pipeline's approved set; one table's is `approve`)."""
        canaries.refuse_after_failed(self.finish_unchecked_canaries())
        return self.promote_now(partitions, allow_warn=allow_warn, approval=approval)

    def promote_now(
        self,
        partitions: list[str] | None = None,
        *,
        allow_warn: bool | None = None,
        promotion_id: str | None = None,
        approval: Approval | None = None,
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        """`promote` without looking for unchecked canaries (a canary's own steps). `approval`:
        the person's approval the promotion records (`approve`, a pipeline's approved set)."""
        keys = self.named_keys(partitions)  # named partitions checked before the state store opens
        return self.promoter(approval).promote(
            keys,
            allow_warn=self._allow_warn(allow_warn),
            strict=partitions is not None,
            promotion_id=promotion_id,
        )

    @writes_table("promote", approve_checks)
    def approve(
        self, partitions: list[str], *, reason: str, by: str | None = None
    ) -> tuple[PromotionPlan, PromotionRecord | None]:
        """Promote partitions held for approval (verdict `warn`) that a person approved: one
        commit, all or none, bound to the validated versions as every promotion is; the audit
        trail records who (`by`, default the current user), when and why (`reason`). Refused
        (exit 2, nothing written) unless every named partition is held."""
        approve_checks(self, partitions, reason=reason, by=by)  # again, under the hold
        canaries.refuse_after_failed(self.finish_unchecked_canaries())
        live = self.promoter().already_live(self.named_keys(partitions) or [])
        if live:
            first = next(iter(live))
            raise UsageError(f"cannot approve {first}: already promoted by {live[first]}; nothing was promoted")
        return self.promote_now(partitions, allow_warn=True, approval=approval_of(reason, by))

    def finish_unchecked_canaries(self) -> list[FinishedCanary]:
        """Run the checks on live of every canary a kill left between its commit and its checks,
        rolling back each that fails (`canary_recovery`) under the table's hold, as any rollback;
        [] when there is none (one store read)."""
        with self.holding_table("rollback"):
            return canaries.finish_unchecked(self.table)

    @writes_table("promote-canary", canary_checks)
    def promote_canary(
        self, n: int, partitions: list[str] | None = None, *, allow_warn: bool | None = None
    ) -> CanaryResult:
        """Promote the `n` earliest passing partitions, check them on live (rows and the
        downstream queries), then the rest; a failed check rolls the canary back."""
        keys = self.named_keys(partitions)
        return canaries.promote_with_canary(self.promoter(), n, keys, self._allow_warn(allow_warn))

    def named_keys(self, partitions: Sequence[str] | None) -> list[str] | None:
        """Named partitions normalized, each once, in the order given (None: let the command choose)."""
        if partitions is None:
            return None
        keys = self.table_format.scheme.normalize_all(partitions)  # the scheme read from live
        if not keys:
            raise UsageError("the partition list is empty")
        return keys

    def _allow_warn(self, allow_warn: bool | None) -> bool:
        return PromotionPolicy.of(self.configs, allow_warn=allow_warn).allow_warn

    @writes_table("rollback", rollback_checks)
    def rollback(
        self, promotion_id: str | None = None, *, to_version: int | None = None, force: bool = False
    ) -> PromotionRecord:
        """Undo a promotion (or a rollback) by id, or restore the whole live table to a version."""
        rb = Rollback(self.table)
        if promotion_id is not None:
            return rb.undo(promotion_id, force=force)
        assert to_version is not None
        return rb.to_version(to_version)

    def _before_promoting(self) -> None:
        """A canary a kill left unchecked is finished first; a failed one stops the job."""
        canaries.refuse_after_failed(self.finish_unchecked_canaries())

    def _judged_nothing(self, run: RunResult, promote: bool) -> BackfillResult:
        return BackfillResult(run, ValidationResult("", None, None), None, None, {}, promote)

    def _promote_passing(self, job: Judged[RunResult, ValidationResult]) -> BackfillResult:
        already = self.promoter().already_live(job.passing) if job.promote and job.passing else {}
        passing = [k for k in job.passing if k not in already]
        result = BackfillResult(job.run, job.checked, None, None, {}, job.promote, already)
        if job.promote and passing:
            with whole_step(job.progress, "promote", len(passing)):
                self._promote_step(result, passing, job.policy, job.report_to)
        with whole_step(job.progress, "report"):
            result.reports = self.report(job.report_to)
        return result

    def _promote_step(
        self, result: BackfillResult, passing: list[str], policy: PromotionPolicy, report_to: Path
    ) -> None:
        """The main job's promotion of what passed: one commit, or a canary and then the rest.
        A canary as large as what passed would check nothing before all of it is live: the
        verdicts are reported, and the canary is refused."""
        if policy.canary and len(passing) <= policy.canary:
            self.report(report_to)
            raise canaries.too_few(policy.canary, len(passing), name="promote.canary", refused=True)
        if policy.canary:
            canary = result.canary = self.promote_canary(policy.canary, passing)
            result.promotion_plan = canary.plan
            result.promotion = canary.rest or (canary.canary if canary.rolled_back is None else None)
        else:
            result.promotion_plan, result.promotion = self.promote(passing)

    def gc(self, *, dry_run: bool = False, now: float | None = None) -> dict[str, list[str] | None]:
        """Delete partition data replaced more than `promote.retention_days` ago from the live and
        shadow tables: per table, the folders deleted (None where the format keeps its own).
        `now`: the clock in seconds since the epoch (default: the time now; a test passes a
        later day)."""
        with nullcontext() if dry_run else self.holding_table("gc"):
            return self.table.collect_garbage(time.time() if now is None else now, dry_run=dry_run)

    def history(self, *, reconcile_live: bool = True) -> list[PromotionRecord]:
        """Promotions and rollbacks of the live table, oldest first. With `reconcile_live`,
        commits missing from the state store (a crash between commit and audit row) are
        recorded first, which reads the live table; without it only the state store is read
        and Spark never starts (the CLI's default: `history --json` answers in a second)."""
        if reconcile_live:
            self.require_live()
            reconcile(self.table_format, self.store, self.live_table)
        return self.store.promotions(self.live_table)

    def require_live(self) -> None:
        """Commands that read the live table's history name a missing table instead of an engine error."""
        if not self.table_format.exists(self.live_table):
            raise TableNotFoundError(f"live table {self.live_table!r} does not exist ({self.config.format})")

    def suggest(self) -> SuggestionDoc:
        """Bounds for `validation.expected_changes` from the stored verdicts (no Spark needed)."""
        from shadow_backfill.validate.suggest import suggest

        verdicts = self.verdicts()
        if not verdicts:
            raise UsageError(f"no verdicts for {self.shadow_table} yet: run `shadow-backfill validate` first")
        return suggest(verdicts, self.config.validation, self.shadow_table)

    def metric_history(self, partition: str) -> list[VerdictRecord]:
        """The partition's measurements at each validation kept, oldest first (no Spark)."""
        return self.store.metric_history(self.shadow_table, partition)

    def late_arrivals(self, history: Mapping[str, Sequence[VerdictRecord]] | None = None) -> LateArrivalDoc | None:
        """The late-arrival view of the partitions validated at two ages or more (None: none
        was), from `history` or the store's (no Spark)."""
        kept = self.store.metric_histories(self.shadow_table) if history is None else history
        return late_arrivals(kept, self.scheme)

    def verdicts(self) -> list[VerdictRecord]:
        """The stored verdicts, ascending by partition."""
        recs = self.store.verdicts(self.shadow_table)
        return [recs[k] for k in self.scheme.sort(recs)]
