"""Stored verdicts come back as typed checks, and the stored JSON keeps its format (old stores
still read). No Spark: the state store and the check type only."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from shadow_backfill.document import MetricsDoc
from shadow_backfill.state import StateStore, VerdictRecord
from shadow_backfill.validate.judge import PartitionVerdict
from shadow_backfill.vocabulary import Check, CheckStatus, worst

SHADOW = "lake.events__shadow_v2"
FIELDS = ["name", "column", "status", "observed", "threshold", "message"]


def test_stored_verdict_round_trips_to_typed_checks(tmp_path: Path) -> None:
    checks = [
        Check("psi", "amount", CheckStatus.WARN, 0.12, "warn > 0.1, fail > 0.25", "PSI 0.12"),
        Check("row_count_change", None, CheckStatus.PASS, 0.0, "warn > 0.02", "row count"),
        Check("keys_removed", None, CheckStatus.FAIL, 0.5, "fail > 0.05", "share of live keys missing"),
    ]
    verdict = PartitionVerdict(
        "2024-01-01", CheckStatus.FAIL, checks, MetricsDoc.model_validate({"rows": {"live": 2, "shadow": 1}})
    )
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = StateStore(url)
    store.save_verdicts(SHADOW, [VerdictRecord(verdict.partition, verdict.verdict, verdict.checks, verdict.metrics)])
    record = store.verdicts(SHADOW)["2024-01-01"]
    store.close()
    assert record.checks == checks
    assert record.verdict is CheckStatus.FAIL and all(type(c.status) is CheckStatus for c in record.checks)
    assert [c.name for c in record.reasons] == ["keys_removed", "psi"] == [c.name for c in verdict.reasons]

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        raw = conn.execute(sa.text("select checks from verdicts")).scalar_one()
    engine.dispose()
    stored = json.loads(raw)
    assert [list(c) for c in stored] == [FIELDS] * 3, "the stored form is the plain check dict"
    assert [c["status"] for c in stored] == ["warn", "pass", "fail"]


def test_old_dict_rows_still_read(tmp_path: Path) -> None:
    """A check stored before checks had a message still reads (written as an old store holds it)."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = StateStore(url)
    store.save_verdicts(SHADOW, [VerdictRecord("p", CheckStatus.WARN, [], MetricsDoc())])
    old = {"name": "live_missing", "column": None, "status": "warn", "observed": 0, "threshold": "policy x"}
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("update verdicts set checks = :c"), {"c": json.dumps([old])})
    engine.dispose()
    (check,) = store.verdicts(SHADOW)["p"].reasons
    store.close()
    assert check == Check("live_missing", None, CheckStatus.WARN, 0, "policy x", "")


def test_a_verdict_is_its_worst_judged_check() -> None:
    S = CheckStatus
    assert worst([]) is S.PASS
    assert worst([S.SKIPPED, S.SKIPPED]) is S.PASS, "checks not judged neither pass nor fail a partition"
    assert worst(["pass", "warn", "skipped"]) is S.WARN, "the stored words are read as statuses"
    assert worst([S.WARN, S.FAIL, S.PASS]) is S.FAIL
    assert sorted(S, key=lambda s: s.rank) == [S.SKIPPED, S.PASS, S.WARN, S.FAIL]
    assert json.dumps({S.FAIL: [S.WARN]}) == '{"fail": ["warn"]}', "report.json keeps the plain words"
