"""The whole config file (`BackfillConfig`) and how it is read: validated by pydantic before any
Spark work starts, every mistake one `ConfigError` naming the file and the field."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, ValidationError, field_validator, model_validator

from shadow_backfill.config.notify import NotifySpec
from shadow_backfill.config.sections import PromoteSpec, RunSpec, SparkSpec, StateSpec, TransformSpec
from shadow_backfill.config.validation import ValidationSpec
from shadow_backfill.config.yaml_file import read_yaml
from shadow_backfill.errors import ConfigError, keep_secret, secret_settings
from shadow_backfill.formats import FORMATS, spec
from shadow_backfill.partitions import PartitionSpec
from shadow_backfill.strict import COLUMN, Strict


class BackfillConfig(Strict):
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
    notify: list[NotifySpec] = Field(default_factory=list)
    """Webhooks told how each `run`, `validate`, `promote`, `rollback` and `backfill` ended
    (Slack, Teams or JSON): see the guide "Lineage and alerts"."""
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
            if not COLUMN.match(k):
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

    def promoting(self, **given: bool | int | None) -> BackfillConfig:
        """This config with the `promote` settings a command's options give (`--allow-warn`,
        `--canary`) in place of the file's; an option not given (None) keeps the file's."""
        chosen = {k: v for k, v in given.items() if v is not None}
        return self.model_copy(update={"promote": self.promote.model_copy(update=chosen)}) if chosen else self


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
