"""The backfill config: one YAML file, validated by pydantic before any Spark work starts.

Every mistake a user can make in the file is reported as one :class:`ConfigError` that names
the file and the field, so a typo never turns into a half-finished run.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from shadow_backfill.errors import ConfigError, keep_secret
from shadow_backfill.formats import FORMATS, spec
from shadow_backfill.sql_guard import downstream_refusal, table_name
from shadow_backfill.widening import is_type_name, normalize

_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A real config is a few KiB and five levels deep. The bounds keep a wrong or hostile file (a log
# given by mistake, a YAML bomb) a usage error instead of a memory or recursion failure.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONFIG_DEPTH = 32


class _Strict(BaseModel):
    # The string under each field is its documentation: pydantic keeps it as the field's
    # description, and the docs' config reference is generated from it.
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class PartitionSpec(_Strict):
    """How partitions are named, typed and enumerated."""

    column: str
    """The partition column the backfill works by (for a hidden Iceberg transform such as
    `days(event_ts)`: the source column, `event_ts`)."""
    granularity: Literal["daily", "hourly", "monthly"] = "daily"
    """One partition per day, hour or month. By default: daily, or the granularity of a hidden
    Iceberg transform (`days`/`hours`/`months` of a timestamp) read from the live table."""
    type: Literal["date", "timestamp", "string", "int"] | None = None
    """The type of the partition column. By default read from the live table (date, timestamp,
    string or int); write it only to override."""
    format: str | None = None
    """strftime pattern for string and int partition columns, e.g. `%Y%m%d`."""
    values: list[str] | None = None
    """An explicit list of partitions, used when no range is given on the command line."""

    @field_validator("column")
    @classmethod
    def _column_name(cls, v: str) -> str:
        if not _COLUMN.match(v):
            raise ValueError(f"{v!r} is not a plain column name")
        return v


class TransformSpec(_Strict):
    """The recompute logic: a Python function or a parameterised SQL file."""

    function: str | None = None
    """`package.module:function`, called as `function(spark, partitions) -> DataFrame`."""
    sql: Path | None = None
    """A SQL file using the named parameter `:partition`; it is run once per partition with
    the value bound by Spark (never formatted into the text) and the results are unioned."""
    python_path: list[Path] = Field(default_factory=list)
    """Folders added to `sys.path` before importing `function` (relative to the config file)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> TransformSpec:
        if (self.function is None) == (self.sql is None):
            raise ValueError("give exactly one of 'function' (module:function) or 'sql' (a file)")
        if self.function is not None and not re.match(r"^[\w.]+:[\w.]+$", self.function):
            raise ValueError(f"function {self.function!r} must look like 'package.module:function'")
        return self


