"""report.json as types: the document users' scripts read, and its published JSON Schema.

The judge publishes the measurements of `validate/measurements.py` and `validate/changes.py` in
this form (`MetricsDoc`, one per partition); the state store keeps it with each verdict and the
reports render it, reading attributes, never string keys. `report_schema()` turns the models
into the JSON Schema published at docs/report.schema.json. Fields of earlier versions that a
model no longer names are kept as they were stored (`extra="allow"`): a report re-rendered from
an old store loses nothing. It sits at the bottom of the package (it imports only the
vocabulary), so the judge, the state store and the reports all use it. `SCHEMA_VERSION`
changes only when a field does: `SCHEMA_DIGESTS` records the fields each version published,
and a test fails when the models change under a published version.

Each fact appears once (schema_version 4): a partition's measurements only under `metrics`,
where the judge publishes them and the store keeps them, and its failing checks only in
`checks` (versions up to 3 repeated `rows`, `column_changes` and `samples` at the partition's
top level and the warn/fail checks as `reasons`; such a document still reads, those fields
kept as given).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shadow_backfill.vocabulary import CheckStatus

SCHEMA_VERSION = 7
# The fields each schema_version published (`fields_digest`): a test fails when a field is added,
# removed or made required under a version already published (tests/unit/test_report_schema.py).
SCHEMA_DIGESTS = {
    2: "3ec8c85a6cf7219e26ce0dfd4f890433fea9e96870ad981db2e9d2c7a462903f",
    3: "f28caa7fe88262ec9336ccbfe14d4f7775539dbd228e08876cb7ef4745d06221",  # + shadow_min, shadow_max
    # - the partition's rows, column_changes, samples (read them under metrics) and reasons
    4: "19b85547accf5afb982c51fc006fed87dda40d1b71219cbe6b05390ad349c079",
    5: "a9c550ea05e4172d04b08a839ca731109f85cdafc018141154f7826f2233d567",  # + a partition's approval
    6: "399bb035a542e2193d170fbecab920ea3cf16b502f80d42431c3cf2c4872be60",  # + a partition's history
    7: "52d0beb913ccf8a7a23ca4009fb037bae688b5c79188c083b6829fc4845a70c7",  # + the late-arrival view
}

# Non-finite floats are published as text ("inf", "-inf", "nan"): JSON has no such numbers.
Number = float | Literal["inf", "-inf", "nan"] | None


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    def as_json(self) -> dict[str, Any]:
        """The published form: the fields as they were given (an absent one stays absent)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class CheckDoc(_Doc):
    """One check: observed value against threshold (`vocabulary.Check`)."""

    name: str
    column: str | None
    status: CheckStatus
    observed: Any = Field(description="the value judged: a number, a count, a list of values, or null")
    threshold: str
    message: str


class RowsDoc(_Doc):
    live: int
    shadow: int


class ColumnDiffDoc(_Doc):
    """`measurements.ColumnDiff`: changed keys and, for numbers, the differences."""

    changed: int
    max_abs_diff: Number = None
    mean_abs_diff: Number = None


class KeyDiffDoc(_Doc):
    """`measurements.KeyDiff`."""

    added: int
    removed: int
    matched: int
    changed: int
    duplicates: int
    changed_by_column: dict[str, int] = Field(default_factory=dict)
    by_column: dict[str, ColumnDiffDoc] = Field(default_factory=dict)


