"""The exit code and its line, decided once from a command's typed result (`outcome`), for one
table and a pipeline alike: a failure outranks a stop, a stop outranks a hold, 0 only when
everything asked was done. Real result objects, no engine."""

from __future__ import annotations

from shadow_backfill.outcome import (
    DONE,
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_STOPPED,
    Ending,
    backfill_outcome,
    pipeline_backfill_outcome,
    pipeline_run_outcome,
    pipeline_validation_outcome,
    run_outcome,
    validation_outcome,
)
from shadow_backfill.pipeline.gate import BLOCKED, PipelineVerdict
from shadow_backfill.pipeline.results import PipelineBackfill, PipelineRun, PipelineValidation
from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.vocabulary import CheckStatus

KEYS = ["d1", "d2", "d3"]
RESUME = "stopped by SIGTERM: 1 of 3 partition(s) remain; rerun the same command to resume"


def _run(**kwargs: object) -> RunResult:
    return RunResult("r1", list(KEYS), [], **kwargs)  # type: ignore[arg-type]


def _checked(*verdicts: str) -> ValidationResult:
    judged = [PartitionVerdict(k, CheckStatus(v)) for k, v in zip(KEYS, verdicts, strict=True)]
    return ValidationResult("v1", 3, 7, judged)


def _job(run: RunResult, checked: ValidationResult, **kwargs: object) -> BackfillResult:
    return BackfillResult(run, checked, None, None, {}, True, **kwargs)  # type: ignore[arg-type]


def test_a_run_that_did_everything_ends_with_nothing_to_say() -> None:
    assert run_outcome(_run(written={"d1": 5})) == DONE and DONE.ok


def test_a_failed_partition_outranks_a_stop_and_the_line_says_both() -> None:
    run = _run(failed={"d2": "boom"}, stopped="SIGTERM", not_started=["d3"])
    assert run_outcome(run) == Ending(EXIT_FAILED, f"1 of 3 partition(s) failed (a rerun retries them); {RESUME}")
    assert run_outcome(_run(stopped="SIGTERM", not_started=["d3"])) == Ending(EXIT_STOPPED, RESUME)


def test_validate_fails_on_a_fail_and_holds_on_a_warn() -> None:
    assert validation_outcome(_checked("pass", "fail", "warn")) == Ending(
        EXIT_FAILED, "1 partition(s) failed validation: d2"
    )
    warned = validation_outcome(_checked("pass", "warn", "warn"))
    assert warned == Ending(
        EXIT_HELD, "2 partition(s) warned; review them before promoting (promote --allow-warn): d2, d3"
    )
    assert validation_outcome(_checked("pass", "pass", "pass")) == DONE


def test_the_main_job_holds_a_warn_it_did_not_promote() -> None:
    job = _job(_run(), _checked("pass", "warn", "pass"))
    assert backfill_outcome(job) == Ending(
        EXIT_HELD, "1 partition(s) held for approval (verdict warn, not promoted): d2"
    )
    assert backfill_outcome(_job(_run(), _checked("pass", "warn", "pass"), already_live={"d2": "p1"})) == DONE


def test_a_refused_promotion_or_a_rolled_back_canary_fails_the_job() -> None:
    job = _job(_run(), _checked("pass", "pass", "pass"))
    assert backfill_outcome(job, "canary p1 failed on live") == Ending(EXIT_FAILED, "canary p1 failed on live")


def test_a_job_stopped_before_validation_ends_stopped_and_a_partial_one_as_judged() -> None:
    not_judged = _job(_run(stopped="SIGTERM", not_started=["d3"]), ValidationResult("", None, None))
    assert backfill_outcome(not_judged) == Ending(EXIT_STOPPED, RESUME)
    late = _job(_run(stopped="its time box"), _checked("pass", "pass", "pass"))  # stopped after the last chunk
    assert backfill_outcome(late) == DONE


def _pipeline_run(**kwargs: object) -> PipelineRun:
    return PipelineRun(list(KEYS), {"raw": _run(), "features": _run()}, **kwargs)  # type: ignore[arg-type]


def test_a_pipeline_partition_held_back_by_its_upstream_fails_the_run() -> None:
    blocked = _pipeline_run(blocked={"features": {"d2": "upstream raw is blocked"}})
    assert pipeline_run_outcome(blocked) == Ending(EXIT_FAILED, "1 partition(s) of features held back by upstream")
    stopped = _pipeline_run(stopped="SIGTERM", not_started={"features": ["d3"]})
    assert pipeline_run_outcome(stopped) == Ending(
        EXIT_STOPPED, "stopped by SIGTERM: partitions left in 1 of features; rerun the same command to resume"
    )


def test_a_pipeline_is_as_good_as_its_worst_layer_at_the_end() -> None:
    verdicts = [
        PipelineVerdict("d1", {"raw": "pass", "features": "pass"}),
        PipelineVerdict("d2", {"raw": "pass", "features": "warn"}),
    ]
    warned = PipelineValidation(verdicts)
    assert pipeline_validation_outcome(warned) == Ending(EXIT_HELD, "1 partition(s) only warn: held for approval")
    failed = PipelineValidation([*verdicts, PipelineVerdict("d3", {"raw": "pass", "features": BLOCKED})])
    assert pipeline_backfill_outcome(PipelineBackfill(_pipeline_run(), failed, None, {"html": "x"})) == Ending(
        EXIT_FAILED, "1 partition(s) failed in the pipeline"
    )