class SparkSpec(_Strict):
    """Where Spark runs. The embedded default is local Spark with a warehouse beside the config."""

    master: str = "local[*]"
    """Any Spark master URL: `local[...]`, `local-cluster[...]`, `spark://...`, `yarn`, `k8s://...`."""
    remote: str | None = None
    """A Spark Connect URL (`sc://host:port`), or `sail` to start an embedded Sail server on loopback."""
    warehouse: Path | None = None
    """The local warehouse folder of the embedded catalogs and the default state store (default:
    `warehouse` beside the config). Tables on object storage live in your own catalog
    (`conf`), not here."""
    catalog: str = "local"
    """Iceberg catalog name (a Hadoop catalog in the warehouse unless conf says otherwise)."""
    jars_dir: Path | None = None
    """A folder of jars (the Iceberg or Delta runtime, and for s3a `hadoop-aws` and its AWS SDK
    bundle) used instead of the ones fetched from Maven Central."""
    conf: dict[str, str] = Field(default_factory=dict)
    """Spark settings, passed to the session as they are (catalogs, extensions, shuffle partitions)."""

    @field_validator("warehouse", mode="before")
    @classmethod
    def _local_warehouse(cls, v: object) -> object:
        """A URI would be taken for a relative folder named `s3a:`: refused, naming the way."""
        if isinstance(v, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", v):
            raise ValueError(
                f"{v!r} is not a local folder: spark.warehouse holds the embedded catalogs and the state "
                "store; put tables on object storage through your catalog's settings in spark.conf"
            )
        return v


class RunSpec(_Strict):
    """Defaults for `shadow-backfill run`; command-line options override them."""

    max_parallel: PositiveInt = 2
    """At most this many chunks in flight at once."""
    retries: int = Field(default=2, ge=0)
    """Retries of a chunk that raised (with exponential backoff); broken output rules are not retried."""
    retry_backoff_s: float = Field(default=1.0, ge=0)
    """The first retry's wait, doubled at each retry."""
    chunk_size: PositiveInt | Literal["auto"] = "auto"
    """Partitions per Spark job: an integer, or `auto`, sized from the live table's metadata
    (`chunking.choose_chunk_size`)."""
    max_chunk_size: PositiveInt = 100
    """Most partitions in one auto-sized chunk (what a crash makes us redo)."""
    target_rows_per_chunk: PositiveInt = 5_000_000
    """Most rows in one auto-sized chunk, when the live table's metadata gives partition sizes."""
    lease_ttl_s: float = Field(default=300.0, gt=0)
    """Leases on partitions being recomputed: renewed while the run lives, expire after this long
    if the holder vanishes (at once if it is a dead process on this host)."""


class Threshold(_Strict):
    """A metric passes below `warn`, warns from `warn`, fails from `fail` (None: never)."""

    warn: float | None = None
    """From this value on the metric warns (None: never)."""
    fail: float | None = None
    """From this value on the metric fails (None: never)."""

    @model_validator(mode="after")
    def _ordered(self) -> Threshold:
        if self.warn is not None and self.fail is not None and self.warn > self.fail:
            raise ValueError(f"warn ({self.warn}) must not exceed fail ({self.fail})")
        return self


def _t(warn: float | None, fail: float | None) -> Any:
    return Field(default_factory=lambda: Threshold(warn=warn, fail=fail))


class PValue(_Strict):
    """A significance level: a test warns below `warn` and fails below `fail` (None: never)."""

    warn: float | None = Field(default=None, ge=0, le=1)
    """Below this p-value the test warns (None: never)."""
    fail: float | None = Field(default=None, ge=0, le=1)
    """Below this p-value the test fails (None: never)."""

    @model_validator(mode="after")
    def _ordered(self) -> PValue:
        if self.warn is not None and self.fail is not None and self.fail > self.warn:
            raise ValueError(f"fail ({self.fail}) must not exceed warn ({self.warn}): a p-value fails below it")
        return self


class Tolerance(_Strict):
    """When two numbers count as equal: |shadow - live| <= abs + rel * |live| (as datacompy)."""

    abs: float = Field(default=1e-12, ge=0)
    """The absolute part of the tolerance."""
    rel: float = Field(default=1e-9, ge=0)
    """The part relative to |live|."""


Policy = Literal["pass", "warn", "fail"]


class ColumnBounds(_Strict):
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


class ExpectedChange(ColumnBounds):
    """A column the logic change is meant to alter: judged only by the bounds given here."""

    null_rate: Threshold | None = None
    """Added columns only (`expected_schema_changes.added`): the share of null rows in shadow,
    which has no live side to compare with."""


class DownstreamQuery(_Strict):
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


class SchemaChanges(_Strict):
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


CHANGE_METRICS = (
    "mean_change",
    "mean_change_pct",
    "sum_change_pct",
    "changed_share",
    "max_abs_diff",
    "mean_abs_diff",
)
DISTANCES = ("psi", "ks", "mean_shift", "std_change", "js_distance")


class ValidationSpec(_Strict):
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
            given = sorted(bounds.model_fields_set - {"null_rate"})
            if c in added and given:
                raise ValueError(
                    f"expected_changes.{c}: an added column has no live values to compare with; "
                    f"only null_rate applies (not {given})"
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


class PromoteSpec(_Strict):
    """How passing partitions reach live."""

    allow_warn: bool = False
    """Promote partitions whose verdict is warn too (default: only pass)."""
    retention_days: float = Field(default=7.0, ge=0)
    """Replaced partition data stays this long as the rollback target (formats that keep it
    themselves, Parquet); `shadow-backfill gc` deletes what is older."""
    canary: PositiveInt | None = None
    """Promote this many of the earliest passing partitions first, check them on live (row
    counts and `validation.downstream_queries`), then the rest; a failed check rolls the canary
    back. `promote --canary N` overrides it."""


class StateSpec(_Strict):
    """Where the tool keeps what it did: runs, partitions, verdicts, promotions."""

    url: str | None = None
    """SQLAlchemy URL (`sqlite` or `postgresql`); default: a SQLite file in the warehouse."""


class BackfillConfig(_Strict):
    """The whole config file."""

    live_table: str
    """The live table: Iceberg `catalog.db.table`; Delta and Parquet a path (relative to the
    config's folder) or a table name `db.table`."""
    shadow_table: str | None = None
    """The shadow table; default: the live table's name with `_<version>` appended."""
    version: str = "v2"
    """The shadow's version name (letters, digits and `_`): `features` becomes `features_v2`."""
    format: str
    """The table format: `iceberg`, `delta` or `parquet`."""
    partition: PartitionSpec
    """How partitions are named, typed and enumerated."""
    keys: list[str] = Field(default_factory=list)
    """Key columns: the key-level diff, duplicates and the change contract need them."""
    transform: TransformSpec
    """The recompute logic."""
    spark: SparkSpec = Field(default_factory=SparkSpec)
    """Where Spark runs."""
    run: RunSpec = Field(default_factory=RunSpec)
    """Defaults for recomputing."""
    state: StateSpec = Field(default_factory=StateSpec)
    """The state store."""
    expectations: list[str] = Field(default_factory=list)
    """Great Expectations 1.x suites (JSON files, relative to the config), checked before any work."""
    validation: ValidationSpec = Field(default_factory=ValidationSpec)
    """The validation gate's thresholds and policies."""
    promote: PromoteSpec = Field(default_factory=PromoteSpec)
    """Promotion settings."""
    time_zone: str = "UTC"
    """The zone the partitions' periods are named in (an IANA name, e.g. `Europe/Berlin`): the day
    2024-03-10 ends at midnight there. `--last N --lag D` windows are counted in it. A timestamp
    partition column's periods are UTC whatever this says."""

    # Set by load_config: the folder relative paths are resolved against, and the file's hash.
    base_dir: Path = Field(default=Path("."), exclude=True)
    config_hash: str = Field(default="", exclude=True)

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str) -> str:
        spec(v)  # raises with the list of formats
        return v

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v!r} is not a known time zone (an IANA name, e.g. Europe/Berlin)") from None
        return v

    @field_validator("version")
    @classmethod
    def _version_name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_]+$", v):
            raise ValueError(f"{v!r} may only hold letters, digits and '_'")
        return v

    @field_validator("keys")
    @classmethod
    def _key_names(cls, v: list[str]) -> list[str]:
        for k in v:
            if not _COLUMN.match(k):
                raise ValueError(f"{k!r} is not a plain column name")
        return v

    @model_validator(mode="after")
    def _tables(self) -> BackfillConfig:
        if self.format in FORMATS:
            for name in (self.live_table, self.shadow_table):
                if name is not None and (problem := FORMATS[self.format].table_name_error(name)):
                    raise ValueError(problem)
        if self.shadow_table is not None and self.shadow_table == self.live_table:
            raise ValueError("shadow_table must differ from live_table")
        if self.validation.contract and not self.keys:
            raise ValueError("validation.expected_changes needs keys: equality is judged per matched key")
        schema_changes = self.validation.expected_schema_changes
        declared = [*schema_changes.added, *schema_changes.removed, *schema_changes.retyped]
        # Column names are matched as Spark matches them by default: `DS` is the column `ds`.
        reserved = {c.lower() for c in (self.partition.column, *self.keys)}
        if taken := sorted({c for c in declared if c.lower() in reserved}):
            raise ValueError(f"validation.expected_schema_changes: {taken} is the partition column or a key")
        if taken := sorted({c for c in self.validation.expected_changes if c.lower() in reserved}):
            raise ValueError(f"validation.expected_changes: {taken} is the partition column or a key")
        return self

    # ---- derived values -------------------------------------------------------------------

    @property
    def shadow(self) -> str:
        """The shadow table: explicit, or the live name with the version appended (features_v2)."""
        if self.shadow_table:
            return self.shadow_table
        return f"{self.live_table.rstrip('/')}_{self.version}"

    @property
    def warehouse(self) -> Path:
        return self.resolve(self.spark.warehouse or Path("warehouse"))

    @property
    def state_url(self) -> str:
        if self.state.url:
            return self.state.url
        return f"sqlite:///{self.warehouse / 'shadow_backfill_state.db'}"

    def resolve(self, p: Path | str) -> Path:
        p = Path(p)
        return p if p.is_absolute() else (self.base_dir / p).resolve()


