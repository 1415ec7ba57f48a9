"""The pipeline file: which backfill configs are layers of one backfill, what each reads, and
the checks across layers. Each entry points to an ordinary backfill config, so a table's own
settings stay where they were; the file adds only the dependencies and the cross-layer rules.

    tables:
      raw:      {config: raw.yaml}
      staging:  {config: staging.yaml, depends_on: [raw]}
      features: {config: features.yaml, depends_on: [staging]}
    consistency:
      - {upstream: raw, downstream: staging, rows_ratio: {min: 0.98, max: 1.0}}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, ValidationError, model_validator

from shadow_backfill.config import BackfillConfig, first_error, load_config, read_yaml
from shadow_backfill.config.notify import NotifySpec
from shadow_backfill.config.validation import require_ordered
from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.locations import table_spelling
from shadow_backfill.pipeline.graph import layer_order
from shadow_backfill.pipeline.sql_layers import refuse_unsafe_sql_layers
from shadow_backfill.preflight import NAME_MAX
from shadow_backfill.strict import Strict

# A layer's key names the temporary view a SQL transform reads it by, so it is an identifier,
# and the folder of its report, so it fits a file name (NAME_MAX).
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TableEntry(Strict):
    """One layer of the pipeline."""

    config: str
    """The layer's backfill config (YAML), relative to the pipeline file."""
    depends_on: list[str] = Field(default_factory=list)
    """The layers this one reads: their shadows of this run reach its transform as `inputs`."""


class RowsRatio(Strict):
    """Downstream rows over upstream rows per partition, on the run's shadows (None: unbounded)."""

    min: float | None = Field(default=None, ge=0)
    max: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> RowsRatio:
        require_ordered(self.min, self.max, f"min {self.min} is above max {self.max}")
        return self


class Consistency(Strict):
    """A check between two layers, per partition: fails the partition in the pipeline."""

    upstream: str
    downstream: str
    rows_ratio: RowsRatio


class PipelineRunSpec(Strict):
    """How the layers' recomputes are chained."""

    gate: Literal["upstream_passed", "written"] = "upstream_passed"
    """A downstream partition is recomputed once its upstream partitions passed validation
    (`upstream_passed`), or once they are written (`written`)."""
    max_parallel: PositiveInt | None = None
    """Chunks in flight at once across the whole pipeline, of any layer (default: the first layer's
    `run.max_parallel`); the range is split into this many chunks."""


class PipelineSpec(Strict):
    """A pipeline file."""

    tables: dict[str, TableEntry]
    consistency: list[Consistency] = Field(default_factory=list)
    run: PipelineRunSpec = Field(default_factory=PipelineRunSpec)
    notify: list[NotifySpec] = Field(default_factory=list)
    """Webhooks told how each pipeline command ended (as a config's `notify`); the layers'
    own `notify` is not used by pipeline commands: one message per command."""

    @model_validator(mode="after")
    def _known(self) -> PipelineSpec:
        if not self.tables:
            raise ValueError("a pipeline lists at least one table")
        for key in self.tables:
            if not _KEY.match(key):
                raise ValueError(f"table key {key!r} must be an identifier (letters, digits, _)")
            if len(key) > NAME_MAX:  # it names the layer's report folder too
                raise ValueError(f"table key {key[:40]!r}... is {len(key)} characters long: at most {NAME_MAX}")
        for check in self.consistency:
            for side in (check.upstream, check.downstream):
                if side not in self.tables:
                    raise ValueError(f"consistency names table {side!r}, which the pipeline does not list")
        return self


@dataclass(frozen=True)
class PipelineFile:
    """A pipeline file read and checked, its layers' configs loaded, in dependency order."""

    path: Path
    spec: PipelineSpec
    order: list[str]
    configs: dict[str, BackfillConfig]

    @property
    def name(self) -> str:
        return self.path.stem

    def depends_on(self, key: str) -> list[str]:
        return list(self.spec.tables[key].depends_on)


def load_pipeline(path: str | Path) -> PipelineFile:
    """Read a pipeline file and every layer's config; refuse, before any work, a cycle, a table
    the pipeline does not list, two entries writing the same table, layers that cannot share
    one Spark session and one state store (different formats, Spark settings, partitioning or
    state stores), and a SQL layer that is no read-only SELECT or reads a layer it does not
    declare."""
    p = Path(path)
    data, _ = read_yaml(p, "pipeline file")
    spec = _parse(data, str(p))
    order = layer_order({k: t.depends_on for k, t in spec.tables.items()})
    configs = {key: load_config(p.parent / spec.tables[key].config) for key in order}
    _refuse_shared_tables(configs)
    _refuse_apart(configs)
    refuse_unsafe_sql_layers(configs, {key: spec.tables[key].depends_on for key in order})
    return PipelineFile(p.resolve(), spec, order, configs)


def _parse(data: Any, source: str) -> PipelineSpec:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the pipeline must be a YAML mapping, got {type(data).__name__}")
    try:
        return PipelineSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(first_error(exc, source)) from None


def _refuse_shared_tables(configs: dict[str, BackfillConfig]) -> None:
    written: dict[str, str] = {}
    for key, cfg in configs.items():
        for table in (cfg.live_table, cfg.shadow):
            same = table_spelling(table, str(cfg.base_dir))
            if same in written:
                raise ConfigError(f"pipeline: tables {written[same]!r} and {key!r} both write {table}")
            written[same] = key


def _refuse_apart(configs: dict[str, BackfillConfig]) -> None:
    """One Spark session and one state store serve the whole pipeline: a pipeline promotion and
    its members are one record, and a layer reads its upstream's shadow through the session."""
    first_key, first = next(iter(configs.items()))
    for key, cfg in configs.items():
        for what, mine, theirs in (
            ("format", cfg.format, first.format),
            ("spark settings", cfg.spark.model_dump(), first.spark.model_dump()),
            ("state store", cfg.state_url, first.state_url),
            ("partition granularity", cfg.partition.granularity, first.partition.granularity),
            ("time zone", cfg.time_zone, first.time_zone),
        ):
            if mine != theirs:
                raise ConfigError(
                    f"pipeline: table {key!r} has another {what} than {first_key!r}; "
                    "the layers of a pipeline share one Spark session, state store, partitioning and time zone"
                )