class NoKeysDoc(_Doc):
    """No key columns configured: no key diff (published as `{}`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class HistogramDoc(_Doc):
    """`measurements.Histogram`."""

    edges: list[Number]
    live: list[float]
    shadow: list[float]
    edges_every: int = 1  # absent in reports of versions that took every live row


class CategoriesDoc(_Doc):
    live: dict[str, int]
    shadow: dict[str, int]


class ColumnDoc(_Doc):
    """`measurements.ColumnMeasurement` and the judge's `distributions.Distribution`: a field is
    absent where it was not measured (a side without the column or rows, a non-numeric
    column's moments, a numeric column's categories)."""

    live_null_rate: float | None = None
    live_count: int | None = None
    shadow_null_rate: float | None = None
    shadow_count: int | None = None
    live_mean: Number = None
    live_std: Number = None
    live_sum: Number = None
    shadow_mean: Number = None
    shadow_std: Number = None
    shadow_sum: Number = None
    shadow_min: Number = None
    shadow_max: Number = None
    hist: HistogramDoc | None = None
    categories: CategoriesDoc | None = None
    new: list[str] | None = None
    vanished: list[str] | None = None
    psi: Number = None
    ks: Number = None
    js_distance: Number = None
    drift_pvalue: Number = None


class ColumnChangeDoc(_Doc):
    """`changes.ColumnChange` (every field is published; older versions published fewer)."""

    matched: int | None = None
    changed: int | None = None
    changed_share: Number = None
    mean_live: Number = None
    mean_shadow: Number = None
    mean_change: Number = None
    mean_change_pct: Number = None
    sum_change_pct: Number = None
    max_abs_diff: Number = None
    mean_abs_diff: Number = None
    null_rate_live: Number = None
    null_rate_shadow: Number = None
    null_rate_change: Number = None


class SampleDoc(_Doc):
    """`measurements.Sample`."""

    keys: dict[str, Any]
    column: str
    live: Any
    shadow: Any


class SchemaChangesDoc(_Doc):
    added: list[str]
    removed: list[str]
    retyped: list[list[str]] = Field(description="[column, live type, shadow type]")


class MetricsDoc(_Doc):
    """Everything measured on one partition, as the judge published it (empty for a partition
    that was never measured, e.g. not recomputed)."""

    rows: RowsDoc | None = None
    columns: dict[str, ColumnDoc] = Field(default_factory=dict)
    keys: KeyDiffDoc | NoKeysDoc | None = None
    column_changes: dict[str, ColumnChangeDoc] = Field(default_factory=dict)
    samples: list[SampleDoc] = Field(default_factory=list)
    schema_: SchemaChangesDoc | None = Field(default=None, alias="schema")

    @property
    def live_rows(self) -> int | None:
        return self.rows.live if self.rows is not None else None

    @property
    def shadow_rows(self) -> int | None:
        return self.rows.shadow if self.rows is not None else None


class ApprovalDoc(_Doc):
    """A person's approval that let a held (warn) partition into live (`approve`)."""

    by: str
    reason: str
    at: str | None
    promotion_id: str


class MeasuredPointDoc(_Doc):
    """One validation of a partition as the state store's history keeps it (`verdict_history`):
    how its numbers moved across re-runs."""

    validation_id: str
    validated_at: str | None = Field(json_schema_extra={"format": "date-time"})
    verdict: CheckStatus
    shadow_version: int | None
    live_version: int | None
    live_rows: int | None
    shadow_rows: int | None
    keys_added: int | None = None
    keys_removed: int | None = None
    keys_changed: int | None = None


class PartitionDoc(_Doc):
    """One partition: its verdict, the versions it was judged on, every check and what was
    measured. The checks that decided a verdict are those with status `fail` or `warn` (no
    separate list, so a script cannot read two lists that disagree)."""

    partition: str
    verdict: CheckStatus
    shadow_version: int | None
    partition_version: int | None
    live_version: int | None
    validation_id: str | None
    validated_at: str | None
    checks: list[CheckDoc]
    metrics: MetricsDoc
    approval: ApprovalDoc | None = None
    """Who approved this held partition into live, when and why (null: no approval in force)."""
    history: list[MeasuredPointDoc] | None = None
    """The partition's validations kept (`state.metric_history_days`), oldest first, at most the
    last 20 (`history --partition P --metrics` prints them all); absent where none is kept."""


