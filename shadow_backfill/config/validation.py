"""The `validation:` section: the gate's thresholds, the change contract and the policies, each
bound in the units its docstring names."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, PositiveInt, ValidationInfo, field_validator, model_validator

from shadow_backfill.config.yaml_file import MAX_CONFIG_BYTES, read_text_file
from shadow_backfill.errors import ConfigError
from shadow_backfill.sql_guard import downstream_refusal, table_name
from shadow_backfill.strict import Strict
from shadow_backfill.widening import is_type_name, normalize


def require_ordered(low: float | None, high: float | None, message: str) -> None:
    """Refuse `low` above `high` where both are given (a bound left out bounds nothing): the one
    rule for every pair of bounds a file sets, a threshold's, a p-value's and a ratio's."""
    if low is not None and high is not None and low > high:
        raise ValueError(message)


class Threshold(Strict):
    """A metric passes below `warn`, warns from `warn`, fails from `fail` (None: never)."""

    warn: float | None = None
    """From this value on the metric warns (None: never)."""
    fail: float | None = None
    """From this value on the metric fails (None: never)."""

    @model_validator(mode="after")
    def _ordered(self) -> Threshold:
        require_ordered(self.warn, self.fail, f"warn ({self.warn}) must not exceed fail ({self.fail})")
        return self


def _t(warn: float | None, fail: float | None) -> Any:
    return Field(default_factory=lambda: Threshold(warn=warn, fail=fail))


class PValue(Strict):
    """A significance level: a test warns below `warn` and fails below `fail` (None: never)."""

    warn: float | None = Field(default=None, ge=0, le=1)
    """Below this p-value the test warns (None: never)."""
    fail: float | None = Field(default=None, ge=0, le=1)
    """Below this p-value the test fails (None: never)."""

    @model_validator(mode="after")
    def _ordered(self) -> PValue:
        require_ordered(
            self.fail, self.warn, f"fail ({self.fail}) must not exceed warn ({self.warn}): a p-value fails below it"
        )
        return self


class Tolerance(Strict):
    """When two numbers count as equal: |shadow - live| <= abs + rel * |live| (as datacompy)."""

    # The one place the rule is written: the measurers build Spark columns with it, the decile
    # bins' edges and the downstream judge compute with it. Frozen: a value, shared freely.
    model_config = ConfigDict(frozen=True)

    abs: float = Field(default=1e-12, ge=0)
    """The absolute part of the tolerance."""
    rel: float = Field(default=1e-9, ge=0)
    """The part relative to |live|."""

    def close(self, shadow: Any, live: Any, magnitude: Callable[[Any], Any] = builtins.abs) -> Any:
        """Whether shadow equals live within the tolerance: numbers, or Spark columns with
        `magnitude=F.abs` (a Column then, the rule evaluated by Spark)."""
        return magnitude(shadow - live) <= self.abs + self.rel * magnitude(live)

    def upper(self, live: float) -> float:
        """The largest value still close to `live` (a bin edge: a value within tolerance of it is
        on it); an infinite one stays itself, as -inf + rel * inf would be NaN."""
        return live if math.isinf(live) else live + self.abs + self.rel * builtins.abs(live)


EXACT = Tolerance(abs=0.0, rel=0.0)  # the measurers' default: equal means equal


Policy = Literal["pass", "warn", "fail"]


class ColumnBounds(Strict):
    """Bounds for one column's metrics; a bound left out is not judged (or, under `columns`,
    keeps the table-wide one)."""

    # Change, in the column's own units (docs/concepts.md, "The change contract").
    mean_change: Threshold | None = None
    """|mean(shadow) - mean(live)|, nulls ignored."""
    mean_change_pct: Threshold | None = None
    """`mean_change` as a percentage of |mean(live)|."""
    sum_change_pct: Threshold | None = None
    """|sum(shadow) - sum(live)| as a percentage of |sum(live)|."""
    null_rate_change: Threshold | None = None
    """|shadow null rate - live null rate|."""
    changed_share: Threshold | None = None
    """Share of matched keys whose value differs beyond the tolerance."""
    max_abs_diff: Threshold | None = None
    """Largest |shadow - live| over matched keys."""
    mean_abs_diff: Threshold | None = None
    """Mean |shadow - live| over matched keys."""
    # Distribution tests (need validation.min_rows_for_distribution rows per side).
    psi: Threshold | None = None
    """Population stability index on live decile bins (a distribution test)."""
    ks: Threshold | None = None
    """KS statistic on the live decile grid (a distribution test)."""
    mean_shift: Threshold | None = None
    """|mean shift| in live standard deviations (a distribution test)."""
    std_change: Threshold | None = None
    """|std shift| / live std (a distribution test)."""
    js_distance: Threshold | None = None
    """Jensen-Shannon distance of category frequencies (a distribution test)."""
    drift_pvalue: PValue | None = None
    """p-value of the KS test (numbers) or chi-square test (categories) between the two sides."""
    new_categories: Policy | None = None
    """Categories that appear in shadow only: pass, warn or fail."""
    vanished_categories: Policy | None = None
    """Categories that disappear from shadow: pass, warn or fail."""