def _field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc) or "(top level)"


def parse_config(data: Any, *, source: str = "config", base_dir: Path | None = None) -> BackfillConfig:
    """Validate an already-parsed mapping; every error names the offending field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a YAML mapping, got {type(data).__name__}")
    folder = (base_dir or Path.cwd()).resolve()
    try:
        # the folder reaches the validators that read files the config names (downstream queries)
        cfg = BackfillConfig.model_validate(data, context={"base_dir": folder})
    except ValidationError as exc:
        raise ConfigError(first_error(exc, source)) from None
    cfg.base_dir = folder
    return cfg


class _DuplicateKeyError(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first_line: int) -> None:
        super().__init__(f"duplicate key {key!r} on line {line} (first given on line {first_line})")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a config where `live_table` appears twice is a
    mistake whose outcome nobody chose, so it is refused instead of silently resolved."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` entries may be overridden by explicit keys by design
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKeyError(key, line, seen[key])
                seen[key] = line
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it itself
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


class _TooDeepError(yaml.YAMLError):
    def __init__(self, line: int | None) -> None:
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"nested more than {MAX_CONFIG_DEPTH} levels deep{where}; a config is a few levels deep")


class _BoundedLoader(_UniqueKeyLoader):
    """Refuses nesting beyond MAX_CONFIG_DEPTH while composing: PyYAML composes nested nodes by
    recursion, and a file nested some thousand levels would end in a RecursionError."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        nested = self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_CONFIG_DEPTH:
                raise _TooDeepError(self.peek_event().start_mark.line + 1)
        try:
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            if nested:
                self._depth -= 1


