"""`approve`: which partitions a person can approve (pure rules), the refusals before anything is
written, and the approval kept in the audit trail and read back (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.documents.command import CommandDoc
from shadow_backfill.errors import UsageError
from shadow_backfill.state import Approval, PromotionRecord, StateStore
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.workflow import approval_of, approval_refusals, check_approval

VERDICTS = {"2024-01-01": CheckStatus.WARN, "2024-01-02": CheckStatus.FAIL, "2024-01-03": CheckStatus.PASS}


def test_only_held_partitions_can_be_approved() -> None:
    assert approval_refusals(["2024-01-01"], VERDICTS) == {}
    refused = approval_refusals(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"], VERDICTS)
    assert list(refused) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    assert refused["2024-01-02"].startswith("verdict fail: it failed validation")
    assert refused["2024-01-03"].startswith("verdict pass: it is not held for approval")
    assert refused["2024-01-04"] == "not validated"
    assert approval_refusals(["2024-01-01"], {"2024-01-01": "warn"}) == {}, "the store's words work too"


@pytest.mark.parametrize(
    ("keys", "reason", "by", "message"),
    [
        (["2024-01-02"], "ok", None, "cannot approve 2024-01-02: verdict fail"),
        (["2024-01-03", "2024-01-02"], "ok", None, r"cannot approve 2024-01-03: verdict pass.*\(and 1 more\)"),
        (["2024-01-01"], "  ", None, "--reason is empty"),
        (["2024-01-01"], "ok", " ", "--by is empty"),
        ([], "ok", None, "name the held partitions"),
    ],
)
def test_check_approval_refuses_with_one_line(keys: list[str], reason: str, by: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_approval(keys, VERDICTS, reason, by)


def test_the_approver_is_the_named_person_or_the_user() -> None:
    assert approval_of(" fraud spike is real, see INC-42 ", "alice@example.com") == Approval(
        "alice@example.com", "fraud spike is real, see INC-42"
    )
    assert approval_of("ok", None).by  # the user the command runs as


def _promotion(pid: str, live: str, approval: Approval | None) -> PromotionRecord:
    return PromotionRecord.promotion(
        pid,
        live_table=live,
        shadow_table=live + "_v2",
        partitions=["2024-01-01"],
        live_version_before=1,
        shadow_versions={"2024-01-01": 3},
        validation_ids=["v1"],
        config_hash="h",
        code_fingerprint="f",
        approval=approval,
    )


def test_the_trail_keeps_who_approved_and_why(state_url: str) -> None:
    live = f"lake.events_{uuid.uuid4().hex[:8]}"
    store = StateStore(state_url)
    store.record_promotion(_promotion("promote-a-" + live, live, None))
    store.record_promotion(_promotion("promote-b-" + live, live, Approval("alice", "known spike; INC-42 <b>")))
    got = {r.id.split("-")[1]: (r.approved_by, r.approval_reason) for r in store.promotions(live)}
    assert got == {"a": (None, None), "b": ("alice", "known spike; INC-42 <b>")}
    store.close()


GOOD = {"live_table": "local.db.features", "format": "iceberg", "partition": {"column": "ds"}}


def test_approve_refuses_before_spark_and_json_still_prints_the_result(tmp_path: Path) -> None:
    """A refused `approve --json` (exit 2: no such day) prints its one error line on stderr and,
    on stdout, the result document with that line, and writes nothing."""
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**GOOD, "transform": {"function": "m:f"}}))
    result = CliRunner().invoke(app, ["approve", str(p), "--partitions", "2024-13-45", "--reason", "ok", "--json"])
    assert result.exit_code == 2
    line = "partition '2024-13-45' is not a valid daily partition (expected like '2024-01-31')"
    assert result.stderr.strip().splitlines() == [f"error: {line}"]
    doc = CommandDoc.model_validate(json.loads(result.stdout))
    assert (doc.command, doc.kind, doc.target, doc.exit_code) == ("approve", "table", "local.db.features", 2)
    assert doc.line == line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"], "nothing written"


def test_approve_needs_a_reason(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**GOOD, "transform": {"function": "m:f"}}))
    result = CliRunner().invoke(app, ["approve", str(p), "--partitions", "2024-01-01"])
    assert result.exit_code == 2
    assert "--reason" in result.output