class ArrivalPointDoc(_Doc):
    """A partition at one age: what its newest validation at that age measured against live
    (the keys live lacked are the rows that arrived since live was written)."""

    age: int = Field(description="periods from the partition's start to when the data was read")
    label: str = Field(description="the age as people write it: D+2, H+5, M+1")
    validation_id: str
    observed_at: str | None = Field(json_schema_extra={"format": "date-time"})
    live_rows: int | None
    shadow_rows: int | None
    added: int | None = Field(description="keys only in shadow (null: no keys configured)")
    removed: int | None = Field(description="keys only in live")
    changed: int | None = Field(description="matched keys with a value changed")


class ArrivalPartitionDoc(_Doc):
    """One partition validated at two ages or more, its points by age."""

    partition: str
    points: list[ArrivalPointDoc]


class ArrivalAgeDoc(_Doc):
    """One age over the partitions seen at it: how many rows were there, how many came late."""

    age: int
    label: str
    partitions: int = Field(description="partitions validated at this age")
    shadow_rows: int = Field(description="their rows at this age, summed")
    added: int | None
    removed: int | None
    changed: int | None
    present_share: float | None = Field(
        description="of the partitions also seen at the oldest age any reached (the horizon): their "
        "rows at this age over their rows there (1 at the horizon; null: none of this age's reached it)"
    )
    compared: int = Field(description="the partitions present_share is over")

    def cells(self) -> list[str]:
        """This age as the text, HTML and Markdown tables print it: label, counts (empty where
        not known), and the present share with the partitions it is over."""
        counts = [self.partitions, self.shadow_rows, self.added, self.removed, self.changed]
        share = "" if self.present_share is None else f"{self.present_share:.1%} of {self.compared}"
        return [self.label, *("" if c is None else str(c) for c in counts), share]


class LateArrivalDoc(_Doc):
    """The late-arrival view of a nightly window: each re-validated partition's rows against
    live at each age, and the ages summed over partitions, to choose a lag from."""

    unit: Literal["day", "hour", "month"]
    horizon: str = Field(description="the oldest age any partition was seen at (its label): what present_share is of")
    by_age: list[ArrivalAgeDoc]
    partitions: list[ArrivalPartitionDoc]


class ReportDoc(_Doc):
    """report.json."""

    # 3 added shadow_min and shadow_max, 4 removed the partition's copies of metrics and reasons,
    # 5 added a partition's approval, 6 its history, 7 the late-arrival view; a version 2 to 6
    # document still reads (as given)
    schema_version: Literal[2, 3, 4, 5, 6, 7]
    report_id: str
    generated_at: str
    live_table: str
    shadow_table: str
    format: str
    summary: dict[str, int]
    partitions: list[PartitionDoc]
    late_arrivals: LateArrivalDoc | None = None
    """Partitions validated at two ages or more (a nightly window), by age; null where none was
    (absent from a report of schema_version 6 or earlier)."""


def report_schema() -> dict[str, Any]:
    """The JSON Schema of report.json (docs/report.schema.json)."""
    schema = ReportDoc.model_json_schema(by_alias=True)
    schema["title"] = f"shadow-backfill report.json, schema_version {SCHEMA_VERSION}"
    return schema


def schema_text() -> str:
    """The published file's text (`python -c "from shadow_backfill.document import
    schema_text; print(schema_text(), end='')" > docs/report.schema.json`)."""
    return json.dumps(report_schema(), indent=2, sort_keys=True) + "\n"


def published_fields() -> dict[str, list[str]]:
    """Every model of the document with its fields (a `*` marks a required one)."""
    out: dict[str, list[str]] = {}
    todo: list[type[BaseModel]] = [ReportDoc]
    while todo:
        model = todo.pop()
        if model.__name__ in out:
            continue
        fields = model.model_fields
        out[model.__name__] = sorted(f"{f.alias or n}{'*' if f.is_required() else ''}" for n, f in fields.items())
        for f in fields.values():
            todo += [t for t in _models_in(f.annotation)]
    return out


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]


def fields_digest() -> str:
    """sha256 of `published_fields()`: what `SCHEMA_DIGESTS` records per version (a change of
    pydantic's rendering of the schema does not change it; a change of a field does)."""
    return hashlib.sha256(json.dumps(published_fields(), sort_keys=True).encode()).hexdigest()
