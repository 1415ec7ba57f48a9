"""What a command tells when it ends, without an engine: the alert messages (pure), their
delivery to real HTTP receivers on loopback (200, 500, a hang), the `notify:` section's checks,
and the OpenLineage events, validated against the vendored spec and sent by the real client."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import threading
import uuid
import warnings
from pathlib import Path

import jsonschema
import pytest
from support.openlineage_spec import validate_event
from support.receiver import receiver

from shadow_backfill.announce import Told
from shadow_backfill.announce.alerts import message, sections, slack, summary_line, teams
from shadow_backfill.announce.facts import TableFacts
from shadow_backfill.announce.lineage import Lineage, configured, parent_of
from shadow_backfill.announce.runs import Job, RunPlan
from shadow_backfill.announce.webhooks import Delivery, deliver, notify, within_budgets
from shadow_backfill.command_result import WARN_HELD, CommandResult
from shadow_backfill.config import NotifySpec
from shadow_backfill.document import MetricsDoc
from shadow_backfill.errors import ConfigError, redact
from shadow_backfill.formats.locations import LineageDataset, lineage_name
from shadow_backfill.outcome import Ending
from shadow_backfill.state.verdicts import VerdictRecord
from shadow_backfill.vocabulary import Check, CheckStatus

DOCS = Path(__file__).resolve().parents[2] / "docs"
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]
SECRET = "T000/B000/xoxb-not-a-real-token"


def _result(code: int = 1) -> CommandResult:
    """A backfill of ten days: 03 failed to recompute, 05 failed its checks, 07 held, 7 promoted."""
    promoted = tuple(d for d in DAYS if d not in ("2024-01-03", "2024-01-05", "2024-01-07"))
    judged = {d: CheckStatus.PASS for d in promoted} | {"2024-01-05": CheckStatus.FAIL, "2024-01-07": CheckStatus.WARN}
    return CommandResult(
        "backfill",
        "table",
        "local.db.features",
        Ending(code, "2 of 10 partition(s) failed"),
        selected=tuple(DAYS),
        written=tuple(d for d in DAYS if d != "2024-01-03"),
        failed={"2024-01-03": "ValueError: cannot compute <!channel>"},
        judged=judged,
        promoted=promoted,
        held={"2024-01-05": "verdict fail", "2024-01-07": WARN_HELD},
        promotion_id="promote-20240111T000000-abcdef",
        reports={"html": "/tmp/report/report.html"},
    )


def _verdicts() -> tuple[VerdictRecord, ...]:
    rows = MetricsDoc.model_validate(
        {"rows": {"live": 5, "shadow": 4}, "columns": {"amount": {"shadow_null_rate": 0.25, "shadow_count": 4}}}
    )
    bad = Check("keys_removed", None, CheckStatus.FAIL, 0.2, "warn > 0.01, fail > 0.05", "20% of live's keys are gone")
    ok = Check("row_count_change", None, CheckStatus.PASS, 0.0, "warn > 0.1", "rows unchanged")
    warn = Check("keys_added", None, CheckStatus.WARN, 0.2, "warn > 0.1", "a new key <b>")
    return (
        VerdictRecord("2024-01-05", CheckStatus.FAIL, [bad, ok], rows, shadow_version=4),
        VerdictRecord("2024-01-07", CheckStatus.WARN, [warn, ok], rows, shadow_version=4),
    )


def _facts() -> TableFacts:
    live = LineageDataset("file", "/wh/db/features", "local.db.features", "iceberg", "parquet", "812")
    shadow = LineageDataset("file", "/wh/db/features_v2", "local.db.features_v2", "iceberg", "parquet", "99")
    return TableFacts(
        "local.db.features",
        "local.db.features",
        "local.db.features_v2",
        "cafe",
        live,
        shadow,
        "fp1",
        _verdicts(),
    )


def _told(code: int = 1, **kw: object) -> Told:
    now = dt.datetime(2024, 1, 11, tzinfo=dt.timezone.utc)
    fields: dict[str, object] = {"result": _result(code), "error": "2 of 10 partition(s) failed", "tables": (_facts(),)}
    fields.update(kw)
    return Told("backfill", "table", "local.db.features", code, str(uuid.uuid4()), now, now, **fields)  # type: ignore[arg-type]


# ---- the messages ----------------------------------------------------------------------------


def test_the_one_line_counts_promoted_failed_and_held() -> None:
    assert (
        summary_line(_told())
        == "local.db.features backfill 2024-01-01..2024-01-10: 7 promoted, 2 failed, 1 held — exit 1"
    )
    early = _told(2, result=None, error="config.yaml: field 'keys': ...")
    assert summary_line(early) == "local.db.features backfill: config.yaml: field 'keys': ... — exit 2"


def test_slack_lists_failing_and_held_partitions_with_their_reasons_escaped() -> None:
    body = slack(_told())
    text = json.dumps(body)
    assert body["text"].startswith("local.db.features backfill")
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text  # data never forms a mention
    failed = body["blocks"][1]["text"]["text"]
    assert failed == (
        "*failed*\n• 2024-01-03: ValueError: cannot compute &lt;!channel&gt;\n• 2024-01-05: 20% of live's keys are gone"
    )
    assert body["blocks"][2]["text"]["text"] == "*held for approval*\n• 2024-01-07: a new key &lt;b&gt;"
    context = [e["text"] for e in body["blocks"][3]["elements"]]
    assert context[:2] == ["promotion: promote-20240111T000000-abcdef", "report: /tmp/report/report.html"]


def test_teams_escapes_markdown_in_data() -> None:
    card = teams(_told())["attachments"][0]["content"]
    facts = card["body"][2]["facts"]
    assert facts[0] == {"title": "2024\\-01\\-03", "value": "ValueError: cannot compute \\<\\!channel\\>"}


def test_the_json_message_is_the_published_document() -> None:
    body = message(_told(), "json")
    jsonschema.validate(body, json.loads((DOCS / "alert.schema.json").read_text()))
    assert body["outcome"] == "failure" and body["result"]["promoted"][0] == "2024-01-01"
    assert body["text"] == summary_line(_told())


def test_a_promotions_refusals_count_as_failed_and_held() -> None:
    """`promote` judges nothing: its held partitions say why in the plan's words."""
    held = {
        "2024-01-03": "verdict warn (set promote.allow_warn: true or pass --allow-warn to promote it)",
        "2024-01-02": "verdict fail: 20% of live's keys are gone",
        "2024-01-01": "not validated",
    }
    result = CommandResult("promote", "table", "t", Ending(1, "x"), selected=tuple(held), held=held)
    told = _told(result=result)
    line = "local.db.features backfill 2024-01-01..2024-01-03: 0 promoted, 1 failed, 1 held — exit 1"
    assert summary_line(told) == line
    assert [head for head, _rows in sections(told)] == ["failed", "held for approval"]


