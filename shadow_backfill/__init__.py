"""shadow_backfill: recompute partitions into a shadow table, validate them against live, and
promote only what passes.

The pipeline, module by module: config -> session -> recompute -> validate -> promote/rollback
-> report, with `formats/` holding one backend per table format and `state` the one store.
"""

from shadow_backfill.api import Backfill
from shadow_backfill.config import BackfillConfig, load_config
from shadow_backfill.errors import ConfigError, RefusedError, ShadowBackfillError, TransformError, UsageError
from shadow_backfill.recompute import RunOptions, RunResult

__all__ = [
    "Backfill",
    "BackfillConfig",
    "ConfigError",
    "RefusedError",
    "RunOptions",
    "RunResult",
    "ShadowBackfillError",
    "TransformError",
    "UsageError",
    "load_config",
]
__version__ = "0.1.0"
