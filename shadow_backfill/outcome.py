"""How a command ended, for whoever runs it: the exit code and its one line, decided here once
from the command's typed result, for one table and a pipeline alike.

A scheduler reads only the exit code, so its meaning must not depend on which command or which
facade ran: 0 only when everything asked was done; 1 when something failed or was refused; 3
when partitions wait for a human (verdict `warn`, not promoted) and nothing failed; 4 when a
stop (a time box, a SIGTERM) left work that a rerun resumes. A failure outranks a stop, a stop
outranks a hold. The CLI prints the line and exits with the code; an integration (an Airflow
operator, an alert) calls the same functions. Pure code: no engine, no store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadow_backfill.vocabulary import CheckStatus

if TYPE_CHECKING:
    from shadow_backfill.canary import CanaryResult
    from shadow_backfill.canary_recovery import FinishedCanary
    from shadow_backfill.pipeline.results import PipelineBackfill, PipelinePromotion, PipelineRun, PipelineValidation
    from shadow_backfill.promote import PromotionPlan
    from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
    from shadow_backfill.state import PromotionRecord

# The exit codes a scheduler reads; the docs' table is this one.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_HELD = 3
EXIT_STOPPED = 4
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Ending:
    """A command's exit code and the one line that says why (empty for 0)."""

    code: int = EXIT_OK
    line: str = ""

    @property
    def ok(self) -> bool:
        return self.code == EXIT_OK


DONE = Ending()


def held_line(partitions: list[str], why: str) -> str:
    """A line of exit 1 or 3 names the partitions (the first five), so a scheduler's log says
    what to look at or approve."""
    more = f" and {len(partitions) - 5} more" if len(partitions) > 5 else ""
    return f"{len(partitions)} partition(s) {why}: {', '.join(partitions[:5])}{more}"


def failed_validation(result: ValidationResult) -> str:
    """The line of a failed gate names the partitions, so a CI log says what to look at."""
    return held_line([v.partition for v in result.verdicts if v.verdict == CheckStatus.FAIL], "failed validation")


# ---- one table ---------------------------------------------------------------------------------


def run_problems(run: RunResult) -> list[str]:
    """Why a run did not do everything asked (failed partitions, ones another run holds): a run
    that quietly did nothing must not pass a CI gate."""
    problems = []
    if run.failed:
        problems.append(f"{len(run.failed)} of {len(run.requested)} partition(s) failed (a rerun retries them)")
    if run.held:
        problems.append(run.held_summary())
    return problems


def stop_line(run: RunResult) -> str:
    """Why a run stopped, and how many of its partitions remain for the next run."""
    if not run.not_started:
        return f"stopped by {run.stopped} before validation; rerun the same command to validate and promote"
    return (
        f"stopped by {run.stopped}: {len(run.not_started)} of {len(run.requested)} partition(s) "
        "remain; rerun the same command to resume"
    )


def run_outcome(run: RunResult) -> Ending:
    """`run`: 1 if a partition failed or was left to another run, else 4 if a stop left some."""
    if problems := run_problems(run):
        return Ending(EXIT_FAILED, "; ".join(problems + ([stop_line(run)] if run.not_started else [])))
    if run.not_started:
        return Ending(EXIT_STOPPED, stop_line(run))
    return DONE


def validation_outcome(result: ValidationResult) -> Ending:
    """`validate`: 1 if any partition failed, 3 if some only warned, else 0."""
    if not result.ok:
        return Ending(EXIT_FAILED, failed_validation(result))
    warned = [v.partition for v in result.verdicts if v.verdict == CheckStatus.WARN]
    if warned:
        return Ending(EXIT_HELD, held_line(warned, "warned; review them before promoting (promote --allow-warn)"))
    return DONE


def backfill_outcome(result: BackfillResult, canary_problem: str | None = None) -> Ending:
    """The main job: 1 if a partition failed (in the run or the gate), a passing one was refused
    or the canary was rolled back (`canary_problem`); else 4 if a stop left work; else 3 if a
    `warn` waits for approval. A stop that came after the last chunk started, with
    `--promote-partial`, left nothing: the whole job was judged, so it ends as an unstopped one."""
    problems = run_problems(result.run)
    if not result.validation.ok:
        problems.append(failed_validation(result.validation))
    if result.refused:
        refused = sorted(result.refused)
        problems.append(held_line(refused, f"not promoted ({result.refused[refused[0]]})"))
    if canary_problem is not None:
        problems.append(canary_problem)
    left = result.run.stopped and (result.run.not_started or not result.validation.validation_id)
    if problems:
        return Ending(EXIT_FAILED, "; ".join(problems + ([stop_line(result.run)] if left else [])))
    if left:
        return Ending(EXIT_STOPPED, stop_line(result.run))
    if result.held:
        return Ending(EXIT_HELD, held_line(result.held, "held for approval (verdict warn, not promoted)"))
    return DONE