def test_a_long_list_is_cut_and_says_so() -> None:
    many = {f"2024-02-{d:02d}": "boom" for d in range(1, 21)}
    told = _told(result=CommandResult("run", "table", "t", Ending(1, "x"), selected=tuple(many), failed=many))
    failed = slack(told)["blocks"][1]["text"]["text"]
    assert failed.startswith("*failed (first 5 of 20)*") and failed.count("•") == 5


# ---- the config ------------------------------------------------------------------------------


def test_a_webhook_names_exactly_one_url() -> None:
    with pytest.raises(ValueError, match="exactly one of 'url_env'"):
        NotifySpec(url_env="A", url="https://hooks.example/x")
    with pytest.raises(ValueError, match="is not an http"):
        NotifySpec(url="ftp://hooks.example/x")


def test_a_url_in_the_config_is_a_secret_from_the_moment_it_is_read() -> None:
    NotifySpec(url=f"https://hooks.example/{SECRET}")
    assert SECRET not in redact(f"a driver quoting https://hooks.example/{SECRET}")


def test_a_missing_variable_is_named_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SB_NO_SUCH_HOOK", raising=False)
    with pytest.raises(ConfigError, match="SB_NO_SUCH_HOOK is not set"):
        NotifySpec(url_env="SB_NO_SUCH_HOOK").resolved_url()


# ---- delivery to real receivers ---------------------------------------------------------------


