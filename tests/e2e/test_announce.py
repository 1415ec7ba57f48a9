"""What a backfill tells when it ends, through the real CLI on every backend: one message per
webhook of `notify:` (a Slack one and a JSON one that answer, one that fails, one that hangs, one
that only wants successes), and OpenLineage START and FAIL events to a real receiver, validated
against the vendored spec and held to exact values. The exit code is the job's, and no URL's
secret appears in any output, report or stored row."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sb_test_transforms as t
from support import END, QUIET, START, MakeBackfill, published
from support.openlineage_spec import validate_event
from support.pipelines import make_pipeline
from support.receiver import receiver
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.formats.locations import lineage_name
from shadow_backfill.jvm_output import LOG_DIR_ENV

DOCS = Path(__file__).resolve().parents[2] / "docs"
STAGING_BROKEN = t.STAGING_BROKEN.isoformat()
SECRETS = ("T0001/B0001/slack-not-a-token", "json-not-a-token", "down-not-a-token", "slow-not-a-token")
# one_of_each: 2024-01-03 fails to recompute, 01-05 fails its checks (key 0 gone), 01-07 gains a
# row with a new key: a warn under these bounds (0.2 of live's rows), held for approval.
GATE = {**QUIET, "row_count_change": {"warn": 0.1, "fail": 0.5}, "keys_added": {"warn": 0.1, "fail": 0.5}}


@pytest.mark.every_backend  # the tables' names and versions in the events are the format's
def test_a_backfill_tells_its_webhooks_and_lineage_what_it_did(
    make: MakeBackfill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = str(uuid.uuid4())
    with (
        receiver("ok") as chat,
        receiver("ok") as hook,
        receiver("error") as down,
        receiver("hang") as slow,
        receiver("ok") as fine_only,
        receiver("ok") as lineage,
    ):
        monkeypatch.setenv("SB_TEST_SLACK_URL", f"{chat.url}/{SECRETS[0]}")
        monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path / "logs"))  # the failures' log file, kept here
        monkeypatch.setenv("OPENLINEAGE_URL", lineage.url.removesuffix("/hook"))
        monkeypatch.setenv("OPENLINEAGE_PARENT_ID", f"airflow/nightly.features/{parent}")
        notify = [
            {"url_env": "SB_TEST_SLACK_URL"},
            {"url": f"{hook.url}?token={SECRETS[1]}", "format": "json", "on": ["failure"]},
            {"url": f"{down.url}/{SECRETS[2]}", "format": "teams", "retries": 1},
            {"url": f"{slow.url}/{SECRETS[3]}", "timeout_s": 2, "retries": 0},
            {"url": fine_only.url, "on": ["success"]},
        ]
        bf = make(transform={"function": "sb_told_transforms:one_of_each"}, validation=GATE, notify=notify)
        cfg = bf.config_path  # type: ignore[attr-defined]
        report = tmp_path / "report"
        args = ["backfill", str(cfg), "--start", START, "--end", END, "--chunk-size", "1", "--report", str(report)]
        result = CliRunner().invoke(app, args)
        [slack], [doc], tried, [_hung] = chat.wait_for(1), hook.wait_for(1), down.wait_for(2), slow.wait_for(1)
        start, end = (r.json() for r in lineage.wait_for(2))
    assert result.exit_code == 1, result.output  # the job's code, whatever the webhooks did
    assert fine_only.requests == [] and len(tried) == 2
    live = bf.live_table
    line = f"{live} backfill {START}..{END}: 7 promoted, 2 failed, 1 held — exit 1"
    assert slack.json()["text"] == line
    assert "• 2024-01-07: " in json.dumps(slack.json()["blocks"], ensure_ascii=False)
    alert = published(json.dumps(doc.json()), "alert.schema.json")
    assert (alert["text"], alert["outcome"]) == (line, "failure")
    assert list(alert["result"]["failed"]) == ["2024-01-03"] and alert["result"]["judged"]["2024-01-05"] == "fail"
    assert alert["run"] == end["run"]["runId"]
    assert (
        "warning: notify: the webhook at 127.0.0.1 did not take the message after 2 tries (HTTP 500)" in result.output
    )
    assert "warning: notify: the webhook at 127.0.0.1 did not take the message (timed out)" in result.output

    custom = {"shadowBackfill": DOCS / "lineage-facet.schema.json"}
    for event in (start, end):
        validate_event(event, custom)
    assert (start["eventType"], end["eventType"]) == ("START", "FAIL")
    assert end["run"]["facets"]["parent"]["run"]["runId"] == parent
    [error_line] = [x for x in result.output.splitlines() if x.startswith("error: ")]
    assert end["run"]["facets"]["errorMessage"]["message"] == error_line.removeprefix("error: ")
    fmt = bf.table_format
    names = [lineage_name(fmt.identity(t).location) for t in (bf.shadow_table, live)]  # type: ignore[union-attr]
    assert [(d["namespace"], d["name"]) for d in end["inputs"]] == names
    assert [(d["namespace"], d["name"]) for d in end["outputs"]] == names
    checks = json.loads((report / "report.json").read_text())["partitions"]
    assertions = end["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert len(assertions) == sum(len(p["checks"]) for p in checks if p["partition"] in alert["result"]["judged"])
    severity = [(a.get("severity"), a["params"]["partition"]) for a in assertions]
    by_severity = {s: {k for level, k in severity if level == s} for s in ("error", "warn")}
    # 01-03 was never written (judged missing), 01-05 lost a key and a fifth of its rows (a warn too)
    assert by_severity == {"error": {"2024-01-03", "2024-01-05"}, "warn": {"2024-01-05", "2024-01-07"}}
    out_live = end["outputs"][1]["facets"]
    assert out_live["shadowBackfill"]["partitions"] == alert["result"]["promoted"]
    assert out_live["shadowBackfill"]["promotionId"] == alert["result"]["promotion_id"]
    assert out_live["version"]["datasetVersion"] == str(fmt.current_version(live))
    assert out_live["storage"]["storageLayer"] == bf.config.format
    named = "/" not in live
    assert ("symlinks" in out_live) == named

    # every file the command wrote (reports, any log, the state store), but the config
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".yaml"]
    assert any(p.suffix == ".db" for p in written), "the state store is among them"
    for text in [result.output, json.dumps([start, end]), *(p.read_bytes().decode("latin-1") for p in written)]:
        assert not any(s in text for s in SECRETS), "a webhook's secret leaked"


def test_a_pipeline_backfill_is_one_run_with_a_run_per_layer_under_it(
    make: MakeBackfill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One message for the pipeline's command, not one per layer; each layer's run nests under the
    pipeline's, which nests under the scheduler's."""
    scheduler = str(uuid.uuid4())
    with receiver("ok") as hook, receiver("ok") as lineage:
        monkeypatch.setenv("OPENLINEAGE_URL", lineage.url.removesuffix("/hook"))
        monkeypatch.setenv("OPENLINEAGE_PARENT_ID", f"airflow/nightly/{scheduler}")
        pipeline, layers = make_pipeline(make, tmp_path, None, notify=[{"url": hook.url, "format": "json"}])
        args = ["pipeline", "backfill", str(pipeline.file.path), "--start", START, "--end", END]
        result = CliRunner().invoke(app, [*args, "--report", str(tmp_path / "r")])
        [doc] = hook.wait_for(1)
        events = [r.json() for r in lineage.wait_for(8)]
    assert result.exit_code == 1, result.output  # a day broken in staging, one in features
    alert = published(json.dumps(doc.json()), "alert.schema.json")
    promoted = alert["result"]["promoted"]
    assert (
        alert["text"]
        == f"pipeline pipeline backfill {START}..{END}: {len(promoted)} promoted, 2 failed, 0 held — exit 1"
    )
    custom = {"shadowBackfill": DOCS / "lineage-facet.schema.json"}
    for event in events:
        validate_event(event, custom)
    names = [(e["eventType"], e["job"]["name"].removeprefix("shadow_backfill.pipeline.backfill.")) for e in events]
    assert names == [
        ("START", "pipeline"),
        *[(state, f"pipeline.{key}") for key in ("raw", "staging", "features") for state in ("START", "FAIL")],
        ("FAIL", "pipeline"),
    ]
    top = events[0]["run"]["runId"]
    assert events[-1]["run"]["runId"] == top and events[0]["run"]["facets"]["parent"]["run"]["runId"] == scheduler
    for layer_end in events[2:7:2]:
        parent = layer_end["run"]["facets"]["parent"]
        assert (parent["run"]["runId"], parent["root"]["run"]["runId"]) == (top, scheduler)
        live = layer_end["outputs"][-1]["facets"]["shadowBackfill"]
        assert live["partitions"] == promoted and live["promotionId"] == alert["result"]["promotion_id"]
        assertions = layer_end["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
        checked = {a["params"]["partition"] for a in assertions}  # a day staging held back is not in features
        assert checked == set(alert["result"]["judged"]) - ({STAGING_BROKEN} if layer_end is events[6] else set())
    assert (
        [lineage_name(b.table_format.identity(b.live_table).location)[1] for b in layers.values()]
        == [  # type: ignore[union-attr]
            e["outputs"][-1]["name"] for e in events[2:7:2]
        ]
    )