def nothing_promoted(plan: PromotionPlan) -> str:
    """The error line of a promotion that committed nothing: the first refusal, named (a shadow
    rewritten after validation says by which run), or that nothing passed."""
    if not plan.refused:
        return "nothing promoted: no partition passed every check"
    first = sorted(plan.refused)[0]
    more = f" (and {len(plan.refused) - 1} more refused)" if len(plan.refused) > 1 else ""
    return f"nothing promoted: partition {first}: {plan.refused[first]}{more}"


def promotion_outcome(plan: PromotionPlan, record: PromotionRecord | None) -> Ending:
    """`promote`: 1 if it committed nothing, else 0 (the partitions it left out are in its plan,
    printed above the line)."""
    return Ending(EXIT_FAILED, nothing_promoted(plan)) if record is None else DONE


def canary_rolled_back(result: CanaryResult) -> str | None:
    """The line of a canary its checks on live rolled back, naming the first failed check; None
    when it was not rolled back."""
    if result.rolled_back is None:
        return None
    more = f" and {len(result.failed) - 1} more failed check(s)" if len(result.failed) > 1 else ""
    return f"canary rolled back as {result.rolled_back.id} (live is as before): {result.failed[0].message}{more}"


def finished_canaries_outcome(finished: list[FinishedCanary]) -> Ending:
    """Canaries a kill had left unchecked, checked by this command first: 1 if one failed on
    live (it was rolled back, and nothing else is promoted)."""
    if failed := [f for f in finished if f.rolled_back is not None]:
        return Ending(
            EXIT_FAILED, f"canary {failed[0].canary.id} failed on live and was rolled back; nothing else was promoted"
        )
    return DONE


def canary_outcome(result: CanaryResult) -> Ending:
    """`promote --canary`: 1 if a canary a kill had left unchecked failed its checks now, if
    this one was rolled back, or if nothing was promoted; else 0."""
    if not (first := finished_canaries_outcome(result.finished)).ok:
        return first
    if (problem := canary_rolled_back(result)) is not None:
        return Ending(EXIT_FAILED, problem)
    return promotion_outcome(result.plan, result.canary)


# ---- a pipeline --------------------------------------------------------------------------------


def pipeline_run_problems(result: PipelineRun) -> list[str]:
    """Each layer's failed, held and blocked partitions, one phrase each (empty: complete)."""
    problems = []
    for key, run in result.runs.items():
        if run is not None and run.failed:
            problems.append(f"{len(run.failed)} partition(s) of {key} failed")
        if run is not None and run.held:
            problems.append(f"{key}: {run.held_summary()}")
        if result.blocked.get(key):
            problems.append(f"{len(result.blocked[key])} partition(s) of {key} held back by upstream")
    return problems


def pipeline_stop_line(result: PipelineRun) -> str:
    """Why the run stopped starting chunks, and what is left for the next run."""
    if not result.not_started:
        return f"stopped by {result.stopped} before validation; rerun the same command to validate and promote"
    left = ", ".join(f"{len(keys)} of {key}" for key, keys in result.not_started.items())
    return f"stopped by {result.stopped}: partitions left in {left}; rerun the same command to resume"


def pipeline_run_outcome(result: PipelineRun) -> Ending:
    """`pipeline run`: 1 if a partition failed, was held or blocked (it outranks a stop), 4 if a
    stop left work for the next run, else 0."""
    problems = pipeline_run_problems(result)
    if problems:
        stop = [pipeline_stop_line(result)] if result.stopped is not None else []
        return Ending(EXIT_FAILED, "; ".join(problems + stop))
    if result.stopped is not None:
        return Ending(EXIT_STOPPED, pipeline_stop_line(result))
    return DONE


def pipeline_validation_outcome(result: PipelineValidation) -> Ending:
    """`pipeline validate`: 1 if a partition failed in any layer or across them, 3 if some only warn."""
    counts = result.counts
    if counts["fail"]:
        return Ending(EXIT_FAILED, f"{counts['fail']} partition(s) failed in the pipeline")
    if counts["warn"]:
        return Ending(EXIT_HELD, f"{counts['warn']} partition(s) only warn: held for approval")
    return DONE


def pipeline_promotion_outcome(result: PipelinePromotion) -> Ending:
    """`pipeline promote`: 1 if it neither promoted the set nor finished one a kill cut off."""
    if result.record is None and result.finished is None:
        return Ending(EXIT_FAILED, "nothing promoted: no partition passed in every layer")
    return DONE


def pipeline_backfill_outcome(result: PipelineBackfill) -> Ending:
    """The main job over every layer, ranked as for one table (`backfill_outcome`)."""
    if result.run.stopped is not None and not result.reports:  # stopped before validation
        return pipeline_run_outcome(result.run)
    problems = pipeline_run_problems(result.run)
    if not result.validation.ok:
        problems.append(f"{result.validation.counts['fail']} partition(s) failed in the pipeline")
    if problems:
        return Ending(EXIT_FAILED, "; ".join(problems))
    if result.run.not_started:  # --promote-partial: what finished is promoted, the rest resumes
        return Ending(EXIT_STOPPED, pipeline_stop_line(result.run))
    return pipeline_validation_outcome(result.validation)
