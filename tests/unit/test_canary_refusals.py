"""What a canary promotion refuses before Spark starts, and how a promotion that committed
nothing names why (issue 57): no PySpark here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.outcome import nothing_promoted

CONFIG = {
    "live_table": "local.db.features",
    "format": "iceberg",
    "partition": {"column": "ds"},
    "transform": {"function": "mod:fn"},
}


def test_a_canary_as_large_as_the_named_partitions_is_a_usage_error_before_anything(tmp_path: Path) -> None:
    """`--canary 2` of 2 named partitions would promote them all unchecked: exit 2, one line,
    and no state store or warehouse created."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    for n, names in ((2, "2024-01-01,2024-01-02"), (100, "2024-01-01,2024-01-02,2024-01-01")):
        result = CliRunner().invoke(app, ["promote", str(path), "--canary", str(n), "--partitions", names])
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == [
            f"error: --canary {n}: only 2 partition(s) to promote, and a canary must leave at least one for "
            "after its checks; nothing was promoted (use a canary under 2, or none)"
        ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_a_promotion_that_committed_nothing_names_the_first_refusal() -> None:
    rewritten = "partition 2024-01-03 was rewritten by run-x after it was validated (commit 7); validate again"
    plan = SimpleNamespace(refused={"2024-01-03": rewritten, "2024-01-04": "not validated"})
    assert nothing_promoted(plan) == f"nothing promoted: partition 2024-01-03: {rewritten} (and 1 more refused)"
    assert nothing_promoted(SimpleNamespace(refused={})) == "nothing promoted: no partition passed every check"


def test_a_command_that_finished_a_cut_off_set_promotion_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Every pipeline command finishes a set promotion a kill cut off before its own work; the
    one that did says so in one line naming the set and each layer's promotion."""
    from shadow_backfill.cli.pipeline import say_finished
    from shadow_backfill.state import PipelineRecord

    cut_off = PipelineRecord(
        id="pipeline-promote-1",
        pipeline="/p.yaml",
        kind="promote",
        partitions=["2024-01-01"],
        members=[("raw", "promote-a"), ("staging", "promote-b")],
    )
    say_finished(SimpleNamespace(finished_cut_off=None))  # type: ignore[arg-type]
    say_finished(SimpleNamespace(finished_cut_off=cut_off))  # type: ignore[arg-type]
    assert capsys.readouterr().out.splitlines() == [
        "pipeline-promote-1: finished a promotion cut off by a kill (raw promote-a, staging promote-b)"
    ]
