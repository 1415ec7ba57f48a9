"""A person approves partitions held for approval (verdict `warn`): `approve` promotes exactly
those, in one commit bound to the validated versions, and the audit trail keeps who and why in
the state store and on live's own commit; a failed, a passing or an unvalidated partition, or an
empty reason, is refused before anything is written. Also: `--as-of` counts a `--last --lag`
window from a scheduler's instant, and `--json` on a command that writes prints its result."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from support import START, MakeBackfill, published
from support.pipelines import make_pipeline
from typer.testing import CliRunner

from shadow_backfill import Backfill, Pipeline
from shadow_backfill.cli import app
from shadow_backfill.ledger import APPROVAL_REASON, APPROVED_BY, record_from_commit
from shadow_backfill.windows import NOW_VARIABLE

# amount_moves under this contract: 01-01 passes (mean change 0.2), BIG fails (20), WARN warns (0.4)
BIG, WARN = t.BIG_DAY.isoformat(), t.WARN_DAY.isoformat()
CONTRACT: dict[str, Any] = {
    "expected_changes": {"amount": {"mean_change": {"warn": 0.3, "fail": 1.0}}},
    "unexpected_changes": "fail",
}
# Who and why, with what a property store could mangle: a comma, quotes, `=`, non-ASCII.
BY, REASON = "Zoë O'Neil", 'amount +0.2*id is the fix, "ticket" DATA-42 = ok'
WARN_HELD = "verdict warn: waits for approval (promote --allow-warn)"


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _result(done: Any, code: int) -> dict[str, Any]:
    """A `--json` command's stdout: one command document (json.loads refuses a second one or any
    text around it), with the exit code the command exited with."""
    assert done.exit_code == code, done.output
    doc: dict[str, Any] = published(done.stdout, "command.schema.json")
    assert doc["exit_code"] == done.exit_code
    return doc


def _validated(make: MakeBackfill) -> Backfill:
    bf = make(transform={"function": "sb_test_transforms:amount_moves"}, validation=CONTRACT)
    assert bf.run(partitions=[START, BIG, WARN]).ok
    verdicts = {v.partition: v.verdict for v in bf.validate().verdicts}
    assert verdicts == {START: "pass", BIG: "fail", WARN: "warn"}
    return bf


def _refused(bf: Backfill, partitions: str, reason: str, error: str) -> None:
    """`approve --json` refused with exit 2: its one error line on stderr and as the result's
    `line`, nothing promoted, nothing on live."""
    version = bf.table_format.current_version(bf.live_table)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    done = _cli("approve", cfg, "--partitions", partitions, "--reason", reason, "--by", BY, "--json")
    doc = _result(done, 2)
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line == f"error: {error}" and doc["line"] == error
    assert doc["promoted"] == [] and doc["promotion_id"] is None
    assert bf.table_format.current_version(bf.live_table) == version, "nothing was written"


@pytest.mark.every_backend  # the approval must survive in the format's commit properties
def test_approve_promotes_the_held_partition_and_the_trail_keeps_who_and_why(make: MakeBackfill) -> None:
    """A warn waits for a person: `promote` leaves it out, `approve` refuses anything not held
    (a fail, a pass, an unvalidated day, no reason) before writing, then promotes the held day
    in one commit; who and why are read back from the store and from live's commit, which a
    state store lost after a crash is rebuilt from (`record_from_commit`)."""
    bf = _validated(make)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    fmt, live = bf.table_format, bf.live_table
    before_warn = bf.read_live([WARN])
    before_warn = bf.spark.createDataFrame(before_warn.collect(), before_warn.schema)

    # promote takes the passing partition and holds the warn (and the fail) for their verdicts
    promoted = _result(_cli("promote", cfg, "--json"), 0)
    assert promoted["command"] == "promote" and promoted["promoted"] == [START]
    assert promoted["held"][WARN].startswith("verdict warn") and promoted["held"][BIG].startswith("verdict fail")
    _same(bf.read_live([WARN]), before_warn)
    after_promote = fmt.current_version(live)

    _refused(
        bf,
        f"{WARN},{BIG}",
        REASON,
        f"cannot approve {BIG}: verdict fail: it failed validation, which no approval overrides; nothing was promoted",
    )
    _refused(
        bf,
        START,
        REASON,
        f"cannot approve {START}: verdict pass: it is not held for approval "
        "(promote promotes it); nothing was promoted",
    )
    _refused(bf, "2024-01-02", REASON, "cannot approve 2024-01-02: not validated; nothing was promoted")
    _refused(
        bf, WARN, "   ", "--reason is empty: say why these partitions may go to live (it is kept in the audit trail)"
    )

    done = _cli("approve", cfg, "--partitions", WARN, "--reason", REASON, "--by", BY, "--json")
    doc = _result(done, 0)
    assert (doc["command"], doc["promoted"], doc["held"], doc["refused"]) == ("approve", [WARN], {}, {})
    assert f"(approved by {BY})" in done.stderr, "the human line goes to stderr"
    _same(bf.read_live([WARN]), bf.read_shadow([WARN]))
    _same(bf.read_live([BIG]), bf.read_live([BIG], version=after_promote))

    # one commit on live, carrying the approval; the record rebuilt from it has who and why
    [(commit, hit)] = fmt.commits_touching(live, after_promote, [WARN, BIG, START])
    assert hit == [WARN] and commit.version == fmt.current_version(live)
    assert (commit.properties[APPROVED_BY], commit.properties[APPROVAL_REASON]) == (BY, REASON)
    rebuilt = record_from_commit(commit, live)
    assert rebuilt is not None and rebuilt.id == doc["promotion_id"]
    assert (rebuilt.approved_by, rebuilt.approval_reason, rebuilt.partitions) == (BY, REASON, [WARN])

    # the state store's trail, through the API and `history --json`
    first, approved = bf.history(reconcile_live=False)
    assert (first.approved_by, first.approval_reason) == (None, None)
    assert (approved.id, approved.approved_by, approved.approval_reason) == (doc["promotion_id"], BY, REASON)
    rows = published(_cli("history", cfg, "--json").stdout, "history.schema.json")
    got = [(r["partitions"], r["approved_by"], r["approval_reason"]) for r in rows]
    assert got == [([START], None, None), ([WARN], BY, REASON)]

    # approved once, its verdict is still warn but it is live: a second approval is refused
    _refused(
        bf, WARN, REASON, f"cannot approve {WARN}: already promoted by {doc['promotion_id']}; nothing was promoted"
    )


def _approvals(bf: Backfill, folder: Path) -> dict[str, Any]:
    """report.json's approvals in force, by partition."""
    doc = published(bf.report(folder)["json"].read_text(), "report.schema.json")
    return {p["partition"]: p["approval"] for p in doc["partitions"] if p["approval"] is not None}


