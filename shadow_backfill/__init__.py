"""shadow_backfill: recompute partitions into a shadow table, validate them against live, and
promote only what passes.

The pipeline, module by module: config -> session -> recompute -> validate -> promote/rollback
-> report, with `formats/` holding one backend per table format and `state` the one store.
"""

from typing import TYPE_CHECKING, Any

from shadow_backfill.config import BackfillConfig, load_config
from shadow_backfill.errors import ConfigError, RefusedError, ShadowBackfillError, TransformError, UsageError

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.pipeline.runner import Pipeline
    from shadow_backfill.recompute import RunOptions
    from shadow_backfill.results import RunResult

# What needs PySpark is imported on first use, so that `import shadow_backfill` (the config,
# the state store, the reports) works without it: the unit tier runs in a process that never
# imports PySpark.
_LAZY = {
    "Backfill": "shadow_backfill.api",
    "Pipeline": "shadow_backfill.pipeline.runner",
    "RunOptions": "shadow_backfill.recompute",
    "RunResult": "shadow_backfill.results",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shadow_backfill' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "Backfill",
    "BackfillConfig",
    "ConfigError",
    "Pipeline",
    "RefusedError",
    "RunOptions",
    "RunResult",
    "ShadowBackfillError",
    "TransformError",
    "UsageError",
    "load_config",
]
__version__ = "0.1.0"