class ColumnThresholds(ColumnBounds):
    """Per-column overrides; a metric left out keeps the table-wide threshold."""

    ignore: bool = False
    """Leave this column out of every comparison."""
    changed_fraction: Threshold | None = None
    """Kept for old configs: the same as `changed_share`."""


class Consistency(Strict):
    """A declared change judged by how alike it is across the validated range: each partition's
    change against the range's typical change (median), in robust distances (the range's spread
    as 1.4826 x its median absolute deviation; docs/concepts.md, "Consistent changes")."""

    warn: float | None = Field(default=3.5, gt=0)
    """From this many robust distances from the typical change a partition warns (None: never)."""
    fail: float | None = Field(default=5.0, gt=0)
    """From this many robust distances a partition fails (None: never)."""
    min_partitions: int = Field(default=8, ge=3)
    """Below this many partitions with the change measured, the rule abstains (a skipped check
    saying so): a median and a spread of fewer say nothing about what is typical."""

    @model_validator(mode="before")
    @classmethod
    def _flag(cls, data: Any) -> Any:
        """`consistent: true` is the rule with its defaults."""
        return {} if data is True else data

    @model_validator(mode="after")
    def _ordered(self) -> Consistency:
        default = "" if "warn" in self.model_fields_set else ", the default"
        require_ordered(self.warn, self.fail, f"warn ({self.warn}{default}) must not exceed fail ({self.fail})")
        return self


class ExpectedChange(ColumnBounds):
    """A column the logic change is meant to alter: judged only by the bounds given here."""

    null_rate: Threshold | None = None
    """Added columns only (`expected_schema_changes.added`): the share of null rows in shadow,
    which has no live side to compare with."""
    consistent: Consistency | None = None
    """Judge the change by its consistency across the validated range instead of (or beside)
    written bounds: a partition whose change is unlike the others' warns or fails. Written
    `<column>: consistent` alone, or `consistent: {warn: 3.5, fail: 5, min_partitions: 8}`."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """`expected_changes.<column>: consistent` is `{consistent: {}}`; any other word is a typo."""
        if isinstance(data, str):
            if data != "consistent":
                raise ValueError(f"{data!r} is not an expected change: give its bounds, or the word `consistent`")
            return {"consistent": {}}
        return data


class DownstreamQuery(Strict):
    """A consumer's own SQL, run per partition on shadow and live (a downstream read test)."""

    sql: Path
    """The query file (relative to the config): `{table}` stands for the table under test and
    `:partition` is bound to the partition's value (never pasted into the text)."""
    compare: bool = False
    """Also compare the query's result between shadow and live (an aggregate: at most 1000
    rows), by the tolerance and the change contract that judge columns."""
    keys: list[str] | None = None
    """With `compare`: the result's columns that identify a row (an aggregate's group keys, e.g.
    an integer `hour`); default: its non-numeric columns."""
    reads: list[str] = Field(default_factory=list)
    """Tables the query may read besides `{table}` (e.g. a dimension it joins): the query must be
    one read-only `SELECT` reading only `{table}` and these, checked when the config is loaded."""

    @model_validator(mode="before")
    @classmethod
    def _from_path(cls, data: Any) -> Any:
        return {"sql": data} if isinstance(data, (str, Path)) else data

    @field_validator("reads")
    @classmethod
    def _table_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if table_name(name) is None:
                raise ValueError(f"{name!r} is not a table name (e.g. catalog.db.table)")
        return v

    @model_validator(mode="after")
    def _read_only(self, info: ValidationInfo) -> DownstreamQuery:
        """The query file, read and parsed when the config is loaded (`parse_config` passes its
        folder): a query that could write is refused before Spark starts."""
        base = (info.context or {}).get("base_dir")
        if base is not None:
            path = self.sql if self.sql.is_absolute() else base / self.sql
            try:
                text = read_text_file(path, "downstream query", MAX_CONFIG_BYTES)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
            if problem := downstream_refusal(text, self.reads):
                raise ValueError(f"downstream query {str(self.sql)!r} {problem}")
        return self


