"""One account of what a command did (`command_result.CommandResult`), built from each step's
own result, for one table and a pipeline alike: where every selected partition went and why,
and the exit code and line the CLI ends with (`outcome`'s rules, in one place). The published
document validates against docs/command.schema.json. Real result objects, no engine (the
promotion plan and the canary's steps, whose modules import PySpark, by their fields)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support import published

from shadow_backfill import command_result as cr
from shadow_backfill.documents import dump
from shadow_backfill.outcome import (
    DONE,
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_STOPPED,
    Ending,
    backfill_outcome,
    pipeline_run_outcome,
)
from shadow_backfill.pipeline.gate import BLOCKED, PipelineVerdict
from shadow_backfill.pipeline.results import PipelineBackfill, PipelinePromotion, PipelineRun, PipelineValidation
from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
from shadow_backfill.state import PipelineRecord, PromotionRecord
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.vocabulary import Check, CheckStatus

KEYS = ["d1", "d2", "d3", "d4"]
PASS, WARN, FAIL = CheckStatus.PASS, CheckStatus.WARN, CheckStatus.FAIL


def _run(**kwargs: Any) -> RunResult:
    return RunResult("r1", list(KEYS), [], **kwargs)


def _checked(*verdicts: str) -> ValidationResult:
    return ValidationResult(
        "v1", 3, 7, [PartitionVerdict(k, CheckStatus(v)) for k, v in zip(KEYS, verdicts, strict=True)]
    )


def _record(id: str, partitions: list[str]) -> PromotionRecord:
    return PromotionRecord(id=id, kind="promote", live_table="db.live", partitions=partitions)


def _plan(partitions: list[str], refused: dict[str, str]) -> Any:
    """A `promote.PromotionPlan` by the fields the builders read."""
    return SimpleNamespace(partitions=partitions, refused=refused)


def _canary(plan: Any, canary: PromotionRecord | None, **kwargs: Any) -> Any:
    """A `canary.CanaryResult` by its fields."""
    fields = {"checks": [], "rest": None, "rolled_back": None, "finished": [], **kwargs}
    return SimpleNamespace(plan=plan, canary=canary, failed=[c for c in fields["checks"] if c.status == FAIL], **fields)


def _accounted(result: cr.CommandResult) -> None:
    """A promoting command puts every selected partition in exactly one place."""
    places = [result.promoted, result.already_live, result.refused, result.held, result.failed]
    assert sorted(k for place in places for k in place) == sorted(result.selected)


def test_a_run_says_what_it_wrote_failed_and_left_and_ends_as_the_run_rule_says() -> None:
    run = _run(written={"d1": 5}, failed={"d2": "boom"}, held={"d3": "ana@h1 pid 7"}, stopped="SIGTERM")
    run.not_started.append("d4")
    result = cr.table_run(run, "db.shadow")
    assert (result.command, result.kind, result.target, result.run_id) == ("run", "table", "db.shadow", "r1")
    assert result.written == ("d1",) and result.failed == {"d2": "boom"} and result.stopped == "SIGTERM"
    assert result.held == {"d3": "recomputed by another run (ana@h1 pid 7)", "d4": "not started: stopped by SIGTERM"}
    assert result.ending.code == EXIT_FAILED and result.ending.line.startswith("1 of 4 partition(s) failed")
    assert cr.table_run(_run(written=dict.fromkeys(KEYS, 1))).ending == DONE


def test_validate_judges_each_partition_and_holds_a_warn() -> None:
    result = cr.table_validation(_checked("pass", "warn", "pass", "warn"))
    assert result.judged == {"d1": PASS, "d2": WARN, "d3": PASS, "d4": WARN} and result.validation_id == "v1"
    assert list(result.held) == ["d2", "d4"] and result.ending.code == EXIT_HELD
    assert result.counts["warn"] == 2 and result.counts["held"] == 2
    assert cr.table_validation(_checked("pass", "warn", "fail", "pass")).ending.code == EXIT_FAILED


def test_a_promotion_holds_what_its_verdict_kept_back_and_refuses_what_changed_under_it() -> None:
    refused = {"d2": "verdict warn (set promote.allow_warn or pass --allow-warn): psi", "d3": "live changed"}
    result = cr.table_promotion(_plan(["d1"], refused), _record("p1", ["d1"]))
    assert result.promoted == ("d1",) and result.promotion_id == "p1" and result.ending == DONE
    assert list(result.held) == ["d2"] and result.refused == {"d3": "live changed"}
    nothing = cr.table_promotion(_plan([], {"d3": "live changed"}), None)
    assert nothing.ending == Ending(EXIT_FAILED, "nothing promoted: partition d3: live changed")
    assert nothing.promoted == () and nothing.promotion_id is None


def test_a_rolled_back_canary_promoted_nothing_and_fails() -> None:
    failed = Check("rows", None, FAIL, 0, "> 0", "no rows on live")
    undo = _record("r1", ["d1"])
    result = cr.table_canary(_canary(_plan(["d1", "d2"], {}), _record("p1", ["d1"]), checks=[failed], rolled_back=undo))
    assert result.promoted == () and result.held == {"d1": "canary rolled back", "d2": "canary rolled back"}
    assert result.ending == Ending(EXIT_FAILED, "canary rolled back as r1 (live is as before): no rows on live")
    rest = _canary(_plan(["d1", "d2"], {}), _record("p1", ["d1"]), rest=_record("p2", ["d2"]))
    assert cr.table_canary(rest).promoted == ("d1", "d2") and cr.table_canary(rest).promotion_id == "p1"
    cut_off = SimpleNamespace(canary=SimpleNamespace(id="p0"), rolled_back=undo)
    assert cr.table_canary(_canary(_plan([], {}), None, finished=[cut_off])).ending == Ending(
        EXIT_FAILED, "canary p0 failed on live and was rolled back; nothing else was promoted"
    )


def test_the_main_job_accounts_for_every_partition_and_holds_a_warn() -> None:
    plan = _plan(["d1"], {"d3": "live changed"})
    job = BackfillResult(
        _run(written=dict.fromkeys(KEYS, 1)),
        _checked("pass", "warn", "pass", "fail"),
        plan,
        _record("p1", ["d1"]),
        {"html": Path("report/report.html")},
        True,
    )
    result = cr.table_backfill(job, "db.live")
    _accounted(result)
    assert result.promoted == ("d1",) and result.refused == {"d3": "live changed"} and result.promotion_id == "p1"
    assert result.held == {"d2": cr.WARN_HELD, "d4": "verdict fail"} and result.reports == {
        "html": "report/report.html"
    }
    assert result.ending == backfill_outcome(job) and result.ending.code == EXIT_FAILED
    warned = BackfillResult(
        _run(), _checked("pass", "warn", "pass", "pass"), None, _record("p1", ["d1", "d3", "d4"]), {}, True
    )
    assert cr.table_backfill(warned).ending.code == EXIT_HELD
    live = BackfillResult(
        _run(), _checked("pass", "pass", "pass", "pass"), None, None, {}, True, already_live={"d2": "p0"}
    )
    assert cr.table_backfill(live).already_live == {"d2": "p0"} and cr.table_backfill(live).held["d1"] == "not promoted"
    kept = BackfillResult(_run(), _checked("pass", "pass", "pass", "pass"), None, None, {}, False)
    assert set(cr.table_backfill(kept).held.values()) == {cr.NOT_ASKED} and cr.table_backfill(kept).ending == DONE


def test_a_main_job_stopped_before_validation_holds_what_it_did_not_judge() -> None:
    run = _run(written={"d1": 1, "d2": 1}, stopped="its time box", not_started=["d3", "d4"])
    result = cr.table_backfill(BackfillResult(run, ValidationResult("", None, None), None, None, {}, True))
    _accounted(result)
    assert result.held["d1"] == "not validated: stopped by its time box"
    assert result.held["d3"] == "not started: stopped by its time box"
    assert result.ending.code == EXIT_STOPPED and result.validation_id is None and result.stopped == "its time box"


def _pipeline_run(**kwargs: Any) -> PipelineRun:
    raw = RunResult("r1", list(KEYS), [], written=dict.fromkeys(KEYS, 1))
    features = RunResult("r2", list(KEYS), ["d1"], written={"d2": 1, "d3": 1})
    return PipelineRun(list(KEYS), {"raw": raw, "features": features}, **kwargs)


def test_a_pipeline_run_names_the_layer_of_each_reason_and_keeps_each_layer() -> None:
    run = _pipeline_run(blocked={"features": {"d4": "upstream raw failed"}})
    result = cr.pipeline_run(run, "demo")
    assert [(layer.target, layer.kind) for layer in result.layers] == [("raw", "table"), ("features", "table")]
    assert result.held == {"d4": "features: held back by upstream: upstream raw failed"}
    assert result.written == ("d1", "d2", "d3") and result.skipped == ()
    assert result.ending == pipeline_run_outcome(run) and result.ending.code == EXIT_FAILED


def _verdicts() -> PipelineValidation:
    return PipelineValidation(
        [
            PipelineVerdict("d1", {"raw": "pass", "features": "pass"}),
            PipelineVerdict("d2", {"raw": "pass", "features": "warn"}),
            PipelineVerdict("d3", {"raw": "pass", "features": "pass"}),
            PipelineVerdict("d4", {"raw": "pass", "features": BLOCKED}),
        ]
    )


def test_a_pipeline_validates_promotes_and_backfills_as_one() -> None:
    validated = cr.pipeline_validation(PipelineValidation(_verdicts().verdicts[:2]), "demo")
    assert validated.judged == {"d1": PASS, "d2": WARN} and validated.ending.code == EXIT_HELD
    record = PipelineRecord(id="pp1", pipeline="demo", kind="promote", partitions=["d1"], members=[("raw", "p1")])
    promotion = PipelinePromotion(["d1"], record, {"d3": "features: live changed"})
    promoted = cr.pipeline_promotion(promotion, "demo")
    assert promoted.promoted == ("d1",) and promoted.promotion_id == "pp1" and promoted.ending == DONE
    assert cr.pipeline_promotion(PipelinePromotion([], None), "demo").ending == Ending(
        EXIT_FAILED, "nothing promoted: no partition passed in every layer"
    )
    job = cr.pipeline_backfill(PipelineBackfill(_pipeline_run(), _verdicts(), promotion, {"html": "x"}), "demo")
    _accounted(job)
    assert job.held == {"d2": cr.WARN_HELD, "d4": "verdict fail"} and job.refused == {"d3": "features: live changed"}
    assert job.ending == Ending(EXIT_FAILED, "1 partition(s) failed in the pipeline") and job.command == "backfill"


def test_the_document_is_what_docs_command_schema_publishes() -> None:
    run = _run(written={"d1": 5}, failed={"d2": "boom ‘quoted’"}, stopped="SIGTERM", not_started=["d4"])
    job = BackfillResult(run, _checked("pass", "warn", "pass", "fail"), None, _record("p1", ["d1"]), {}, True)
    table = published(dump(cr.table_backfill(job, "db.live").document()), "command.schema.json")
    assert table["exit_code"] == EXIT_FAILED and table["judged"]["d2"] == "warn" and table["layers"] == []
    assert table["failed"] == {"d2": "boom ‘quoted’"} and list(table["held"]) == ["d3", "d4"]
    pipeline = cr.pipeline_backfill(PipelineBackfill(_pipeline_run(), _verdicts(), None, {}), "demo")
    doc = published(dump(pipeline.document()), "command.schema.json")
    assert [layer["target"] for layer in doc["layers"]] == ["raw", "features"] and doc["kind"] == "pipeline"
