"""Declared schema changes, without Spark: the config keys `validation.expected_schema_changes`
and `expected_changes.<added column>.null_rate`, which retypes widen, and how the judge grades
a partition whose logic change adds, removes or retypes columns."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from shadow_backfill.config import ValidationSpec
from shadow_backfill.validate.judge import Judge
from shadow_backfill.validate.measurements import ColumnMeasurement, ColumnPlan, PartitionProfile, SideStats
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.widening import normalize, widening_problem

S = CheckStatus


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("int", "bigint"),
        ("tinyint", "int"),
        ("INTEGER", "long"),
        ("float", "double"),
        ("decimal(10,2)", "decimal(12, 2)"),
    ],
)
def test_widenings(old: str, new: str) -> None:
    assert widening_problem(old, new) is None


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("bigint", "int", "int is narrower than bigint"),
        ("double", "float", "not a widening"),
        ("int", "string", "not a widening"),
        ("int", "double", "not a widening"),
        ("decimal(12,2)", "decimal(10,2)", "less precision"),
        ("decimal(10,2)", "decimal(12,4)", "changes the scale"),
    ],
)
def test_narrowings_and_other_retypes_are_named(old: str, new: str, why: str) -> None:
    problem = widening_problem(old, new)
    assert problem is not None and why in problem


def test_type_names_are_read_as_spark_spells_them() -> None:
    assert normalize(" Long ") == "bigint"
    assert normalize("DECIMAL(12, 2)") == "decimal(12,2)"
    spec = ValidationSpec.model_validate({"expected_schema_changes": {"retyped": {"sessions": "LONG"}}})
    assert spec.expected_schema_changes.retyped == {"sessions": "bigint"}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"expected_schema_changes": {"retyped": {"x": "bigger"}}}, "not a column type Spark names"),
        ({"expected_schema_changes": {"added": ["x"], "removed": ["x"]}}, "column 'x' is both added and removed"),
        ({"expected_schema_changes": {"typo": ["x"]}}, "typo"),
        (
            {"expected_changes": {"x": {"null_rate": {"fail": 0.1}}}},
            "only for columns in expected_schema_changes.added",
        ),
        (
            {"expected_schema_changes": {"added": ["x"]}, "expected_changes": {"x": {"mean_change": {"fail": 1}}}},
            "only null_rate and consistent apply (not ['mean_change'])",
        ),
    ],
)
def test_config_mistakes_are_refused(data: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=None) as err:
        ValidationSpec.model_validate(data)
    assert words in str(err.value)


def test_an_added_columns_bound_is_not_a_change_contract() -> None:
    spec = ValidationSpec.model_validate(
        {
            "expected_schema_changes": {"added": ["plane_year"]},
            "expected_changes": {"plane_year": {"null_rate": {"fail": 0.5}}},
        }
    )
    assert spec.contract == {}


def _plan(
    added: list[str], removed: list[str], retyped: list[tuple[str, str, str]], types: dict[str, str]
) -> ColumnPlan:
    return ColumnPlan(
        numeric=[], categorical=[], compared=[], added=added, removed=removed, retyped=retyped, shadow_types=types
    )


def _judge(spec: dict[str, Any], plan: ColumnPlan, added_null_rate: float = 0.0) -> dict[tuple[str, str | None], Any]:
    prof = PartitionProfile("p", live_rows=100, shadow_rows=100)
    for c in plan.added:
        prof.columns[c] = ColumnMeasurement(shadow=SideStats(int(100 * (1 - added_null_rate)), added_null_rate))
    verdict = Judge(ValidationSpec.model_validate(spec), plan).judge(prof, [])
    return {(c.name, c.column): c for c in verdict.checks}


def test_an_undeclared_change_warns_and_a_declared_one_does_not() -> None:
    plan = _plan(
        ["plane_year"], ["legacy"], [("sessions", "int", "bigint")], {"plane_year": "int", "sessions": "bigint"}
    )
    checks = _judge({}, plan)
    assert checks["schema_change", None].status is S.WARN
    assert checks["schema_change", None].observed == ["+plane_year", "-legacy", "sessions: int -> bigint"]
    declared = {"added": ["plane_year"], "removed": ["legacy"], "retyped": {"sessions": "bigint"}}
    checks = _judge({"expected_schema_changes": declared}, plan)
    assert checks["schema_change", None].status is S.PASS
    assert checks["expected_schema_change", None].status is S.PASS


def test_a_declared_retype_to_another_type_is_undeclared() -> None:
    plan = _plan([], [], [("sessions", "int", "double")], {"sessions": "double"})
    checks = _judge({"expected_schema_changes": {"retyped": {"sessions": "bigint"}}}, plan)
    assert checks["schema_change", None].observed == ["sessions: int -> double"]
    assert checks["expected_schema_change", None].observed == ["sessions: -> bigint"]


def test_a_declared_change_that_did_not_happen_warns_naming_it() -> None:
    plan = _plan([], [], [], {"legacy": "int", "sessions": "int"})
    declared = {"added": ["plane_year"], "removed": ["legacy"], "retyped": {"sessions": "bigint"}}
    checks = _judge({"expected_schema_changes": declared}, plan)
    check = checks["expected_schema_change", None]
    assert check.status is S.WARN
    assert check.observed == ["+plane_year", "-legacy", "sessions: -> bigint"]
    assert "+plane_year" in check.message


@pytest.mark.parametrize(("null_rate", "status"), [(0.1, S.PASS), (0.3, S.WARN), (0.6, S.FAIL)])
def test_an_added_column_is_judged_by_its_null_rate(null_rate: float, status: CheckStatus) -> None:
    spec = {
        "expected_schema_changes": {"added": ["plane_year"]},
        "expected_changes": {"plane_year": {"null_rate": {"warn": 0.2, "fail": 0.5}}},
    }
    checks = _judge(spec, _plan(["plane_year"], [], [], {"plane_year": "int"}), added_null_rate=null_rate)
    check = checks["null_rate", "plane_year"]
    assert check.status is status and check.observed == null_rate
    assert "null rate in shadow (added column)" in check.message


def test_an_added_columns_bound_holds_where_live_has_no_partition() -> None:
    spec = {
        "expected_schema_changes": {"added": ["plane_year"]},
        "expected_changes": {"plane_year": {"null_rate": {"fail": 0.5}}},
    }
    prof = PartitionProfile("p", live_rows=0, shadow_rows=100)  # no live partition
    prof.columns["plane_year"] = ColumnMeasurement(shadow=SideStats(10, 0.9))
    verdict = Judge(ValidationSpec.model_validate(spec), _plan(["plane_year"], [], [], {"plane_year": "int"})).judge(
        prof, []
    )
    check = next(c for c in verdict.checks if c.name == "null_rate")
    assert check.status is S.FAIL and verdict.verdict is S.FAIL