def nested_deeper_than(data: Any, limit: int) -> bool:
    """True when mappings and lists nest more than `limit` levels (a cycle nests without end).
    Aliases can build a deeper structure than the text shows, so the data is measured too;
    without recursion, and a shared object is walked again only when reached deeper."""
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)) or seen.get(id(item), 0) >= depth:
            continue
        if depth > limit:
            return True
        seen[id(item)] = depth
        stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's messages span several lines; the CLI promises one."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def read_text_file(path: Path, what: str, max_bytes: int | None = None) -> str:
    """The one place that turns 'not a readable text file' into a ConfigError naming the path;
    a file over `max_bytes` is refused before it is read whole. Line ends are read as Python's
    text mode reads them (CRLF and CR as LF)."""
    if path.is_dir():
        raise ConfigError(f"{what} {str(path)!r} is a directory, not a file")
    if not path.is_file():
        raise ConfigError(f"{what} {str(path)!r} does not exist")
    try:
        with path.open("rb") as f:
            raw = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise ConfigError(
            f"{what} {str(path)!r} is larger than {max_bytes / 2**20:g} MiB, the limit for a {what}: "
            "is it the right file?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_yaml(p: Path, what: str) -> tuple[Any, str]:
    """A YAML file's data and text, as configs are read: bounded in size and nesting, no
    duplicate keys, no arbitrary objects; every problem a ConfigError naming the file."""
    text = read_text_file(p, what, MAX_CONFIG_BYTES)
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: no arbitrary objects
    except (_DuplicateKeyError, _TooDeepError) as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:  # aliases nesting without end, built before they could be measured
        raise ConfigError(f"{p}: nested more than {MAX_CONFIG_DEPTH} levels deep (through aliases)") from None
    if nested_deeper_than(data, MAX_CONFIG_DEPTH):
        raise ConfigError(f"{p}: nested more than {MAX_CONFIG_DEPTH} levels deep (through aliases)")
    return data, text


def first_error(exc: ValidationError, source: str) -> str:
    """Pydantic's first error as one line naming the field (and how many more there are)."""
    first = exc.errors()[0]
    field = _field_path(tuple(first["loc"]))
    msg = first["msg"].removeprefix("Value error, ")  # our validators say what is wrong themselves
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{source}: field '{field}': {msg}{more}"


def load_config(path: str | Path) -> BackfillConfig:
    """Read and validate a YAML config; relative paths in it are relative to the file. Its size
    and nesting are bounded (MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH): a usage error naming the file."""
    p = Path(path)
    data, text = read_yaml(p, "config file")
    cfg = parse_config(data, source=str(p), base_dir=p.parent)
    keep_secret(*secret_settings(cfg.spark.conf))
    cfg.config_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
    return cfg


# The last part of a Spark setting's name that says its value is a secret: `fs.s3a.secret.key`,
# `spark.ssl.keyPassword`, a catalog's `token` or `credential`.
_SECRET_SETTING = re.compile(r"secret|password|passwd|pwd|token|credential|^key$", re.IGNORECASE)
# A secret whose setting name ends with something else: ADLS's account key is
# `fs.azure.account.key.<account>.dfs.core.windows.net`.
_SECRET_INSIDE = re.compile(r"\.account\.key\.", re.IGNORECASE)


def secret_settings(conf: dict[str, str]) -> list[str]:
    """Values of Spark settings that hold secrets, to be masked wherever an engine's message or
    a traceback would quote them. Flags and numbers (`spark.authenticate.secret.file`'s
    neighbours, `...token.enabled: true`) are not secrets, and masking "true" would shred every
    message."""
    return [
        v
        for k, v in conf.items()
        if (_SECRET_SETTING.search(k.rsplit(".", 1)[-1]) or _SECRET_INSIDE.search(k))
        and v.lower() not in ("true", "false")
        and not v.isdigit()
    ]