def test_a_message_is_posted_once_to_a_webhook_that_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    with receiver("ok") as hook:
        monkeypatch.setenv("SB_HOOK", f"{hook.url}/{SECRET}")
        done = deliver(NotifySpec(url_env="SB_HOOK"), {"text": "hi"})
        [got] = hook.wait_for(1)
    assert done.delivered and done.tries == 1 and done.where == "$SB_HOOK"
    assert got.path == f"/hook/{SECRET}" and got.json() == {"text": "hi"}
    assert got.headers["content-type"] == "application/json"


def test_a_failing_webhook_is_retried_then_given_up_with_a_line_naming_its_host() -> None:
    with receiver("error") as hook:
        spec = NotifySpec(url=f"{hook.url}/{SECRET}", retries=2, timeout_s=10)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            [done] = notify([spec], _told())
        assert len(hook.wait_for(3)) == 3
    assert (done.tries, done.problem) == (3, "HTTP 500")
    [line] = [str(w.message) for w in seen]
    assert line == "notify: the webhook at 127.0.0.1 did not take the message after 3 tries (HTTP 500)"


def test_a_hanging_webhook_costs_its_budget_and_no_more() -> None:
    with receiver("hang") as hook:
        done = deliver(NotifySpec(url=f"{hook.url}/{SECRET}", retries=5, timeout_s=1), {"text": "hi"})
        hook.wait_for(1)
    assert done.problem == "timed out" and done.tries == 1  # the budget went on the first try


def test_a_malformed_url_is_a_problem_not_a_traceback() -> None:
    done = deliver(NotifySpec(url="http://127.0.0.1:port/hook"), {"text": "hi"})
    assert (done.tries, done.problem) == (1, "InvalidURL")


def test_a_post_that_never_returns_is_given_up_at_its_budget() -> None:
    """A receiver can trickle its answer a byte at a time, which no socket timeout bounds: the
    command waits for each webhook's thread until its budget is spent, and no longer."""
    release = threading.Event()

    def stuck(spec: NotifySpec) -> Delivery:
        release.wait(60)
        return Delivery(spec.where, 1, None)

    try:
        spec = NotifySpec(url="http://127.0.0.1:1/hook", timeout_s=0.2)
        assert within_budgets([spec], stuck) == [Delivery("127.0.0.1", 1, "timed out")]
    finally:
        release.set()


def test_only_the_endings_a_webhook_asked_for_are_posted() -> None:
    with receiver("ok") as hook:
        quiet = NotifySpec(url=hook.url)  # default: failure, held, stopped
        assert notify([quiet], _told(0)) == []
        assert [d.delivered for d in notify([quiet], _told(3))] == [True]
        assert len(hook.requests) == 1


# ---- OpenLineage ------------------------------------------------------------------------------


def test_lineage_is_on_only_when_the_client_is_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert not configured({})
    assert configured({"OPENLINEAGE_URL": "http://127.0.0.1:1"})
    assert configured({"OPENLINEAGE__TRANSPORT__TYPE": "console"})
    assert not configured({"OPENLINEAGE_URL": "http://127.0.0.1:1", "OPENLINEAGE_DISABLED": "true"})
    (tmp_path / "openlineage.yml").write_text("transport: {type: console}\n")
    assert configured({})


