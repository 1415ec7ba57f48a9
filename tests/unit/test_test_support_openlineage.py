"""The test-support pieces for webhook and OpenLineage tests work: `validate_event` accepts a
valid RunEvent and names what breaks the vendored spec, and the loopback receiver answers in
each mode. No Spark."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support.openlineage_spec import SPEC_DIR, validate_event
from support.receiver import receiver

PRODUCER = "https://github.com/example/shadow_backfill"
FACETS = "https://openlineage.io/spec/facets"


def run_event(**changes: Any) -> dict[str, Any]:
    """A minimal valid RunEvent, as the HTTP transport posts it, with top-level `changes`."""
    event: dict[str, Any] = {
        "eventType": "COMPLETE",
        "eventTime": "2024-01-12T06:00:00.000Z",
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "01890b1c-4b2e-7c3a-9f00-0123456789ab"},
        "job": {"namespace": "shadow_backfill", "name": "orders.backfill"},
        "inputs": [],
        "outputs": [],
    }
    event.update(changes)
    return event


def assertions_facet(*assertions: dict[str, Any]) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"{FACETS}/1-1-0/DataQualityAssertionsDatasetFacet.json#/$defs/DataQualityAssertionsDatasetFacet",
        "assertions": list(assertions),
    }


def with_assertions(facet: dict[str, Any]) -> dict[str, Any]:
    dataset = {"namespace": "s3://bucket", "name": "orders", "inputFacets": {"dataQualityAssertions": facet}}
    return run_event(inputs=[dataset])


def test_vendored_version_is_recorded() -> None:
    tag, sha, repo = (SPEC_DIR / "VERSION").read_text().split()
    assert repo == "OpenLineage/OpenLineage" and len(sha) == 40 and tag


def test_minimal_run_event_passes() -> None:
    validate_event(run_event())


def test_bogus_event_type_fails() -> None:
    with pytest.raises(AssertionError, match=r"event\.eventType: 'BOGUS' is not one of"):
        validate_event(run_event(eventType="BOGUS"))


def test_bad_event_time_fails() -> None:
    with pytest.raises(AssertionError, match=r"event\.eventTime: '12/01/2024' is not a 'date-time'"):
        validate_event(run_event(eventTime="12/01/2024"))


def test_valid_facets_pass() -> None:
    event = with_assertions(assertions_facet({"assertion": "row_count", "success": True, "column": "id"}))
    event["run"]["facets"] = {
        "nominalTime": {
            "_producer": PRODUCER,
            "_schemaURL": f"{FACETS}/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet",
            "nominalStartTime": "2024-01-12T00:00:00Z",
        }
    }
    validate_event(event)


@pytest.mark.parametrize("missing", ["assertion", "success"])
def test_assertion_missing_required_field_fails(missing: str) -> None:
    assertion = {"assertion": "not_null", "success": False, "column": "id"}
    del assertion[missing]
    with pytest.raises(AssertionError) as caught:
        validate_event(with_assertions(assertions_facet(assertion)))
    message = str(caught.value)
    assert f"inputs[0].inputFacets.dataQualityAssertions.assertions[0]: '{missing}' is a required property" in message
    assert "DataQualityAssertionsDatasetFacet.json#/$defs/DataQualityAssertionsDatasetFacet" in message


def test_custom_facet_skipped_unless_a_schema_is_given(tmp_path: Path) -> None:
    schema = tmp_path / "ShadowBackfillRunFacet.json"
    schema.write_text(
        json.dumps(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$id": "https://example.com/ShadowBackfillRunFacet.json",
                "$defs": {
                    "ShadowBackfillRunFacet": {
                        "allOf": [
                            {"$ref": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet"},
                            {"type": "object", "required": ["chunks"], "properties": {"chunks": {"type": "integer"}}},
                        ]
                    }
                },
            }
        )
    )
    facet: dict[str, Any] = {
        "_producer": PRODUCER,
        "_schemaURL": "https://example.com/ShadowBackfillRunFacet.json#/$defs/ShadowBackfillRunFacet",
        "chunks": "three",
    }
    event = run_event()
    event["run"]["facets"] = {"shadowBackfill": facet}
    validate_event(event)  # no schema for it: skipped
    with pytest.raises(AssertionError, match=r"run\.facets\.shadowBackfill\.chunks: 'three' is not of type"):
        validate_event(event, custom={"shadowBackfill": schema})
    facet["chunks"] = 3
    validate_event(event, custom={"shadowBackfill": schema})


def post(url: str, payload: object, timeout: float = 10) -> tuple[int, bytes]:
    data = json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


def test_receiver_ok_answers_200_and_records_the_body() -> None:
    with receiver() as hook:
        assert hook.url.startswith("http://127.0.0.1:") and hook.url.endswith("/hook")
        assert post(hook.url, {"alert": "drift"}) == (200, b"{}")
        (got,) = hook.wait_for(1)
    assert got.path == "/hook" and got.json() == {"alert": "drift"}
    assert got.headers["Content-Type"] == "application/json" == got.headers.get("content-type")
    assert hook.requests == [got]


def test_receiver_error_answers_500() -> None:
    with receiver("error") as hook:
        with pytest.raises(urllib.error.HTTPError) as caught:
            post(hook.url, {"alert": "drift"})
        assert caught.value.code == 500
        assert [r.json() for r in hook.wait_for(1)] == [{"alert": "drift"}]


def test_receiver_hang_times_out_the_sender_but_records_the_request() -> None:
    with receiver("hang") as hook:
        with pytest.raises((TimeoutError, urllib.error.URLError)) as caught:
            post(hook.url, {"alert": "drift"}, timeout=1)
        reason = getattr(caught.value, "reason", caught.value)
        assert isinstance(reason, TimeoutError), caught.value
        assert [r.json() for r in hook.wait_for(1)] == [{"alert": "drift"}]
    # leaving the block returned: the hanging handler was released at exit (else the test hangs)


def test_wait_for_names_how_many_arrived() -> None:
    with receiver() as hook, pytest.raises(AssertionError, match=r"expected 1 request\(s\) within 0.1s, 0 arrived"):
        hook.wait_for(1, timeout=0.1)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="slow"), receiver("slow"):
        pass