class SchemaChanges(Strict):
    """The schema changes a logic change is meant to make (mirrors the report's `schema` block):
    a declared change is not a `schema_change` warning, and promotion applies it to live."""

    added: list[str] = Field(default_factory=list)
    """New columns the logic change introduces: added to live (nullable) when promoted."""
    removed: list[str] = Field(default_factory=list)
    """Columns it no longer produces: live keeps them, and the promoted partitions hold null."""
    retyped: dict[str, str] = Field(default_factory=dict)
    """Widened types, column -> new type (int -> bigint, float -> double, decimal precision up);
    a narrowing or another change of type is refused before any work."""

    @field_validator("retyped")
    @classmethod
    def _types(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = {c: t for c, t in v.items() if not is_type_name(t)}
        if unknown:
            raise ValueError(f"not a column type Spark names: {unknown} (e.g. bigint, double, decimal(12,2))")
        return {c: normalize(t) for c, t in v.items()}

    @model_validator(mode="after")
    def _once(self) -> SchemaChanges:
        seen: dict[str, str] = {}
        for kind, columns in (("added", self.added), ("removed", self.removed), ("retyped", list(self.retyped))):
            for c in columns:
                if c in seen:
                    raise ValueError(f"column {c!r} is both {seen[c]} and {kind}")
                seen[c] = kind
        return self


class ValidationSpec(Strict):
    """Drift thresholds of shadow against the same live partition, and the gate's policies."""

    row_count_change: Threshold = _t(0.02, 0.05)
    """|shadow rows - live rows| / live rows."""
    null_rate_change: Threshold = _t(0.01, 0.05)
    """|shadow null rate - live null rate|, per column."""
    psi: Threshold = _t(0.1, 0.25)
    """Population stability index on live decile bins, per numeric column."""
    ks: Threshold = _t(0.1, 0.2)
    """KS statistic on the live decile grid, per numeric column."""
    mean_shift: Threshold = _t(0.1, 0.25)
    """|mean shift| in live standard deviations, per numeric column."""
    std_change: Threshold = _t(0.1, 0.25)
    """|std shift| / live std, per numeric column."""
    js_distance: Threshold = _t(0.05, 0.1)
    """Jensen-Shannon distance of category frequencies, per category column."""
    drift_pvalue: PValue = Field(default_factory=lambda: PValue(warn=0.01, fail=0.001))
    """p-value of the KS test (numbers) or chi-square test (categories) between the two sides;
    judged below `min_rows_for_distance` rows per side."""
    # Change metrics: reported in column_changes, judged only where a bound is given.
    mean_change: Threshold = _t(None, None)
    """|mean(shadow) - mean(live)| (a change metric: judged only where a bound is given)."""
    mean_change_pct: Threshold = _t(None, None)
    """`mean_change` as a percentage of |mean(live)| (a change metric)."""
    sum_change_pct: Threshold = _t(None, None)
    """|sum(shadow) - sum(live)| as a percentage of |sum(live)| (a change metric)."""
    changed_share: Threshold = _t(None, None)
    """Share of matched keys whose value differs beyond the tolerance (a change metric)."""
    max_abs_diff: Threshold = _t(None, None)
    """Largest |shadow - live| over matched keys (a change metric)."""
    mean_abs_diff: Threshold = _t(None, None)
    """Mean |shadow - live| over matched keys (a change metric)."""
    keys_added: Threshold = _t(0.01, 0.05)
    """Keys only in shadow, as a fraction of live rows."""
    keys_removed: Threshold = _t(0.01, 0.05)
    """Keys only in live, as a fraction of live rows."""
    changed_fraction: Threshold = _t(None, None)
    """Fraction of matched rows whose value changed."""
    duplicate_keys: Threshold = _t(None, 0)
    """Duplicate key rows in shadow (a count)."""
    new_categories: Policy = "warn"
    """Categories that appear in shadow only: pass, warn or fail."""
    vanished_categories: Policy = "fail"
    """Categories that disappear from shadow: pass, warn or fail."""
    schema_change: Policy = "warn"
    """Columns added, removed or retyped in shadow: pass, warn or fail."""
    missing_live: Literal["suites_only", "needs_approval", "fail"] = "needs_approval"
    """A shadow partition with no live counterpart: judged on suites only, held for approval
    (verdict warn, never promoted automatically), or failed."""
    # Expectation failures: fail unless the expectation's meta says {"severity": "warning"}.
    max_categories: PositiveInt = 50
    """A string or boolean column with more distinct values in a partition is reported as
    high-cardinality, not compared as categories."""
    min_rows_for_distribution: PositiveInt = 100
    """Below this many non-null values on either side no distribution test is judged."""
    min_rows_for_distance: PositiveInt = 1000
    """Below this many non-null values per side the p-value test judges and the raw distances
    (PSI, KS, JS, mean shift, std change) are reported only; from it on, the distances judge and
    the p-value is reported only (it flags any tiny shift there)."""
    tolerance: Tolerance = Field(default_factory=Tolerance)
    """When two numbers count as equal."""
    sample_rows: int = Field(default=10, ge=0, le=1000)
    """Changed values kept per partition, as evidence."""
    expected_changes: dict[str, ExpectedChange] = Field(default_factory=dict)
    """The change contract: the columns this logic change is meant to alter, each judged only by
    the bounds given for it (needs `keys`). An added column may bound its `null_rate` here."""
    expected_schema_changes: SchemaChanges = Field(default_factory=SchemaChanges)
    """Columns the logic change adds, removes or widens (docs: guides, schema changes)."""
    unexpected_changes: Literal["fail", "warn", "ignore"] = "fail"
    """Under a change contract: what a compared column outside `expected_changes` that differs on
    a matched key does to the partition."""
    columns: dict[str, ColumnThresholds] = Field(default_factory=dict)
    """Per-column overrides of the thresholds above."""
    downstream_queries: list[DownstreamQuery] = Field(default_factory=list)
    """Consumers' queries, each a file path or `{sql: path, compare: true}`: on every partition
    the query must run on the shadow, return rows and give the columns it gives on live; they
    are also a canary promotion's checks on live."""

    @model_validator(mode="after")
    def _contract(self) -> ValidationSpec:
        added = set(self.expected_schema_changes.added)
        for c, bounds in self.expected_changes.items():
            if self.ignored(c):
                raise ValueError(f"column {c!r} is in expected_changes and ignored under columns: pick one")
            given = sorted(bounds.model_fields_set - {"null_rate", "consistent"})
            if c in added and given:
                raise ValueError(
                    f"expected_changes.{c}: an added column has no live values to compare with; "
                    f"only null_rate and consistent apply (not {given})"
                )
            if c not in added and bounds.null_rate is not None:
                raise ValueError(f"expected_changes.{c}.null_rate: only for columns in expected_schema_changes.added")
        return self

    @property
    def contract(self) -> dict[str, ExpectedChange]:
        """The expected changes of columns both tables have: the change contract proper (an
        added column's entry only bounds its null rate)."""
        added = set(self.expected_schema_changes.added)
        return {c: e for c, e in self.expected_changes.items() if c not in added}

    def column_override(self, metric: str, column: str | None) -> Any:
        """The bound set for this column (in expected_changes or columns), or None."""
        if not column:
            return None
        if column in self.expected_changes:
            return getattr(self.expected_changes[column], metric, None)
        return getattr(self.columns.get(column), metric, None)

    def threshold(self, metric: str, column: str | None = None) -> Any:
        """The bound that judges `metric` on `column`: for an expected-change column only its
        own bounds (None: not judged), otherwise the column's override or the table-wide one."""
        override = self.column_override(metric, column)
        if column in self.expected_changes:
            return override
        return override if override is not None else getattr(self, metric)

    def policy(self, metric: str, column: str | None = None) -> str:
        override = getattr(self.columns.get(column or ""), metric, None) if column else None
        return override if override is not None else getattr(self, metric)  # type: ignore[no-any-return]

    def ignored(self, column: str) -> bool:
        spec = self.columns.get(column)
        return bool(spec and spec.ignore)
