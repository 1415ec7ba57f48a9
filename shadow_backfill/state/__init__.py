"""The state store: what happened to every partition, in one SQL database.

SQLite beside the warehouse by default; any SQLAlchemy URL (PostgreSQL) for a shared store.
Each part of the store lives in its own module (runs and partitions, verdicts, the audit trail,
leases); `StateStore` composes them, and the names below are what the rest of the tool uses.
"""

from shadow_backfill.state.audit import PROMOTE, ROLLBACK, Approval, PromotionRecord
from shadow_backfill.state.db import current_user, utcnow
from shadow_backfill.state.leases import describe_owner, lock_owner, new_id
from shadow_backfill.state.partitions import PartitionRecord
from shadow_backfill.state.pipelines import PipelineRecord
from shadow_backfill.state.schema import metadata
from shadow_backfill.state.store import SUPPORTED_DIALECTS, StateStore, parse_state_url, reading
from shadow_backfill.state.verdicts import VerdictRecord

__all__ = [
    "PROMOTE",
    "ROLLBACK",
    "SUPPORTED_DIALECTS",
    "Approval",
    "PartitionRecord",
    "PipelineRecord",
    "PromotionRecord",
    "StateStore",
    "VerdictRecord",
    "current_user",
    "describe_owner",
    "lock_owner",
    "metadata",
    "new_id",
    "parse_state_url",
    "reading",
    "utcnow",
]
