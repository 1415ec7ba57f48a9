"""A declared change judged by its consistency across the range (`expected_changes.<column>:
consistent`), end to end: no written bounds, and the partitions the change broke are the ones
that fail; then `suggest` derives bounds that, pasted into the config, give the same verdicts.
The rules are pure code over what the jobs measured (`tests/unit/test_consistency.py` and
`test_suggest.py` hold their properties); here, once per engine, that the measured changes
reach them."""

from __future__ import annotations

import json
from pathlib import Path

import sb_test_transforms as t
import yaml
from support import MakeBackfill, published, seed
from typer.testing import CliRunner

from shadow_backfill import Backfill
from shadow_backfill.cli import app
from shadow_backfill.config import load_config

FIRST, LAST = "2024-01-01", "2024-02-29"  # 60 days
TYPICAL = "the range's typical change is +4.0% ± 0.1"


def test_three_days_the_change_broke_fail_without_bounds_and_suggest_finds_them(make: MakeBackfill) -> None:
    bf = make(
        seed_live=False,
        transform={"function": "sb_test_transforms:amount_up_4pct"},
        validation={"expected_changes": {"amount": "consistent"}, "unexpected_changes": "fail"},
    )
    seed(bf, FIRST, LAST)
    assert bf.run(FIRST, LAST).ok
    verdicts = bf.validate().verdicts
    assert len(verdicts) == 60
    broken = {d.isoformat() for d in t.BROKEN_DAYS}
    assert {v.partition for v in verdicts if v.verdict == "fail"} == broken
    assert {v.verdict for v in verdicts if v.partition not in broken} == {"pass"}
    for v in verdicts:
        if v.partition in broken:
            (reason,) = v.reasons
            assert reason.id == "consistent_mean_change_pct[amount]"
            assert reason.message.startswith(f"amount +40.0% on {v.partition}; {TYPICAL}")

    # suggest: bounds from the 57 days; pasted alone (without `consistent`), the same verdicts
    config = Path(bf.config_path)  # type: ignore[attr-defined]
    done = CliRunner().invoke(app, ["suggest", str(config), "--json"])
    assert done.exit_code == 0, done.output
    doc = published(done.stdout, "suggest.schema.json")
    (bounds,) = doc["bounds"]
    assert (bounds["column"], bounds["metric"], bounds["partitions"]) == ("amount", "mean_change_pct", 57)
    assert {x["partition"] for x in doc["left_out"]} == broken
    pasted = yaml.safe_load(doc["yaml"])["validation"]["expected_changes"]
    del pasted["amount"]["consistent"]
    data = yaml.safe_load(config.read_text())
    data["validation"]["expected_changes"] = pasted
    bounded = config.with_name("bounded.yaml")
    bounded.write_text(yaml.safe_dump(data))
    again = Backfill(load_config(bounded), spark=bf.spark).validate().verdicts
    assert {v.partition: v.verdict for v in again} == {v.partition: v.verdict for v in verdicts}
    assert {v.reasons[0].id for v in again if v.verdict == "fail"} == {"mean_change_pct[amount]"}
    text = CliRunner().invoke(app, ["suggest", str(config)])
    assert text.exit_code == 0 and text.stdout == doc["yaml"]

    # the history keeps each of the three validations of a broken day, oldest first
    bf.validate(partitions=["2024-02-05"])
    asked = ["history", str(config), "--partition", "2024-02-05", "--metrics"]
    done = CliRunner().invoke(app, [*asked, "--json"])
    assert done.exit_code == 0, done.output
    kept = published(done.stdout, "metric-history.schema.json")["validations"]
    assert [v["verdict"] for v in kept] == ["fail", "fail", "fail"]  # alone, judged against the stored 59
    assert len({v["validation_id"] for v in kept}) == 3
    assert [round(v["metrics"]["column_changes"]["amount"]["mean_change_pct"], 6) for v in kept] == [40.0] * 3
    text = CliRunner().invoke(app, asked)
    assert text.exit_code == 0 and "2024-02-05" in text.stdout and "no measurements" not in text.stdout
    typo = CliRunner().invoke(app, ["history", str(config), "--partition", "2024-02-31", "--metrics"])
    assert typo.exit_code == 2 and "has no verdict in the state store" in typo.stderr
    paths = bf.report(config.parent / "report")
    part = next(p for p in json.loads(paths["json"].read_text())["partitions"] if p["partition"] == "2024-02-05")
    assert [h["verdict"] for h in part["history"]] == ["fail", "fail", "fail"]
    assert "this partition at each validation kept" in paths["html"].read_text()


def test_a_range_of_five_abstains_says_why_and_holds(make: MakeBackfill, tmp_path: Path) -> None:
    bf = make(
        transform={"function": "sb_test_transforms:amount_up_4pct"},
        validation={"expected_changes": {"amount": "consistent"}},
    )
    assert bf.run("2024-01-01", "2024-01-05").ok
    config = str(bf.config_path)  # type: ignore[attr-defined]
    done = CliRunner().invoke(app, ["validate", config, "--start", "2024-01-01", "--end", "2024-01-05"])
    assert done.exit_code == 3, done.output  # nothing else bounds amount: held for approval
    report = json.loads(bf.report(tmp_path / "r")["json"].read_text())
    checks = [c for p in report["partitions"] for c in p["checks"] if c["name"] == "consistent_mean_change_pct"]
    assert len(checks) == 5 and {c["status"] for c in checks} == {"warn"}
    assert "5 partitions have its mean_change_pct measured, the rule needs at least 8" in checks[0]["message"]
