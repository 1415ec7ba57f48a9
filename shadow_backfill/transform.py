"""Loading the user's transform once per run and fingerprinting its code.

The transform is loaded at the start of a run and that same object is used for every
partition, so the code is pinned for the whole run even if the file changes underneath. The
fingerprint (a hash of the module's source or the SQL text) is stored with every written
partition; a shadow version mixing two fingerprints is refused unless the user allows it.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import ConfigError, TransformError
from shadow_backfill.partitions import PartitionScheme, PartitionValue
from shadow_backfill.schema import diff_schemas
from shadow_backfill.sql_guard import check_sql_transform

TransformFn = Callable[[SparkSession, list[PartitionValue]], DataFrame]
# A pipeline's upstream layers as this run wrote them: layer key -> its shadow rows. Called
# when a chunk starts, so a layer reads what its upstream holds by then.
Inputs = Callable[[], dict[str, DataFrame]]


@dataclass(frozen=True)
class Transform:
    """A loaded transform: call it with typed partition values, get one DataFrame back."""

    name: str
    fingerprint: str
    _fn: Callable[[SparkSession, Sequence[str]], DataFrame]

    def __call__(self, spark: SparkSession, keys: Sequence[str]) -> DataFrame:
        try:
            df = self._fn(spark, keys)
        except TransformError:
            raise
        except SystemExit as exc:
            # The transform runs in our process: its sys.exit() must not end the run (with exit 0,
            # a CI gate would pass with nothing written). It is a deliberate stop, so no retry.
            raise TransformError(f"transform {self.name} called sys.exit({exc.code!r})") from None
        except Exception as exc:
            raise TransformError(f"transform {self.name} raised {type(exc).__name__}: {exc}", retryable=True) from exc
        if not isinstance(df, DataFrame) and not _is_connect_dataframe(df):
            raise TransformError(f"transform {self.name} returned {type(df).__name__}, not a Spark DataFrame")
        return df


def _is_connect_dataframe(obj: Any) -> bool:
    return type(obj).__module__.startswith("pyspark.sql.connect")


def load_transform(config: BackfillConfig, scheme: PartitionScheme, inputs: Inputs | None = None) -> Transform:
    """The config's transform; `inputs`: a pipeline's upstream layers (see `Inputs`)."""
    spec = config.transform
    if spec.function is not None:
        return _load_function(config, scheme, spec.function, inputs)
    assert spec.sql is not None
    return _load_sql(config, scheme, inputs)


def _takes_inputs(fn: Any, target: str, inputs: Inputs | None) -> bool:
    """Whether to pass `inputs` as the third argument: the function has a third parameter (by
    position or named `inputs`). One without a default needs a pipeline to run it."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 3:
        return False
    if inputs is None and positional[2].default is inspect.Parameter.empty:
        raise ConfigError(
            f"transform.function: {target!r} takes a third parameter ({positional[2].name}), the upstream "
            "layers a pipeline gives it: run it with `shadow-backfill pipeline`"
        )
    return inputs is not None


def _load_function(config: BackfillConfig, scheme: PartitionScheme, target: str, inputs: Inputs | None) -> Transform:
    for p in reversed(config.transform.python_path):
        path = str(config.resolve(p))
        if path not in sys.path:
            sys.path.insert(0, path)
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        raise ConfigError(
            f"transform.function: importing module {module_name!r} called sys.exit({exc.code!r})"
        ) from None
    except Exception as exc:
        raise ConfigError(f"transform.function: cannot import module {module_name!r}: {exc}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ConfigError(f"transform.function: module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise ConfigError(f"transform.function: {target!r} is not callable")
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        source = repr(fn)
    fingerprint = hashlib.sha256(f"{target}\n{source}".encode()).hexdigest()[:16]
    upstream = inputs if _takes_inputs(fn, target, inputs) else None

    def call(spark: SparkSession, keys: Sequence[str]) -> DataFrame:
        values = [scheme.value(k) for k in keys]
        if upstream is not None:
            return fn(spark, values, upstream())  # type: ignore[no-any-return]
        return fn(spark, values)  # type: ignore[no-any-return]

    return Transform(target, fingerprint, call)


def _load_sql(config: BackfillConfig, scheme: PartitionScheme, inputs: Inputs | None) -> Transform:
    assert config.transform.sql is not None
    path = config.resolve(config.transform.sql)
    if not path.is_file():
        raise ConfigError(f"transform.sql: file {str(path)!r} does not exist")
    text = path.read_text()
    if ":partition" not in text:
        raise ConfigError(f"transform.sql: {path.name} must use the named parameter :partition")
    check_sql_transform(text, path.name)  # the text that runs, as the pre-flight read it
    fingerprint = hashlib.sha256(f"sql\n{text}".encode()).hexdigest()[:16]

    def call(spark: SparkSession, keys: Sequence[str]) -> DataFrame:
        # One parameter-bound query per partition, unioned: Spark binds the typed value, the
        # text is never formatted. The union still runs as one Spark job per chunk.
        _bind_after_parsing(spark)
        # Each upstream layer as a view named by its key (a pipeline runs one such chunk at a
        # time: see `Pipeline._views_lock`).
        for name, frame in (inputs() if inputs is not None else {}).items():
            frame.createOrReplaceTempView(name)
        frames = [spark.sql(text, args={"partition": scheme.value(k)}) for k in keys]
        return reduce(lambda a, b: a.unionByName(b), frames)

    return Transform(str(path.name), fingerprint, call)


def _bind_after_parsing(spark: SparkSession) -> None:
    """Spark 4.1 binds parameters inside its parser, and the parsers that Iceberg and Delta inject
    drop them (apache/iceberg#16625, delta-io/delta#7640): every `:partition` would be unbound.
    The 4.0 behaviour, binding after parsing, is still a setting on 4.1."""
    if spark.version.startswith("4.1."):
        spark.conf.set("spark.sql.legacy.parameterSubstitution.constantsOnly", "true")


def align_to_schema(df: DataFrame, schema: StructType, what: str) -> DataFrame:
    """Select the target's columns in its order; refuse missing, extra or retyped columns."""
    diff = diff_schemas(df.schema, schema)
    if not diff.same:
        raise TransformError(f"{what} does not match the shadow table's schema: " + "; ".join(diff.problems()))
    return df.select(*[F.col(f.name) for f in schema.fields])


def count_rows_by_partition(df: DataFrame, scheme: PartitionScheme, keys: Sequence[str], what: str) -> dict[str, int]:
    """Rows per requested partition, in one aggregate job; refuse any row outside `keys`.

    Only the grouped counts reach the driver (at most len(keys) + 1 rows), never the data.
    """
    expected = {scheme.column_text(k): k for k in keys}
    # Grouped by the partition's own value and named as text after: no text made per row.
    grouped = df.groupBy(scheme.key_value().alias("k")).count().limit(len(keys) + 1)
    rows = grouped.select(F.col("k").cast("string").alias("k"), "count").collect()
    stray = [r["k"] for r in rows if r["k"] not in expected]
    if stray:
        found = []
        if None in stray:
            found.append("rows with a null partition value")
        if others := sorted(k for k in stray if k is not None):
            found.append(f"rows for {others[:5]}")
        detail = " and ".join(found)
        raise TransformError(
            f"{what} returned {detail} in column {scheme.column!r}, but was asked only for "
            f"{keys[0]}..{keys[-1]} ({len(keys)} partitions); nothing was written"
        )
    counts = {k: 0 for k in keys}
    for r in rows:
        counts[expected[r["k"]]] = int(r["count"])
    return counts
