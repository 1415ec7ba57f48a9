"""The backfill config: one YAML file, validated by pydantic before any Spark work starts.

Every mistake a user can make in the file is reported as one :class:`ConfigError` that names
the file and the field, so a typo never turns into a half-finished run. A package as sqlmesh's
`core/config/`: the whole file and its reading (`model`), the validation gate's section
(`validation`), the running sections (`sections`) and the hardened YAML reader every file goes
through (`yaml_file`). The partition scheme's section lives with the scheme
(`partitions.PartitionSpec`), the one section a lower layer (the formats) needs.
"""

from __future__ import annotations

from shadow_backfill.config.model import BackfillConfig, first_error, load_config, parse_config
from shadow_backfill.config.notify import NotifySpec
from shadow_backfill.config.sections import PromoteSpec, RunSpec, SparkSpec, StateSpec, TransformSpec
from shadow_backfill.config.validation import (
    ColumnBounds,
    ColumnThresholds,
    Consistency,
    DownstreamQuery,
    ExpectedChange,
    Policy,
    PValue,
    SchemaChanges,
    Threshold,
    Tolerance,
    ValidationSpec,
)
from shadow_backfill.config.yaml_file import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    nested_deeper_than,
    read_text_file,
    read_yaml,
)
from shadow_backfill.errors import secret_settings
from shadow_backfill.partitions import PartitionSpec

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "BackfillConfig",
    "ColumnBounds",
    "ColumnThresholds",
    "Consistency",
    "DownstreamQuery",
    "ExpectedChange",
    "NotifySpec",
    "PValue",
    "PartitionSpec",
    "Policy",
    "PromoteSpec",
    "RunSpec",
    "SchemaChanges",
    "SparkSpec",
    "StateSpec",
    "Threshold",
    "Tolerance",
    "TransformSpec",
    "ValidationSpec",
    "first_error",
    "load_config",
    "nested_deeper_than",
    "parse_config",
    "read_text_file",
    "read_yaml",
    "secret_settings",
]
