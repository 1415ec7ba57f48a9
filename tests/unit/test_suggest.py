"""`suggest` without Spark: bounds for the change contract from the observed changes of the
partitions that pass everything else, and the partitions it left out, named."""

from __future__ import annotations

import yaml

from shadow_backfill.config import ValidationSpec
from shadow_backfill.document import ColumnChangeDoc, MetricsDoc
from shadow_backfill.documents.suggest import SuggestionDoc
from shadow_backfill.validate.consistency import judge_range
from shadow_backfill.validate.judge import PartitionVerdict, grade
from shadow_backfill.validate.suggest import suggest
from shadow_backfill.vocabulary import Check, CheckStatus


def _day(i: int) -> str:
    return f"2024-01-{i + 1:02d}"


def _verdict(i: int, pct: float, cat_changed: int = 0, checks: list[Check] | None = None) -> PartitionVerdict:
    changes = {
        "amount": ColumnChangeDoc(
            mean_live=50.0, mean_shadow=50.0 * (1 + pct / 100), mean_change_pct=abs(pct), changed=5, changed_share=1.0
        ),
        "cat": ColumnChangeDoc(changed=cat_changed, changed_share=cat_changed / 5),
    }
    return PartitionVerdict(_day(i), CheckStatus.PASS, checks or [], MetricsDoc(column_changes=changes))


def _range() -> list[PartitionVerdict]:
    verdicts = [_verdict(i, 40.0 if i in (4, 17) else 4.0 + (i % 3) * 0.1) for i in range(24)]
    rows = Check("row_count_change", None, CheckStatus.FAIL, 0.5, "fail > 0.05", "rows")
    verdicts[9] = _verdict(9, 4.0, checks=[rows])
    return verdicts


SPEC = ValidationSpec.model_validate({"expected_changes": {"amount": "consistent"}})


def test_bounds_from_the_clean_partitions_and_what_was_left_out() -> None:
    doc = suggest(_range(), SPEC, "db.events_v2")
    (amount,) = doc.bounds
    assert (amount.column, amount.metric, amount.consistent) == ("amount", "mean_change_pct", True)
    assert amount.typical == 4.1 and amount.partitions == 21
    assert 4.2 <= amount.warn <= amount.fail < 40.0
    left = {(x.partition, x.column) for x in doc.left_out}
    assert left == {(_day(9), None), (_day(4), "amount"), (_day(17), "amount")}
    assert "it fails or warns on row_count_change" in next(x.why for x in doc.left_out if x.column is None)
    assert doc.abstained == []
    SuggestionDoc.model_validate_json(doc.model_dump_json())  # the published form reads back


def test_pasted_bounds_give_the_verdicts_consistent_gave() -> None:
    verdicts = _range()
    doc = suggest(verdicts, SPEC, "db.events_v2")
    pasted = yaml.safe_load(doc.yaml)["validation"]["expected_changes"]
    assert pasted == {
        "amount": {"mean_change_pct": {"warn": doc.bounds[0].warn, "fail": doc.bounds[0].fail}, "consistent": {}}
    }
    bounds = ValidationSpec.model_validate({"expected_changes": pasted}).expected_changes["amount"].mean_change_pct
    assert bounds is not None
    judged = [v for v in verdicts if v.partition != _day(9)]
    by_bounds = {v.partition: grade(v.metrics.column_changes["amount"].mean_change_pct, bounds) for v in judged}  # type: ignore[arg-type]
    judge_range(judged, SPEC)
    assert by_bounds == {v.partition: v.verdict for v in judged}
    assert "# left out: 2024-01-05: its mean_change_pct 40 is unlike the range's" in doc.yaml


def test_an_undeclared_column_that_changed_gets_bounds_and_too_few_abstain() -> None:
    verdicts = [_verdict(i, 4.0, cat_changed=1) for i in range(5)]
    doc = suggest(verdicts, SPEC, "db.events_v2")
    assert [a.column for a in doc.abstained] == ["amount", "cat"]
    assert "5 partitions that pass everything else have its mean_change_pct measured" in doc.abstained[0].why
    doc = suggest([_verdict(i, 4.0, cat_changed=1) for i in range(10)], SPEC, "db.events_v2")
    assert [(b.column, b.metric) for b in doc.bounds] == [("amount", "mean_change_pct"), ("cat", "changed_share")]


def test_a_partition_text_cannot_break_out_of_its_comment() -> None:
    verdicts = _range()
    verdicts[9].partition = "x\nvalidation: {}"
    doc = suggest(verdicts, SPEC, "db.events_v2")
    assert "\nvalidation: {}" not in doc.yaml.split("validation:\n")[0]
    assert yaml.safe_load(doc.yaml)["validation"]["expected_changes"]["amount"]
