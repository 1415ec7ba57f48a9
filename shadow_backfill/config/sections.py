"""The config's sections about running: the transform, Spark, the recompute's defaults,
promotion and the state store."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from shadow_backfill.strict import Strict


class TransformSpec(Strict):
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


class SparkSpec(Strict):
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
    """Spark settings, passed to the session as they are (catalogs, extensions, shuffle partitions).
    They override the tool's defaults: `spark.sql.shuffle.partitions` 8, the UTC session time
    zone, and `spark.sql.codegen.hugeMethodLimit` 8000 (the largest method HotSpot compiles, which
    makes validating a table with eight or more changed numeric columns 22-27% faster; a program
    that passes its own session may want it too). Validation's grouping by key never uses fewer
    shuffle partitions than `spark.sql.shuffle.partitions`, and more where the rows it groups
    would not fit a task's memory (0.44 of a task's execution memory, from the driver's or the
    executors' memory and cores: 96 MB of grouped keys with a 1 GB driver on two cores)."""

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


class RunSpec(Strict):
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


class PromoteSpec(Strict):
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


class StateSpec(Strict):
    """Where the tool keeps what it did: runs, partitions, verdicts, promotions."""

    url: str | None = None
    """SQLAlchemy URL (`sqlite` or `postgresql`); default: a SQLite file in the warehouse."""
    metric_history_days: PositiveInt | None = 365
    """Days each validation's measurements of a partition are kept for `history --partition P
    --metrics` (null: kept for ever); the latest verdict of each partition is always kept."""