def test_the_client_leaves_the_environment_as_it_found_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client copies OPENLINEAGE_URL into OPENLINEAGE__TRANSPORT__... variables as it starts:
    left there, every later process (a test's next CLI run) would send events too."""
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
    before = dict(os.environ)
    assert Lineage.open(RunPlan("run", "table", "t")) is not None
    assert dict(os.environ) == before


def test_the_parent_is_read_as_airflow_passes_it() -> None:
    run = str(uuid.uuid4())
    assert parent_of(f"airflow/nightly.features/backfill/{run}") == Job("airflow", "nightly.features/backfill", run)
    with pytest.warns(UserWarning, match="OPENLINEAGE_PARENT_ID"):
        assert parent_of("nonsense") is None


def test_locations_are_named_as_openlineage_names_them() -> None:
    assert lineage_name("/wh/db/t") == ("file", "/wh/db/t")
    assert lineage_name("s3://bucket/wh/db/t") == ("s3://bucket", "wh/db/t")


def test_a_command_is_a_start_and_an_end_event_valid_against_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    parent = Job("airflow", "nightly.features", str(uuid.uuid4()))
    told = _told(1)
    plan = RunPlan("backfill", "table", "local.db.features", run_id=told.run_id, parent=parent)
    with receiver("ok") as backend:
        monkeypatch.setenv("OPENLINEAGE_URL", backend.url.removesuffix("/hook"))
        lineage = Lineage.open(plan)
        assert lineage is not None
        lineage.start()
        lineage.end(told)
        start, end = (r.json() for r in backend.wait_for(2))
    custom = {"shadowBackfill": DOCS / "lineage-facet.schema.json"}
    for event in (start, end):
        validate_event(event, custom)
    assert (start["eventType"], end["eventType"]) == ("START", "FAIL")
    assert start["run"]["runId"] == end["run"]["runId"] == told.run_id
    assert end["run"]["facets"]["parent"]["run"]["runId"] == parent.run_id
    assert end["run"]["facets"]["errorMessage"]["message"] == "2 of 10 partition(s) failed"
    assert end["job"]["name"] == "shadow_backfill.backfill.local.db.features"
    shadow, live = end["inputs"]
    assert (shadow["namespace"], shadow["name"]) == ("file", "/wh/db/features_v2")
    assertions = shadow["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert len(assertions) == 4 and [a.get("severity") for a in assertions] == ["error", None, "warn", None]
    assert shadow["inputFacets"]["dataQualityMetrics"]["rowCount"] == 8
    assert shadow["inputFacets"]["dataQualityMetrics"]["columnMetrics"]["amount"]["nullCount"] == 2
    assert live["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "file", "name": "local.db.features", "type": "TABLE"}
    ]
    out_live = end["outputs"][1]
    ours = out_live["facets"]["shadowBackfill"]
    assert ours["promotionId"] == "promote-20240111T000000-abcdef" and len(ours["partitions"]) == 7
    assert (ours["shadowVersion"], ours["codeFingerprint"], ours["configHash"]) == ("4", "fp1", "cafe")
    assert out_live["facets"]["version"]["datasetVersion"] == "812"


@pytest.mark.parametrize(
    ("code", "state"), [(0, "COMPLETE"), (3, "COMPLETE"), (2, "FAIL"), (4, "ABORT"), (130, "ABORT")]
)
def test_the_end_event_follows_the_exit_code(code: int, state: str) -> None:
    from shadow_backfill.announce.lineage_events import end_events

    told = _told(code)
    [event] = end_events(RunPlan("backfill", "table", "t", run_id=told.run_id), told)
    assert event.eventType.value == state
    assert ("errorMessage" in (event.run.facets or {})) == (state == "FAIL")


def test_a_pipeline_is_a_run_with_a_run_per_layer_under_it() -> None:
    from openlineage.client.serde import Serde

    from shadow_backfill.announce.lineage_events import end_events

    layer = dataclasses.replace(_facts(), key="raw")
    told = dataclasses.replace(_told(0), kind="pipeline", target="features", tables=(layer,))
    plan = RunPlan("backfill", "pipeline", "features", run_id=told.run_id, layers={"raw": str(uuid.uuid4())})
    events = [json.loads(Serde.to_json(e)) for e in end_events(plan, told)]
    assert [(e["eventType"], e["job"]["name"]) for e in events] == [
        ("START", "shadow_backfill.pipeline.backfill.features.raw"),
        ("COMPLETE", "shadow_backfill.pipeline.backfill.features.raw"),
        ("COMPLETE", "shadow_backfill.pipeline.backfill.features"),
    ]
    for e in events:
        validate_event(e, {"shadowBackfill": DOCS / "lineage-facet.schema.json"})
    assert events[1]["run"]["facets"]["parent"]["run"]["runId"] == told.run_id
    assert events[1]["run"]["facets"]["parent"]["root"]["run"]["runId"] == told.run_id


def test_a_lineage_backend_that_is_down_is_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    told = _told(0)
    with receiver("error") as backend:
        monkeypatch.setenv("OPENLINEAGE_URL", backend.url.removesuffix("/hook"))
        lineage = Lineage.open(RunPlan("backfill", "table", "t", run_id=told.run_id))
        assert lineage is not None
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            lineage.end(told)
    assert [str(w.message).split(" (")[0] for w in seen] == ["lineage: the OpenLineage backend did not take the events"]