def test_approve_by_api_defaults_to_the_current_user_and_rolls_back(make: MakeBackfill, tmp_path: Path) -> None:
    """Without `by` the approver is the user the command runs as; an approval is undone as any
    promotion (`rollback --json` prints its result); with no state store yet, nothing is held,
    and the refusal makes no store."""
    bf = _validated(make)
    before = bf.read_live([WARN])
    before = bf.spark.createDataFrame(before.collect(), before.schema)
    plan, rec = bf.approve([WARN], reason="  intended  ")
    assert rec is not None and rec.partitions == plan.partitions == [WARN]
    assert (rec.approved_by, rec.approval_reason) == (getpass.getuser(), "intended")
    [(commit, _)] = bf.table_format.commits_touching(bf.live_table, rec.live_version_before, [WARN])
    rebuilt = record_from_commit(commit, bf.live_table)
    assert rebuilt is not None and (rebuilt.approved_by, rebuilt.approval_reason) == (getpass.getuser(), "intended")

    assert _approvals(bf, tmp_path / "approved") == {
        WARN: {"by": getpass.getuser(), "reason": "intended", "at": rec.at.isoformat(), "promotion_id": rec.id}
    }

    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    doc = _result(_cli("rollback", cfg, "--promotion", rec.id, "--json"), 0)
    assert (doc["command"], doc["promoted"]) == ("rollback", [WARN]) and doc["promotion_id"] != rec.id
    _same(bf.read_live([WARN]), before)
    assert _approvals(bf, tmp_path / "undone") == {}, "an approval a rollback undid is not in force"
    assert [(h.kind, h.approved_by) for h in bf.history(reconcile_live=False)] == [
        ("promote", getpass.getuser()),
        ("rollback", None),
    ]

    db = tmp_path / "no-store" / "state.db"
    fresh = make(live_table=bf.live_table, seed_live=False, state={"url": f"sqlite:///{db}"})
    done = _cli("approve", str(fresh.config_path), "--partitions", WARN, "--reason", "r", "--json")  # type: ignore[attr-defined]
    assert _result(done, 2)["line"] == f"cannot approve {WARN}: not validated; nothing was promoted"
    assert not db.exists()


