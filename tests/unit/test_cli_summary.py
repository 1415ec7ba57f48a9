"""The main job's text summary leads with what matters (issue 60, item 9): the counts, each
failed and held partition with its first reason, the promotion id and the report, and not the
sixty verdict rows, which `--verbose` adds. Rendered from real result objects (`BackfillResult`
and the records it holds) as the job returns them; the job itself runs in tests/e2e."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from shadow_backfill.cli.render import backfill_summary, pipeline_summary, print_backfill
from shadow_backfill.pipeline.gate import PipelineVerdict
from shadow_backfill.pipeline.results import PipelineValidation
from shadow_backfill.results import BackfillResult, RunResult, ValidationResult
from shadow_backfill.state import PromotionRecord
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.vocabulary import Check, CheckStatus

DAYS = [f"2024-{m:02d}-{d:02d}" for m in (1, 2) for d in range(1, 31)]
FAILED = {"2024-01-10": "row count 200 -> 120 (-40%)", "2024-02-05": "null share of amount 0.0 -> 0.4"}
WARNED = "2024-02-20"
PROMOTION = "promote-20261127T213554-c9f1e2a3"
LIVE = "local.demo.features"


def _check(message: str, status: CheckStatus) -> Check:
    return Check("row_count_change", None, status, "observed", "expected", message)


def _verdict(key: str) -> PartitionVerdict:
    if key in FAILED:
        return PartitionVerdict(
            key, CheckStatus.FAIL, [_check(FAILED[key], CheckStatus.FAIL), _check("x", CheckStatus.WARN)]
        )
    if key == WARNED:
        return PartitionVerdict(key, CheckStatus.WARN, [_check("mean of amount +3%", CheckStatus.WARN)])
    return PartitionVerdict(key, CheckStatus.PASS, [_check("fine", CheckStatus.PASS)])


def _result(report: Path) -> BackfillResult:
    """Sixty days recomputed, two failed validation, one warned (held), 57 promoted in one commit."""
    run = RunResult("run-1", list(DAYS), [], written=dict.fromkeys(DAYS, 200), chunks=[DAYS], shadow_version=4)
    validation = ValidationResult("c2d965fcdb2f", 8551646648407230905, 7, [_verdict(k) for k in DAYS])
    passing = [k for k in DAYS if k not in FAILED and k != WARNED]
    promotion = PromotionRecord(
        id=PROMOTION, kind="promote", live_table=LIVE, partitions=passing, live_version_before=7, live_version_after=8
    )
    return BackfillResult(run, validation, None, promotion, {"html": report}, True)


def test_the_summary_leads_with_counts_failures_promotion_and_report(tmp_path: Path) -> None:
    report = tmp_path / "report" / "report.html"
    lines = [line.plain for line in backfill_summary(_result(report), LIVE)]
    assert lines[0] == f"backfill of {LIVE}: 60 partition(s): 57 pass, 1 warn, 2 fail; 1 held, 57 promoted"
    assert lines[1:3] == [f"failed {k}: {why}" for k, why in FAILED.items()], "first reason only, failures first"
    assert lines[3].startswith(f"held {WARNED}: verdict warn") and lines[3].endswith("mean of amount +3%")
    assert any(PROMOTION in line and "promoted 57 partition(s)" in line for line in lines)
    assert lines[-1] == f"report: {report}"
    assert len(lines) < 10, "no row per partition"


def _printed(capsys: pytest.CaptureFixture[str], tmp_path: Path, verbose: bool) -> str:
    with pytest.raises(typer.Exit) as ended:
        print_backfill(_result(tmp_path / "report.html"), LIVE, verbose=verbose)
    assert ended.value.exit_code == 1  # two partitions failed
    return capsys.readouterr().out


def test_every_verdict_row_only_with_verbose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    quiet = _printed(capsys, tmp_path, verbose=False)
    assert "2024-01-01" not in quiet and "shadow version" not in quiet, quiet
    assert PROMOTION in quiet and "failed 2024-01-10" in quiet
    verbose = _printed(capsys, tmp_path, verbose=True)
    assert all(k in verbose for k in DAYS), verbose
    # the validation's title says in words which versions were compared
    assert "the shadow table at version 8551646648407230905 against live at version 7" in verbose


def test_a_pipeline_job_names_each_partition_that_did_not_pass_and_its_layers() -> None:
    days = DAYS[:10]
    layers = {day: {"raw": "pass", "staging": "pass", "features": "pass"} for day in days}
    layers[days[3]] = {"raw": "pass", "staging": "fail", "features": "blocked"}
    layers[days[6]] = {"raw": "pass", "staging": "pass", "features": "warn"}
    result = PipelineValidation([PipelineVerdict(day, layers[day]) for day in days])
    lines = [line.plain for line in pipeline_summary(result)]
    assert lines == [
        "pipeline verdicts: 10 partition(s): 8 pass, 1 warn, 1 fail",
        f"fail {days[3]}: in staging, features",
        f"warn {days[6]}: in features",
    ]