# once per engine: which partitions a window holds is the clock's and the scheme's, not the format's
def test_backfill_as_of_counts_the_window_from_that_instant(make: MakeBackfill, tmp_path: Path) -> None:
    """A scheduler re-running last week's job passes its logical date: the window is the one
    counted from it, whatever the clock or SHADOW_BACKFILL_NOW says; `--json` prints the
    result alone on stdout, with the exit code the process exits with."""
    bf = make(transform={"function": "sb_test_transforms:amount_moves"}, validation=CONTRACT)
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    # as of 01-08 03:00, two days late: the days complete by 01-06 03:00, the last three
    window = ["--last", "3", "--lag", "2d", "--as-of", "2024-01-08T03:00Z", "--json"]
    days = ["2024-01-03", "2024-01-04", "2024-01-05"]
    env = {**os.environ, NOW_VARIABLE: "2024-01-12T03:00Z", "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = [sys.executable, "-m", "shadow_backfill.cli", "backfill", cfg, *window]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr[-3000:]  # BIG failed validation
    doc = published(done.stdout, "command.schema.json")  # the whole stdout, one document
    assert doc["exit_code"] == done.returncode == 1 and doc["command"] == "backfill"
    assert doc["selected"] == doc["written"] == days
    assert doc["judged"] == {BIG: "fail", "2024-01-04": "pass", WARN: "warn"}
    assert doc["promoted"] == ["2024-01-04"] and doc["held"] == {BIG: "verdict fail", WARN: WARN_HELD}
    assert "backfill of" in done.stderr and "backfill of" not in done.stdout
    assert sorted(r.partition for r in bf.status()) == days

    # the real clock (years later) and the variable unset: the same window, all written already
    again = _cli("backfill", cfg, *window)
    doc = _result(again, 1)  # BIG's verdict still fails the job
    assert doc["selected"] == doc["skipped"] == days and doc["written"] == doc["promoted"] == []
    ran = _result(_cli("run", cfg, *window), 0)  # `run` takes the window as `backfill` does
    assert (ran["command"], ran["selected"], ran["skipped"]) == ("run", days, days)


def _pipeline_with_a_warn(make: MakeBackfill, tmp_path: Path) -> Pipeline:
    """The shared three layers with features' lost key a warn rather than a fail: the day broken
    in features is held for approval, the one broken in staging fails."""
    probe = make(seed_live=False)
    pipeline, layers = make_pipeline(make, tmp_path, probe.spark)
    features = Path(layers["features"].config_path)  # type: ignore[attr-defined]
    data = yaml.safe_load(features.read_text())
    warn_only = {"warn": 0.01, "fail": None}
    data["validation"].update({"keys_removed": warn_only, "row_count_change": warn_only})
    features.write_text(yaml.safe_dump(data))
    return Pipeline.from_file(pipeline.file.path, spark=probe.spark)


# once per engine: the set's logic is the engine's; each layer's commit is test_approve's above
def test_pipeline_approve_promotes_the_held_day_in_every_layer(make: MakeBackfill, tmp_path: Path) -> None:
    """The pipeline's verdict is the worst of its layers': a day held in one layer is approved
    for the whole set, and the set's record and each layer's promotion carry the approval."""
    pipeline = _pipeline_with_a_warn(make, tmp_path)
    staging_broken, features_broken = t.STAGING_BROKEN.isoformat(), t.FEATURES_BROKEN.isoformat()
    pipeline.run(partitions=[START, staging_broken, features_broken])
    verdicts = {v.partition: v.verdict for v in pipeline.validate().verdicts}
    assert verdicts == {START: "pass", staging_broken: "fail", features_broken: "warn"}
    path = str(pipeline.file.path)
    lives = {
        key: pipeline.layers[key].table_format.current_version(pipeline.layers[key].live_table)
        for key in pipeline.order
    }

    for day, why in ((staging_broken, "verdict fail: it failed validation"), (START, "verdict pass: it is not held")):
        refused = _cli("pipeline", "approve", path, "--partitions", day, "--reason", REASON, "--json")
        doc = _result(refused, 2)
        assert doc["line"].startswith(f"cannot approve {day}: {why}") and doc["promoted"] == []
    for key, layer in pipeline.layers.items():
        assert layer.table_format.current_version(layer.live_table) == lives[key], f"{key}: nothing written"

    done = _cli("pipeline", "approve", path, "--partitions", features_broken, "--reason", REASON, "--by", BY, "--json")
    doc = _result(done, 0)
    assert (doc["command"], doc["kind"], doc["promoted"]) == ("approve", "pipeline", [features_broken])
    [record] = pipeline.history()
    assert (record.approved_by, record.approval_reason, record.partitions) == (BY, REASON, [features_broken])
    for key, layer in pipeline.layers.items():
        _same(layer.read_live([features_broken]), layer.read_shadow([features_broken]))
        [rec] = layer.history(reconcile_live=False)
        assert (rec.approved_by, rec.approval_reason, rec.partitions) == (BY, REASON, [features_broken]), key
        assert (rec.id, key) in [(pid, layer_key) for layer_key, pid in record.members]
    rows = published(_cli("pipeline", "history", path, "--json").stdout, "pipeline-history.schema.json")
    assert [(r["id"], r["approved_by"], r["approval_reason"]) for r in rows] == [(record.id, BY, REASON)]
